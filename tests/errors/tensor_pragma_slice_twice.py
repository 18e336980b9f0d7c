import numpy as np
import appy


@appy.jit
def f(A, B, M, N):
    #pragma :M=>parallel :M=>simd
    B[:M, :N] = A[:M, :N]
# SIGNATURE: f64[:,:];f64[:,:];int;int
