"""Kernels for launches split between the GPUs of one host (`appy exec --devices N`):
a memory-bound stencil with a halo exchange every step, a stream, and a compute-bound
loop nest. Valid Python: `check.py` runs them with NumPy as the reference."""
import numpy as np
import appy


@appy.jit
def jacobi_2d(A, B, T):
    n, m = A.shape
    for t in range(T):
        #pragma parallel for
        for i in range(1, n - 1):
            B[i, 1:m - 1] = 0.2 * (A[i, 1:m - 1] + A[i, :m - 2] + A[i, 2:] + A[i + 1, 1:m - 1] + A[i - 1, 1:m - 1])
        #pragma parallel for
        for i in range(1, n - 1):
            A[i, 1:m - 1] = 0.2 * (B[i, 1:m - 1] + B[i, :m - 2] + B[i, 2:] + B[i + 1, 1:m - 1] + B[i - 1, 1:m - 1])


@appy.jit
def triad(a, b, c, s):
    #pragma parallel for simd
    for i in range(a.shape[0]):
        a[i] = b[i] + s * c[i]


@appy.jit
def matmul_loops(A, B, C):
    n, K = A.shape
    m = B.shape[1]
    #pragma parallel for
    for i in range(n):
        #pragma simd
        for j in range(m):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


@appy.jit
def dot_hist(a, b, h):
    s = 0.0
    #pragma parallel for simd shared(s)
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    #pragma parallel for
    for i in range(a.shape[0]):
        #pragma atomic
        h[i % 16] += a[i]
    return s
