"""Pairs of spellings that must compile to the same kernels (checked by
tests/tests/suite/same_kernel.rs): NumPy's whole arrays and open slices against sliced
index notation with explicit extents."""
import numpy as np
import appy


@appy.jit
def scale_whole(A, B, alpha):
    B[:, :] = alpha * A


@appy.jit
def scale_explicit(A, B, alpha, M, N):
    B[:M, :N] = alpha * A[:M, :N]


@appy.jit
def update_whole(B, alpha):
    B *= alpha


@appy.jit
def update_explicit(B, alpha, M, N):
    B[:M, :N] = B[:M, :N] * alpha


@appy.jit
def stencil_open(A, B):
    B[1:-1, 1:-1] = 0.25 * (A[:-2, 1:-1] + A[2:, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:])


@appy.jit
def stencil_explicit(A, B, M, N):
    B[1:M-1, 1:N-1] = 0.25 * (A[:M-2, 1:N-1] + A[2:M, 1:N-1] + A[1:M-1, :N-2] + A[1:M-1, 2:N])


@appy.jit
def rows_open(A, x, y):
    #pragma parallel for
    for i in range(A.shape[0]):
        y[i] = np.sum(A[i, :] * x)


@appy.jit
def rows_explicit(A, x, y, M, N):
    #pragma parallel for
    for i in range(M):
        y[i] = np.sum(A[i, :N] * x[:N])
