import numpy as np
import appy


@appy.jit
def count(z, w):
    n = 0
    for i in range(z.shape[0]):
        if z[i] < w[i]:
            n += 1
    return n
# SIGNATURE: complex128[:]; complex128[:]
