import numpy as np
import appy


@appy.jit
def f(a, N):
    #pragma :N=>parallel
    for i in range(N):
        a[i] = 0.0
# SIGNATURE: f64[:];int
