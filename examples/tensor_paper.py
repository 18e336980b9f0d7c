"""The tensor-oriented examples of the APPy paper (seed 001 §4-§5), in sliced index
notation with tensor pragmas."""
import numpy as np
import appy
from appy import mv


@appy.jit(auto_simd=True)
def gesummv(alpha, beta, A, B, x, y, tmp, M, N):
    # Listing 7 (top).
    #pragma :M=>parallel :N=>reduction(sum:y)
    y[:M] = mv(alpha * A[:M, :N], x[:N])
    #pragma :M=>parallel :N=>reduction(sum:tmp)
    tmp[:M] = mv(beta * B[:M, :N], x[:N])
    #pragma :M=>parallel
    y[:M] += tmp[:M]


@appy.jit(auto_simd=True)
def jacobi_2d_one_iteration(A, B, M, N):
    # Listing 7 (bottom).
    #pragma 1:M-1=>parallel 1:N-1=>parallel
    B[1:M-1, 1:N-1] = 0.2 * (A[1:M-1, 1:N-1] + A[1:M-1, :N-2] +
        A[1:M-1, 2:N] + A[2:M, 1:N-1] + A[0:M-2, 1:N-1])
    #pragma 1:M-1=>parallel 1:N-1=>parallel
    A[1:M-1, 1:N-1] = 0.2 * (B[1:M-1, 1:N-1] + B[1:M-1, :N-2] +
        B[1:M-1, 2:N] + B[2:M, 1:N-1] + B[0:M-2, 1:N-1])


@appy.jit(auto_simd=True)
def mv_alpha(alpha, A, x, y):
    # Listing 8.
    M, N = A.shape
    #pragma :M=>parallel :N=>reduction(sum:y)
    y[:M] = mv(alpha * A[:M, :N], x[:N])


@appy.jit
def shift(A, B, M, N):
    # Figure 2: the target is read with another slice, so a temporary is needed.
    #pragma parallel for
    for i in range(M):
        #pragma 1:N=>simd
        A[i, 1:N] = 0.5 * (A[i, :N-1] + B[i, :N-1])


@appy.jit(auto_simd=True)
def outer_add(a, b, C, M, N):
    # Broadcasting with None.
    #pragma :M=>parallel :N=>parallel
    C[:M, :N] = a[:M, None] * 2.0 + b[None, :N]


@appy.jit
def column_sum(A, y, M, N):
    # A reduction over axis 0: columns in parallel, rows accumulated per lane.
    #pragma :N=>parallel :M=>reduce(sum:y)
    y[:N] = np.sum(A[:M, :N], axis=0)


@appy.jit(auto_simd=True)
def layernorm(x, gamma, beta, out, M, N, eps):
    # Row-wise layer normalisation, one row per worker.
    #pragma parallel for
    for i in range(M):
        mean = np.sum(x[i, :N]) / N
        var = np.sum((x[i, :N] - mean) * (x[i, :N] - mean)) / N
        out[i, :N] = (x[i, :N] - mean) / np.sqrt(var + eps) * gamma[:N] + beta[:N]


@appy.jit
def heat_3d(A, B, N, T):
    # A 3-D stencil inside a host time loop.
    for t in range(1, T):
        #pragma 1:N-1=>parallel 1:N-1=>parallel 1:N-1=>simd
        B[1:N-1, 1:N-1, 1:N-1] = (0.125 * (A[2:N, 1:N-1, 1:N-1] - 2.0 * A[1:N-1, 1:N-1, 1:N-1] + A[:N-2, 1:N-1, 1:N-1])
            + 0.125 * (A[1:N-1, 2:N, 1:N-1] - 2.0 * A[1:N-1, 1:N-1, 1:N-1] + A[1:N-1, :N-2, 1:N-1])
            + 0.125 * (A[1:N-1, 1:N-1, 2:N] - 2.0 * A[1:N-1, 1:N-1, 1:N-1] + A[1:N-1, 1:N-1, :N-2])
            + A[1:N-1, 1:N-1, 1:N-1])
