"""Kernels for checked mode and integer division on the GPU (scripts/gpu_checked.py)."""
import numpy as np
import appy


@appy.jit
def shift(a, b, n):
    #pragma parallel for simd
    for i in range(n):
        b[i] = a[i + 1]


@appy.jit
def write_past(a, b, n):
    #pragma parallel for
    for i in range(n):
        b[i + 3] = a[i]


@appy.jit
def prev(a, b, n):
    #pragma parallel for
    for i in range(n):
        b[i] = a[i - 1]


@appy.jit
def column(A, b, j):
    #pragma parallel for
    for i in range(A.shape[0]):
        b[i] = A[i, j]


@appy.jit
def divs(a, b, q, r):
    #pragma parallel for
    for i in range(a.shape[0]):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


@appy.jit
def make(n, m):
    a = np.empty((n, m))
    a[:, :] = 1.0
    return a
