import numpy as np
import appy


@appy.jit
def f(A, B, M, N):
    #pragma :M=>parallel :K=>simd
    B[:M, :N] = A[:M, :N] * 2.0
# SIGNATURE: f64[:,:];f64[:,:];int;int
