import numpy as np
import appy


@appy.jit
def f(a, b, N):
    b[:N-1] = a[:-1]
# SIGNATURE: f64[:];f64[:];int
