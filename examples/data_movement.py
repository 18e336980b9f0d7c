"""Kernels whose transfers the runtime keeps to what they access (seed 002 §5)."""
import numpy as np
import appy


@appy.jit
def scale_row(a, r, N):
    # Touches one row of `a`: only that row moves to the GPU and back.
    #pragma parallel for simd
    for j in range(N):
        a[r, j] = 2.0 * a[r, j]


@appy.jit
def two_regions(a, b, N):
    # `b` written by the first region is read by the second on the device: no
    # intermediate transfers.
    #pragma parallel for simd
    for i in range(N):
        b[i] = a[i] + 1.0
    #pragma parallel for simd
    for i in range(N):
        a[i] = b[i] * 2.0


@appy.jit
def interior(a, b, M, N):
    # A stencil over the interior reads rows 0..M and writes rows 1..M-1 of `b`.
    #pragma parallel for
    for i in range(1, M - 1):
        #pragma simd
        for j in range(1, N - 1):
            b[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])


@appy.jit
def big_temporary(a, N):
    # Allocates an N x N float64 temporary: with a huge N the device runs out of memory,
    # which must be a clean error.
    t = np.zeros((N, N))
    #pragma parallel for
    for i in range(N):
        a[i] = t[i, i] + 1.0
