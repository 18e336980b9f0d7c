"""Matrix products in tensor statements: cuBLAS on the GPU, a fused loop nest on the
CPU."""
import numpy as np
import appy


@appy.jit
def gemm(alpha, beta, C, A, B, M, N, K):
    # NPBench gemm.
    C[:M, :N] = alpha * A[:M, :K] @ B[:K, :N] + beta * C[:M, :N]


@appy.jit
def at_b(A, B, C, M, N, K):
    # A stored transposed (K x M), accumulated into C.
    C[:M, :N] += np.transpose(A[:K, :M]) @ B[:K, :N]


@appy.jit
def sub_block(A, B, C, M, N):
    # Products of sub-matrices (offsets into the arrays).
    C[1:M, 1:N] = np.dot(A[1:M, :N - 1], B[:N - 1, 1:N])


@appy.jit
def vec_mat(A, x, y, M, N):
    # A vector-matrix product accumulated into y (cuBLAS gemv on the GPU).
    y[:N] += 2.0 * x[:M] @ A[:M, :N]
