import numpy as np
import appy


@appy.jit
def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z, N):
    #pragma parallel for
    for i in range(N):
        #pragma simd
        for j in range(N):
            A[i, j] = A[i, j] + u1[i] * v1[j] + u2[i] * v2[j]
    #pragma parallel for
    for i in range(N):
        t = 0.0
        #pragma simd
        for j in range(N):
            t += beta * A[j, i] * y[j]
        x[i] = x[i] + t + z[i]
    #pragma parallel for
    for i in range(N):
        t = 0.0
        #pragma simd
        for j in range(N):
            t += alpha * A[i, j] * x[j]
        w[i] = w[i] + t
