import numpy as np
import appy


def smooth(x):
    t = x * 2.0
    for k in range(3):
        t = t + np.frobnicate(t)
    return t


@appy.jit
def f(a):
    #pragma parallel for
    for i in range(a.shape[0]):
        a[i] = smooth(a[i])
# SIGNATURE: f64[:]
