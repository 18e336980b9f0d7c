import numpy as np
import appy


@appy.jit
def cube_root(z):
    for i in range(z.shape[0]):
        z[i] = z[i] ** 0.5
# SIGNATURE: complex128[:]
