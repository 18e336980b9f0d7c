import numpy as np
import appy


# SIGNATURE: f64[:];f64[:]
@appy.jit
def f(a, out):
    t = np.empty(a.shape[0] + 1)
    #pragma parallel for transform(privatize(t))
    for i in range(a.shape[0]):
        t[i + 1] = a[i]
        out[i] = t[i + 1]
