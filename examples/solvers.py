"""Triangular solves and Cholesky factorisations written as loops. On the GPU, appy
recognises them (`appy-solve-library`) and calls cuBLAS trsv / cuSOLVER potrf; on the
CPU they run as the loops they are."""
import numpy as np
import appy


@appy.jit
def trisolv(L, x, b):
    # NPBench trisolv: forward substitution, one row after the other.
    N = x.shape[0]
    #pragma sequential for
    for i in range(N):
        x[i] = (b[i] - np.sum(L[i, :i] * x[:i])) / L[i, i]


@appy.jit
def trisolv_inplace(L, x, n):
    # In place (the right-hand side is x itself), on the first n rows only.
    for i in range(n):
        x[i] = (x[i] - L[i, :i] @ x[:i]) / L[i, i]


@appy.jit
def cholesky(A):
    # Column by column: the rows below the diagonal of one column are independent.
    N = A.shape[0]
    for j in range(N):
        A[j, j] = np.sqrt(A[j, j] - np.sum(A[j, :j] * A[j, :j]))
        #pragma parallel for
        for i in range(j + 1, N):
            A[i, j] = (A[i, j] - np.sum(A[i, :j] * A[j, :j])) / A[j, j]


@appy.jit
def cholesky_block(A, n):
    # The leading n x n block of a larger matrix.
    for j in range(n):
        A[j, j] = np.sqrt(A[j, j] - A[j, :j] @ A[j, :j])
        for i in range(j + 1, n):
            A[i, j] = (A[i, j] - A[i, :j] @ A[j, :j]) / A[j, j]


@appy.jit
def cholesky_rows(A):
    # NPBench's (PolyBench's) row-by-row form: the same factorisation.
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])
