import numpy as np
import appy


@appy.jit
def total(a):
    s = np.float16(0)
    #pragma parallel for shared(s)
    for i in range(a.shape[0]):
        s += a[i]
    return s
# SIGNATURE: f16[:]
