import numpy as np
import appy


@appy.jit
def f(A, y, M, N):
    #pragma :M=>parallel :N=>simd
    y[:M] = A[:M, :N] + 1.0
# SIGNATURE: f64[:,:];f64[:];int;int
