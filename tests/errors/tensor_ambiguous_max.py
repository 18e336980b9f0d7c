import numpy as np
import appy


@appy.jit
def f(A, M, N):
    m = max(A[:M, :N])
    return m
# SIGNATURE: f64[:,:];int;int
