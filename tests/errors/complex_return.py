import numpy as np
import appy


@appy.jit
def total(z):
    s = 0j
    for i in range(z.shape[0]):
        s += z[i]
    return s
# SIGNATURE: complex64[:]
