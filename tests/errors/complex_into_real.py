import numpy as np
import appy


@appy.jit
def rotate(z, out):
    #pragma parallel for
    for i in range(z.shape[0]):
        out[i] = z[i] * 1j
# SIGNATURE: complex128[:]; float64[:]
