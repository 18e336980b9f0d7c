import numpy as np
import appy


@appy.jit
def row_sum(a, out, M, N):
    #pragma parallel for
    for i in range(M):
        s = 0.0
        #pragma simd
        for j in range(N):
            s += a[i, j]
        out[i] = s


@appy.jit
def row_max(a, out, M, N):
    #pragma parallel for
    for i in range(M):
        m = float('-inf')
        #pragma simd
        for j in range(N):
            m = max(m, a[i, j])
        out[i] = m


@appy.jit
def row_min(a, out, M, N):
    #pragma parallel for
    for i in range(M):
        m = float('inf')
        #pragma simd
        for j in range(N):
            m = min(m, a[i, j])
        out[i] = m
