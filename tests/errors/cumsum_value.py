import numpy as np
import appy


@appy.jit
def f(a):
    c = np.cumsum(a) * 2.0
    return c
# SIGNATURE: f64[:]
