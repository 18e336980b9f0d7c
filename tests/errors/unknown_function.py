import numpy as np
import appy


@appy.jit
def f(a, N):
    #pragma parallel for
    for i in range(N):
        a[i] = np.frobnicate(a[i])

# SIGNATURE: f64[:];int
