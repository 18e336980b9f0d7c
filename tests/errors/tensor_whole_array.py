import numpy as np
import appy


@appy.jit
def f(a, b, N):
    b[:N] = a + 1.0
# SIGNATURE: f64[:];f64[:];int
