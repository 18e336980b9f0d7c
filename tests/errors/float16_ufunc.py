import numpy as np
import appy


@appy.jit
def roots(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = np.sqrt(a[i])
# SIGNATURE: u8[:];f32[:]
