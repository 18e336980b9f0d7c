"""The 20 NPBench kernels of the APPy paper (seed 001 §6), written for appy the way a user
would: NPBench's NumPy code in sliced index notation with pragmas, loops where the
algorithm is a loop, matrix products left to the library (cuBLAS on the GPU).

Each function takes NPBench's arguments (`bench_info/<kernel>.json`, `input_args`),
plus, where NPBench returns new arrays, the output arrays (allocated by the caller).
The source is valid Python: `harness.py` checks it against NPBench's NumPy versions.
"""
import numpy as np
import appy
from appy import mv


@appy.jit
def gemm(alpha, beta, C, A, B):
    NI, NJ = C.shape
    NK = A.shape[1]
    C[:NI, :NJ] = alpha * A[:NI, :NK] @ B[:NK, :NJ] + beta * C[:NI, :NJ]


@appy.jit
def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    N = A.shape[0]
    #pragma :N=>parallel :N=>simd
    A[:N, :N] += u1[:N, None] * v1[None, :N] + u2[:N, None] * v2[None, :N]
    # Matrix-vector products go to the library (cuBLAS gemv on the GPU).
    x[:N] += beta * y[:N] @ A[:N, :N]
    x[:N] += z[:N]
    w[:N] += alpha * A[:N, :N] @ x[:N]


@appy.jit
def gesummv(alpha, beta, A, B, x, out):
    M, N = A.shape
    #pragma :M=>parallel :N=>simd
    out[:M] = alpha * mv(A[:M, :N], x[:N]) + beta * mv(B[:M, :N], x[:N])


@appy.jit
def go_fast(a, out):
    N = a.shape[0]
    trace = 0.0
    #pragma parallel for shared(trace)
    for i in range(N):
        trace += np.tanh(a[i, i])
    out[:N, :N] = a[:N, :N] + trace


@appy.jit
def jacobi_2d(TSTEPS, A, B):
    N = A.shape[0]
    for t in range(1, TSTEPS):
        #pragma 1:N-1=>parallel 1:N-1=>parallel
        B[1:N-1, 1:N-1] = 0.2 * (A[1:N-1, 1:N-1] + A[1:N-1, :N-2] + A[1:N-1, 2:N] + A[2:N, 1:N-1] + A[:N-2, 1:N-1])
        #pragma 1:N-1=>parallel 1:N-1=>parallel
        A[1:N-1, 1:N-1] = 0.2 * (B[1:N-1, 1:N-1] + B[1:N-1, :N-2] + B[1:N-1, 2:N] + B[2:N, 1:N-1] + B[:N-2, 1:N-1])


@appy.jit
def heat_3d(TSTEPS, A, B):
    N = A.shape[0]
    for t in range(1, TSTEPS):
        #pragma 1:N-1=>parallel 1:N-1=>parallel 1:N-1=>parallel
        B[1:N-1, 1:N-1, 1:N-1] = (0.125 * (A[2:N, 1:N-1, 1:N-1] - 2.0 * A[1:N-1, 1:N-1, 1:N-1] + A[:N-2, 1:N-1, 1:N-1])
            + 0.125 * (A[1:N-1, 2:N, 1:N-1] - 2.0 * A[1:N-1, 1:N-1, 1:N-1] + A[1:N-1, :N-2, 1:N-1])
            + 0.125 * (A[1:N-1, 1:N-1, 2:N] - 2.0 * A[1:N-1, 1:N-1, 1:N-1] + A[1:N-1, 1:N-1, :N-2])
            + A[1:N-1, 1:N-1, 1:N-1])
        #pragma 1:N-1=>parallel 1:N-1=>parallel 1:N-1=>parallel
        A[1:N-1, 1:N-1, 1:N-1] = (0.125 * (B[2:N, 1:N-1, 1:N-1] - 2.0 * B[1:N-1, 1:N-1, 1:N-1] + B[:N-2, 1:N-1, 1:N-1])
            + 0.125 * (B[1:N-1, 2:N, 1:N-1] - 2.0 * B[1:N-1, 1:N-1, 1:N-1] + B[1:N-1, :N-2, 1:N-1])
            + 0.125 * (B[1:N-1, 1:N-1, 2:N] - 2.0 * B[1:N-1, 1:N-1, 1:N-1] + B[1:N-1, 1:N-1, :N-2])
            + B[1:N-1, 1:N-1, 1:N-1])


@appy.jit(auto_simd=True)
def softmax(x, out):
    N, H, SM, SM2 = x.shape
    #pragma parallel for
    for i in range(N):
        #pragma parallel for
        for j in range(H):
            #pragma parallel for
            for k in range(SM):
                m = np.max(x[i, j, k, :SM2])
                s = np.sum(np.exp(x[i, j, k, :SM2] - m))
                out[i, j, k, :SM2] = np.exp(x[i, j, k, :SM2] - m) / s


@appy.jit
def spmv(A_row, A_col, A_val, x, y):
    M = A_row.shape[0] - 1
    # Rows are short (2 non-zeros on average): one row per lane.
    #pragma parallel for simd
    for i in range(M):
        s = 0.0
        #pragma sequential for
        for j in range(A_row[i], A_row[i + 1]):
            s += A_val[j] * x[A_col[j]]
        y[i] = s


@appy.jit
def floyd_warshall(path):
    N = path.shape[0]
    for k in range(N):
        #pragma :N=>parallel :N=>simd
        path[:N, :N] = np.minimum(path[:N, :N], path[:N, k, None] + path[None, k, :N])


@appy.jit
def syrk(alpha, beta, C, A):
    N, M = A.shape
    T = np.empty((N, N))
    T[:N, :N] = A[:N, :M] @ np.transpose(A[:N, :M])
    #pragma parallel for
    for i in range(N):
        C[i, :i + 1] = beta * C[i, :i + 1] + alpha * T[i, :i + 1]


@appy.jit
def syr2k(alpha, beta, C, A, B):
    N, M = A.shape
    T = np.empty((N, N))
    T[:N, :N] = A[:N, :M] @ np.transpose(B[:N, :M])
    T[:N, :N] += B[:N, :M] @ np.transpose(A[:N, :M])
    #pragma parallel for
    for i in range(N):
        C[i, :i + 1] = beta * C[i, :i + 1] + alpha * T[i, :i + 1]


@appy.jit
def symm(alpha, beta, C, A, B):
    M, N = C.shape
    # The symmetric matrix from A's lower triangle, then one product.
    S = np.empty((M, M))
    #pragma parallel for
    for i in range(M):
        S[i, :i + 1] = A[i, :i + 1]
        S[i, i + 1:M] = A[i + 1:M, i]
    C[:M, :N] = alpha * S[:M, :M] @ B[:M, :N] + beta * C[:M, :N]


@appy.jit
def trmm(alpha, A, B):
    M, N = B.shape
    # B[i, j] += A[i+1:, i] . B[i+1:, j] reads rows below i before they change:
    # B = alpha * (B + L^T B) with L the strictly lower triangle of A.
    L = np.empty((M, M))
    T = np.empty((M, N))
    #pragma parallel for
    for i in range(M):
        L[i, :i] = A[i, :i]
        L[i, i:M] = 0.0
    T[:M, :N] = np.transpose(L[:M, :M]) @ B[:M, :N]
    B[:M, :N] = alpha * (B[:M, :N] + T[:M, :N])


@appy.jit
def fdtd_2d(TMAX, ex, ey, hz, _fict_):
    NX, NY = ex.shape
    for t in range(TMAX):
        ey[0, :NY] = _fict_[t]
        ey[1:NX, :NY] -= 0.5 * (hz[1:NX, :NY] - hz[:NX - 1, :NY])
        ex[:NX, 1:NY] -= 0.5 * (hz[:NX, 1:NY] - hz[:NX, :NY - 1])
        hz[:NX - 1, :NY - 1] -= 0.7 * (ex[:NX - 1, 1:NY] - ex[:NX - 1, :NY - 1] + ey[1:NX, :NY - 1] - ey[:NX - 1, :NY - 1])


@appy.jit
def trisolv(L, x, b):
    # NPBench's code as it is: on the GPU, appy recognises the forward substitution and
    # calls cuBLAS (appy-solve-library); on the CPU it runs the loop.
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


@appy.jit
def covariance(M, float_n, data, cov, mean):
    N = data.shape[0]
    # One worker per column, its rows in vector lanes (a block reduction): 1 200
    # columns fill the GPU, where lanes over columns summing 1 400 rows each do not.
    #pragma :M=>parallel :N=>simd
    mean[:M] = np.sum(data[:N, :M], axis=0) / float_n
    data[:N, :M] -= mean[None, :M]
    cov[:M, :M] = np.transpose(data[:N, :M]) @ data[:N, :M] / (float_n - 1.0)


@appy.jit
def gramschmidt(A, Q, R):
    M, N = A.shape
    for k in range(N):
        nrm = np.sum(A[:M, k] * A[:M, k])
        R[k, k] = np.sqrt(nrm)
        Q[:M, k] = A[:M, k] / R[k, k]
        #pragma parallel for
        for j in range(k + 1, N):
            R[k, j] = np.sum(Q[:M, k] * A[:M, j])
            A[:M, j] -= Q[:M, k] * R[k, j]


@appy.jit
def cholesky(A):
    # NPBench's code as it is: on the GPU, appy recognises the factorisation and calls
    # cuSOLVER (appy-solve-library); on the CPU it runs the loops.
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


@appy.jit
def hdiff(in_field, out_field, coeff):
    I, J, K = out_field.shape
    lap = np.empty((I + 2, J + 2, K))
    # Rows and columns in parallel (I x J workers), the K axis in vector lanes.
    #pragma :I + 2=>parallel :J + 2=>parallel :K=>simd
    lap[:I + 2, :J + 2, :K] = 4.0 * in_field[1:I + 3, 1:J + 3, :K] - (
        in_field[2:I + 4, 1:J + 3, :K] + in_field[0:I + 2, 1:J + 3, :K] + in_field[1:I + 3, 2:J + 4, :K] + in_field[1:I + 3, 0:J + 2, :K])
    # The fluxes are computed where they are used (one fused nest, nothing stored).
    #pragma :I=>parallel :J=>parallel :K=>simd
    out_field[:I, :J, :K] = in_field[2:I + 2, 2:J + 2, :K] - coeff[:I, :J, :K] * (
        np.where((lap[2:I + 2, 1:J + 1, :K] - lap[1:I + 1, 1:J + 1, :K]) * (in_field[3:I + 3, 2:J + 2, :K] - in_field[2:I + 2, 2:J + 2, :K]) > 0,
                 0.0, lap[2:I + 2, 1:J + 1, :K] - lap[1:I + 1, 1:J + 1, :K])
        - np.where((lap[1:I + 1, 1:J + 1, :K] - lap[:I, 1:J + 1, :K]) * (in_field[2:I + 2, 2:J + 2, :K] - in_field[1:I + 1, 2:J + 2, :K]) > 0,
                   0.0, lap[1:I + 1, 1:J + 1, :K] - lap[:I, 1:J + 1, :K])
        + np.where((lap[1:I + 1, 2:J + 2, :K] - lap[1:I + 1, 1:J + 1, :K]) * (in_field[2:I + 2, 3:J + 3, :K] - in_field[2:I + 2, 2:J + 2, :K]) > 0,
                   0.0, lap[1:I + 1, 2:J + 2, :K] - lap[1:I + 1, 1:J + 1, :K])
        - np.where((lap[1:I + 1, 1:J + 1, :K] - lap[1:I + 1, :J, :K]) * (in_field[2:I + 2, 2:J + 2, :K] - in_field[2:I + 2, 1:J + 1, :K]) > 0,
                   0.0, lap[1:I + 1, 1:J + 1, :K] - lap[1:I + 1, :J, :K]))


@appy.jit
def azimint_naive(data, radius, res, npt):
    N = data.shape[0]
    rmax = np.max(radius[:N])
    #pragma parallel for
    for i in range(npt):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        s = np.sum(np.where((r1 <= radius[:N]) & (radius[:N] < r2), data[:N], 0.0))
        c = np.sum(np.where((r1 <= radius[:N]) & (radius[:N] < r2), 1.0, 0.0))
        res[i] = s / c
