import numpy as np
import appy


# SIGNATURE: f64[:];f64[:]
@appy.jit
def f(a, out):
    t = np.zeros(a.shape[0])
    t[1:] = 5.0
    #pragma parallel for transform(privatize(t))
    for i in range(a.shape[0]):
        t[i] += a[i]
        out[i] = t[i]
