import numpy as np
import appy


@appy.jit
def roots(z, out):
    #pragma parallel for
    for i in range(z.shape[0]):
        out[i] = np.sqrt(z[i])
# SIGNATURE: complex128[:]; complex128[:]
