import numpy as np
import appy


@appy.jit
def f(A, y, M, N):
    #pragma :M=>parallel :N=>reduce(max:y)
    y[:M] = np.sum(A[:M, :N], axis=1)
# SIGNATURE: f64[:,:];f64[:];int;int
