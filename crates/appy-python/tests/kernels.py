"""Kernels the package tests call (a module of their own, as users write them)."""
import numpy as np
import appy
from appy import exp, prange, sqrt


@appy.jit
def axpy(alpha, x, y, N):
    """y += alpha * x"""
    #pragma parallel for simd
    for i in range(N):
        y[i] += alpha * x[i]


@appy.jit
def add3(a, b, c, s, t):
    #pragma parallel for simd
    for i in range(a.shape[0]):
        c[i] = s * a[i] + t * b[i]


@appy.jit
def double_into(out, inp):
    #pragma parallel for simd
    for i in range(out.shape[0]):
        out[i] = 2.0 * inp[i]


@appy.jit
def scale_rows(A, v):
    #pragma parallel for
    for i in range(A.shape[0]):
        #pragma simd
        for j in range(A.shape[1]):
            A[i, j] = A[i, j] * v[i]


@appy.jit
def total(a):
    s = 0.0
    #pragma parallel for simd shared(s)
    for i in range(a.shape[0]):
        s += a[i]
    return s


@appy.jit
def psum(a, N):
    s = 0.0
    for i in prange(N):
        s += a[i]
    return s


@appy.jit
def increment_by_1(a):
    #pragma parallel for simd
    for i in range(a.shape[0]):
        a[i] += 1


@appy.jit
def new_exp(a):
    out = np.empty_like(a)
    #pragma parallel for simd
    for i in range(a.shape[0]):
        out[i] = exp(a[i]) + sqrt(abs(a[i]))
    return out


@appy.jit
def same(a):
    #pragma parallel for simd
    for i in range(a.shape[0]):
        a[i] = a[i] * 2.0
    return a


@appy.jit
def pair(a, b):
    s = 0.0
    #pragma parallel for simd shared(s)
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s, a


@appy.jit
def blend(A, B, C, N):
    #pragma parallel for
    for i in range(0, N, appy.MVL):
        vi = appy.vidx(i, appy.MVL, N)
        C[vi] = appy.where(A[vi] > 0.0, A[vi], 0.5 * B[vi])


@appy.jit
def histogram(idx, h):
    #pragma parallel for
    for i in range(idx.shape[0]):
        appy.atomic_add(h, idx[i], 1.0)


@appy.jit(auto_simd=True)
def gesummv(alpha, beta, A, B, x, y, M, N):
    #pragma :M=>parallel :N=>reduction(sum:y)
    y[:M] = appy.mv(alpha * A[:M, :N], x[:N]) + appy.mv(beta * B[:M, :N], x[:N])


@appy.jit(device="cpu")
def busy(a, n):
    """A long sequential loop (for the GIL test)."""
    s = 0.0
    for k in range(n):
        s = s + a[k % a.shape[0]] * 1e-9
    return s


@appy.jit
def broken(a):
    #pragma parallel for
    for i in range(a.shape[0]):
        a[i] = undefined_name + 1  # ERROR-HERE


@appy.jit
def matmul_update(C, A, B, alpha):
    C[:, :] = alpha * A @ B + C


@appy.jit
def matvec_t(A, x, y):
    y[:] = x @ A
