"""APPy's high-level interface (seed 000): `prange` loops with no pragmas; reductions
are detected and inner loops vectorized by the compiler."""
import numpy as np
import appy
from appy import prange


@appy.jit
def vsum(a, N):
    s = 0.0
    for i in prange(N):
        s += a[i]
    return s


@appy.jit
def masked_sum(a, N):
    s = 0.0
    for i in prange(N):
        if a[i] > 0.5:
            s += a[i]
    return s


@appy.jit
def go_fast(a, N):
    trace = 0.0
    for i in prange(N):
        trace += np.tanh(a[i, i])
    out = np.empty_like(a)
    for i in prange(N):
        for j in range(N):
            out[i, j] = a[i, j] + trace
    return out


@appy.jit
def azimint_like(data, radius, lo, hi, N):
    s = 0.0
    c = 0
    for i in prange(N):
        if radius[i] >= lo and radius[i] < hi:
            s += data[i]
            c += 1
    return s, c


@appy.jit
def add_one(a, N):
    for i in prange(N):
        a[i] += 1


@appy.jit
def col_sums(a, b, M, N):
    # a[j] += b[i, j] is a reduction for loop i (i is not in the store's indices).
    for i in prange(M):
        for j in range(N):
            a[j] += b[i, j]


@appy.jit
def row_sums(a, b, M, N):
    # a[i] += b[i, j] is a reduction for loop j, element-wise for loop i.
    for i in prange(M):
        for j in range(N):
            a[i] += b[i, j]
