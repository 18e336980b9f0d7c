import numpy as np
import appy


@appy.jit
def softmax(a, b, M, N):
    #pragma parallel for
    for i in range(M):
        m = float('-inf')
        #pragma simd
        for j in range(N):
            m = np.maximum(m, a[i, j])

        s = 0.0
        #pragma simd
        for j in range(N):
            s += np.exp(a[i, j] - m)

        #pragma simd
        for j in range(N):
            b[i, j] = np.exp(a[i, j] - m) / s
