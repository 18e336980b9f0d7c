import numpy as np
import appy


@appy.jit
def f(a, N):
    #pragma parallel for
    for i in range(N):
        a[i] = np.frobnicate(a[i])

# SIGNATURE: f64[:];int
# ERROR: unknown_function.py:9:16: error: unsupported function `numpy.frobnicate`
