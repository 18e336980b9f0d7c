import numpy as np
import appy


@appy.jit
def f(A, B, M, N, K):
    #pragma parallel for
    for i in range(M):
        B[i, :N, :K] = A[i, :N, :K] / np.sum(A[i, :N, :K], axis=1)[:, None]
# SIGNATURE: f64[:,:,:];f64[:,:,:];int;int;int
