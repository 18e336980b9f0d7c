import numpy as np
import appy


@appy.jit
def jacobi_1d(A, B, N, T):
    for t in range(T):
        #pragma parallel for simd
        for i in range(1, N - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        #pragma parallel for simd
        for i in range(1, N - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])


@appy.jit
def heat_2d(A, B, M, N, T):
    for t in range(T):
        #pragma parallel for
        for i in range(1, M - 1):
            #pragma parallel for
            for j in range(1, N - 1):
                B[i, j] = A[i, j] + 0.125 * (A[i + 1, j] - 2.0 * A[i, j] + A[i - 1, j]) + 0.125 * (A[i, j + 1] - 2.0 * A[i, j] + A[i, j - 1])
        #pragma parallel for
        for i in range(1, M - 1):
            #pragma parallel for
            for j in range(1, N - 1):
                A[i, j] = B[i, j] + 0.125 * (B[i + 1, j] - 2.0 * B[i, j] + B[i - 1, j]) + 0.125 * (B[i, j + 1] - 2.0 * B[i, j] + B[i, j - 1])
