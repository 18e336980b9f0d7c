#!/usr/bin/env python3
"""CPU benchmark of every example kernel: appy's CPU back end against NumPy and Numba.

    python3 benchmarks/cpu/examples.py [--appy target/release/appy] [--repeat 20] [--check-only] [case ...]

For each kernel of examples/*.py:
  * appy: `appy bench FILE --func F --arg ... --device cpu` (the median of the timed calls;
    each call gets fresh copies of the arrays, made before its clock starts; the kernel
    runs on the arrays' own memory, on OpenMP threads);
  * NumPy: the computation written with NumPy's whole-array operations (the `numpy`
    column of CASES says which; where NumPy has no whole-array form — recurrences,
    triangular solves — the example's own source, run by CPython + NumPy);
  * Numba: `@numba.njit(parallel=True)` over the example's own source, its
    `#pragma parallel for` loops turned into `prange` (NUMBA_OVERRIDES lists the few
    kernels Numba cannot run as written: atomic updates, strided `prange`,
    broadcasting it miscompiles);
all three timed the same way (median of `--repeat` calls on fresh copies of the inputs,
after a warm-up call). Before timing, every implementation is checked against the
oracle (CPython + NumPy running the example source) at a small size, and appy's output
at the benchmark size against the NumPy implementation's.
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import types

import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EX = os.path.join(ROOT, "examples")
MVL = 256  # appy.MVL of the oracle's shim (block_sums' result depends on it)


def arr(r, shape, dtype=np.float64, lo=-1.0, hi=1.0):
    return (r.random(shape) * (hi - lo) + lo).astype(dtype)


def lower(r, n):
    L = np.tril(arr(r, (n, n))) / n
    L[np.diag_indices(n)] = arr(r, n, np.float64, 1.0, 2.0)
    return L


def spd(r, n, extra=0):
    B = arr(r, (n, n))
    A = arr(r, (n + extra, n + extra))
    A[:n, :n] = B @ B.T + n * np.eye(n)
    return A


def csr(r, rows, cols, max_nnz):
    nnz = r.integers(0, max_nnz + 1, rows)
    indptr = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int64)
    indices = r.integers(0, cols, indptr[-1]).astype(np.int32)
    return indptr, indices, arr(r, indptr[-1])


# ----- NumPy implementations (whole-array operations) -----

def np_spmv(A_row, A_col, A_val, x, y, N):
    rows = np.repeat(np.arange(N - 1), np.diff(A_row[:N]))
    y[:N - 1] = np.bincount(rows, weights=A_val[A_row[0]:A_row[N - 1]] * x[A_col[A_row[0]:A_row[N - 1]]], minlength=N - 1)


def np_softmax(a, b, M, N):
    e = np.exp(a[:M, :N] - a[:M, :N].max(1, keepdims=True))
    b[:M, :N] = e / e.sum(1, keepdims=True)


def np_gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z, N):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


def np_cholesky(A, n=None):
    n = A.shape[0] if n is None else n
    L = np.linalg.cholesky(A[:n, :n])
    il = np.tril_indices(n)
    A[:n, :n][il] = L[il]


def np_trisolv(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


def np_trisolv_inplace(L, x, n):
    for i in range(n):
        x[i] = (x[i] - L[i, :i] @ x[:i]) / L[i, i]


def np_jacobi_1d(A, B, N, T):
    for _ in range(T):
        B[1:N - 1] = 0.33333 * (A[:N - 2] + A[1:N - 1] + A[2:N])
        A[1:N - 1] = 0.33333 * (B[:N - 2] + B[1:N - 1] + B[2:N])


def np_heat_2d(A, B, M, N, T):
    for _ in range(T):
        B[1:-1, 1:-1] = A[1:-1, 1:-1] + 0.125 * (A[2:, 1:-1] - 2.0 * A[1:-1, 1:-1] + A[:-2, 1:-1]) + 0.125 * (A[1:-1, 2:] - 2.0 * A[1:-1, 1:-1] + A[1:-1, :-2])
        A[1:-1, 1:-1] = B[1:-1, 1:-1] + 0.125 * (B[2:, 1:-1] - 2.0 * B[1:-1, 1:-1] + B[:-2, 1:-1]) + 0.125 * (B[1:-1, 2:] - 2.0 * B[1:-1, 1:-1] + B[1:-1, :-2])


def np_layernorm(x, gamma, beta, out, M, N, eps):
    mean = x.mean(1, keepdims=True)
    var = ((x - mean) ** 2).mean(1, keepdims=True)
    out[:] = (x - mean) / np.sqrt(var + eps) * gamma + beta


def np_group_by_sum(X, labels, centroids, M, N):
    for k in range(centroids.shape[0]):
        centroids[k, :N] += X[:M][labels[:M] == k, :N].sum(0)


def np_azimint(data, radius, lo, hi, N):
    m = (radius[:N] >= lo) & (radius[:N] < hi)
    return data[:N][m].sum(), int(np.count_nonzero(m))


def np_masked_max(A, N):
    return np.where(A[:N] < 0.5, A[:N], -np.inf).max()


def np_two_regions(a, b, N):
    np.add(a[:N], 1.0, out=b[:N])
    np.multiply(b[:N], 2.0, out=a[:N])


def np_interior(a, b, M, N):
    b[1:M - 1, 1:N - 1] = 0.25 * (a[:M - 2, 1:N - 1] + a[2:M, 1:N - 1] + a[1:M - 1, :N - 2] + a[1:M - 1, 2:N])


SOURCE = "source"  # the example's own code under CPython + NumPy

# name: (file, func, generator(rng, n) -> args, bench n, NumPy implementation)
CASES = {
    "vector_add": ("vector_add.py", "vector_add", lambda r, n: [arr(r, n, np.float32), arr(r, n, np.float32), arr(r, n, np.float32), n],
                   1 << 24, lambda A, B, C, N: np.add(A[:N], B[:N], out=C[:N])),
    "vector_sum": ("vector_sum.py", "vector_sum", lambda r, n: [arr(r, n), arr(r, 1), n], 1 << 24,
                   lambda A, s, N: s.__setitem__(0, s[0] + A[:N].sum())),
    "shared_sum": ("shared_sum.py", "shared_sum", lambda r, n: [arr(r, n), n], 1 << 24, lambda A, N: A[:N] @ A[:N]),
    "masked_max": ("shared_sum.py", "masked_max", lambda r, n: [arr(r, n, np.float32, 0, 1), n], 1 << 24, np_masked_max),
    "int_init_sum": ("shared_sum.py", "int_init_sum", lambda r, n: [arr(r, n, np.float32), n], 1 << 24, lambda A, N: A[:N].sum()),
    "spmv": ("spmv.py", "spmv", lambda r, n: [*csr(r, n, 5000, 40), arr(r, 5000), arr(r, n), n + 1], 200_000, np_spmv),
    "row_sum": ("rowwise.py", "row_sum", lambda r, n: [arr(r, (n // 4, n)), arr(r, n // 4), n // 4, n], 4000,
                lambda a, out, M, N: a[:M, :N].sum(1, out=out[:M])),
    "row_max": ("rowwise.py", "row_max", lambda r, n: [arr(r, (n // 4, n)), arr(r, n // 4), n // 4, n], 4000,
                lambda a, out, M, N: a[:M, :N].max(1, out=out[:M])),
    "row_min": ("rowwise.py", "row_min", lambda r, n: [arr(r, (n // 4, n), np.float32), arr(r, n // 4, np.float32), n // 4, n], 4000,
                lambda a, out, M, N: a[:M, :N].min(1, out=out[:M])),
    "gemver": ("gemver.py", "gemver", lambda r, n: [1.5, 1.2, arr(r, (n, n))] + [arr(r, n) for _ in range(8)] + [n], 2000, np_gemver),
    "softmax": ("softmax.py", "softmax", lambda r, n: [arr(r, (n, 777), np.float32, -4, 4), arr(r, (n, 777), np.float32), n, 777],
                4000, np_softmax),
    "softmax_f64": ("softmax.py", "softmax", lambda r, n: [arr(r, (n, 777), np.float64, -4, 4), arr(r, (n, 777)), n, 777],
                    4000, np_softmax),
    "relu_blend": ("vidx_where.py", "relu_blend", lambda r, n: [arr(r, n), arr(r, n), arr(r, n), n], 1 << 23,
                   lambda A, B, C, N: np.copyto(C[:N], np.where(A[:N] > 0.0, A[:N], 0.5 * B[:N]))),
    "block_sums": ("vidx_where.py", "block_sums", lambda r, n: [arr(r, n), arr(r, (n + MVL - 1) // MVL), n], 1 << 23,
                   lambda A, s, N: np.copyto(s[:(N + MVL - 1) // MVL], np.add.reduceat(A[:N] * A[:N], np.arange(0, N, MVL)))),
    "prefix_rows": ("prefix_rows.py", "prefix_rows", lambda r, n: [arr(r, (n, 300)), n, 300], 20000,
                    lambda a, M, N: np.cumsum(a[:M, :N], axis=1, out=a[:M, :N])),
    "recurrence": ("prefix_rows.py", "recurrence", lambda r, n: [arr(r, n), arr(r, n), n], 1 << 20, SOURCE),
    "jacobi_1d": ("jacobi_1d.py", "jacobi_1d", lambda r, n: [arr(r, n), arr(r, n), n, 10], 1 << 22, np_jacobi_1d),
    "heat_2d": ("jacobi_1d.py", "heat_2d", lambda r, n: [arr(r, (n, n)), arr(r, (n, n)), n, n, 10], 2000, np_heat_2d),
    "vsum": ("prange.py", "vsum", lambda r, n: [arr(r, n), n], 1 << 24, lambda a, N: a[:N].sum()),
    "masked_sum": ("prange.py", "masked_sum", lambda r, n: [arr(r, n, np.float64, 0, 1), n], 1 << 24,
                   lambda a, N: np.where(a[:N] > 0.5, a[:N], 0.0).sum()),
    "go_fast": ("prange.py", "go_fast", lambda r, n: [arr(r, (n, n)), n], 3000,
                lambda a, N: a + np.tanh(np.diagonal(a)).sum()),
    "azimint_like": ("prange.py", "azimint_like", lambda r, n: [arr(r, n), arr(r, n, np.float64, 0, 10), 2.5, 7.0, n], 1 << 24, np_azimint),
    "add_one": ("prange.py", "add_one", lambda r, n: [arr(r, n), n], 1 << 24, lambda a, N: np.add(a[:N], 1, out=a[:N])),
    "col_sums": ("prange.py", "col_sums", lambda r, n: [arr(r, 1000), arr(r, (n, 1000)), n, 1000], 10000,
                 lambda a, b, M, N: np.add(a[:N], b[:M, :N].sum(0), out=a[:N])),
    "row_sums": ("prange.py", "row_sums", lambda r, n: [arr(r, n), arr(r, (n, 1000)), n, 1000], 10000,
                 lambda a, b, M, N: np.add(a[:M], b[:M, :N].sum(1), out=a[:M])),
    "softmax_tensor": ("softmax_tensor.py", "softmax_tensor", lambda r, n: [arr(r, (n, 777), np.float32, -4, 4), arr(r, (n, 777), np.float32), n, 777],
                       4000, np_softmax),
    "group_by_sum": ("softmax_tensor.py", "group_by_sum", lambda r, n: [arr(r, (n, 500)), r.integers(0, 3, n).astype(np.int64), arr(r, (3, 500)), n, 500],
                     20000, np_group_by_sum),
    "saxpy_slice": ("softmax_tensor.py", "saxpy_slice", lambda r, n: [1.5, arr(r, n), arr(r, n), n], 1 << 24, SOURCE),
    "trisolv": ("solvers.py", "trisolv", lambda r, n: [lower(r, n), arr(r, n), arr(r, n)], 2000, np_trisolv),
    "trisolv_inplace": ("solvers.py", "trisolv_inplace", lambda r, n: [lower(r, n + 3).astype(np.float32), arr(r, n + 3, np.float32), n], 2000,
                        np_trisolv_inplace),
    "cholesky": ("solvers.py", "cholesky", lambda r, n: [spd(r, n)], 1000, np_cholesky),
    "cholesky_block": ("solvers.py", "cholesky_block", lambda r, n: [spd(r, n, extra=5), n], 1000, np_cholesky),
    "cholesky_rows": ("solvers.py", "cholesky_rows", lambda r, n: [spd(r, n)], 1000, np_cholesky),
    "spmv_csr_large": None,
    "fused_chain": ("tensor_bench.py", "fused_chain", lambda r, n: [arr(r, n, np.float32), arr(r, n, np.float32), arr(r, n, np.float32), n], 1 << 24, SOURCE),
    "softmax_rows": ("tensor_bench.py", "softmax_rows", lambda r, n: [arr(r, (n, 777), np.float32, -4, 4), arr(r, (n, 777), np.float32), n, 777],
                     4000, np_softmax),
    "gemm": ("tensor_matmul.py", "gemm", lambda r, n: [1.5, 0.5, arr(r, (n, n)), arr(r, (n, n)), arr(r, (n, n)), n, n, n], 1000, SOURCE),
    "at_b": ("tensor_matmul.py", "at_b", lambda r, n: [arr(r, (n, n), np.float32), arr(r, (n, n), np.float32), arr(r, (n, n), np.float32), n, n, n],
             1000, SOURCE),
    "sub_block": ("tensor_matmul.py", "sub_block", lambda r, n: [arr(r, (n, n)), arr(r, (n, n)), arr(r, (n, n)), n, n], 1000, SOURCE),
    "vec_mat": ("tensor_matmul.py", "vec_mat", lambda r, n: [arr(r, (n, n)), arr(r, n), arr(r, n), n, n], 4000, SOURCE),
    "gesummv": ("tensor_paper.py", "gesummv", lambda r, n: [1.5, -0.5, arr(r, (n, n)), arr(r, (n, n)), arr(r, n), arr(r, n), arr(r, n), n, n],
                4000, lambda al, be, A, B, x, y, tmp, M, N: (np.copyto(tmp[:M], be * B[:M, :N] @ x[:N]),
                                                             np.copyto(y[:M], al * A[:M, :N] @ x[:N] + tmp[:M]))),
    "jacobi_2d": ("tensor_paper.py", "jacobi_2d_one_iteration", lambda r, n: [arr(r, (n, n), np.float32), arr(r, (n, n), np.float32), n, n],
                  4000, SOURCE),
    "mv_alpha": ("tensor_paper.py", "mv_alpha", lambda r, n: [0.75, arr(r, (n, n), np.float32), arr(r, n, np.float32), arr(r, n, np.float32)],
                 4000, lambda al, A, x, y: np.copyto(y, al * A @ x)),
    "shift": ("tensor_paper.py", "shift", lambda r, n: [arr(r, (n, n)), arr(r, (n, n)), n, n], 3000,
              lambda A, B, M, N: np.copyto(A[:M, 1:N], 0.5 * (A[:M, :N - 1] + B[:M, :N - 1]))),
    "outer_add": ("tensor_paper.py", "outer_add", lambda r, n: [arr(r, n), arr(r, n), arr(r, (n, n)), n, n], 4000, SOURCE),
    "column_sum": ("tensor_paper.py", "column_sum", lambda r, n: [arr(r, (n, n)), arr(r, n), n, n], 4000,
                   lambda A, y, M, N: A[:M, :N].sum(0, out=y[:N])),
    "layernorm": ("tensor_paper.py", "layernorm", lambda r, n: [arr(r, (n, 1024), np.float32, -2, 2), arr(r, 1024, np.float32), arr(r, 1024, np.float32),
                                                               arr(r, (n, 1024), np.float32), n, 1024, 1e-5], 4000, np_layernorm),
    "heat_3d": ("tensor_paper.py", "heat_3d", lambda r, n: [arr(r, (n, n, n)), arr(r, (n, n, n)), n, 11], 120, SOURCE),
    "time_loop": ("host_reads.py", "time_loop", lambda r, n: [arr(r, (2, n)), arr(r, 101), 100], 1 << 20, SOURCE),
    "before_loop": ("host_reads.py", "before_loop", lambda r, n: [arr(r, (1, n)), arr(r, n), 100], 1 << 20, SOURCE),
    "scale_row": ("data_movement.py", "scale_row", lambda r, n: [arr(r, (4, n)), 2, n], 1 << 24,
                  lambda a, r_, N: np.multiply(a[r_, :N], 2.0, out=a[r_, :N])),
    "two_regions": ("data_movement.py", "two_regions", lambda r, n: [arr(r, n), arr(r, n), n], 1 << 24, np_two_regions),
    "interior": ("data_movement.py", "interior", lambda r, n: [arr(r, (n, n)), arr(r, (n, n)), n, n], 4000, np_interior),
    "big_temporary": ("data_movement.py", "big_temporary", lambda r, n: [arr(r, n), n], 4000, SOURCE),
}
del CASES["spmv_csr_large"]


# ----- Numba: the example source with `#pragma parallel for` loops as prange -----

NUMBA_OVERRIDES = {
    # `#pragma atomic`: Numba has no atomics; a reduction instead.
    "vector_sum": '''
@njit(parallel=True)
def vector_sum(A, s, N):
    t = 0.0
    for i in prange(N):
        t += A[i]
    s[0] += t
''',
    "group_by_sum": '''
@njit(parallel=True)
def group_by_sum(X, labels, centroids, M, N):
    for j in prange(N):
        for i in range(M):
            centroids[labels[i], j] += X[i, j]
''',
    # `a[j] += b[i, j]` under prange(i) is a race in Numba (appy makes it a reduction).
    "col_sums": '''
@njit(parallel=True)
def col_sums(a, b, M, N):
    for j in prange(N):
        t = 0.0
        for i in range(M):
            t += b[i, j]
        a[j] += t
''',
    # prange needs a step of 1.
    "relu_blend": '''
@njit(parallel=True)
def relu_blend(A, B, C, N):
    for ib in prange((N + MVL - 1) // MVL):
        i = ib * MVL
        vi = np.arange(i, min(i + MVL, N))
        C[vi] = np.where(A[vi] > 0.0, A[vi], 0.5 * B[vi])
''',
    "block_sums": '''
@njit(parallel=True)
def block_sums(A, sums, N):
    for ib in prange((N + MVL - 1) // MVL):
        i = ib * MVL
        vi = np.arange(i, min(i + MVL, N))
        sums[i // MVL] = np.sum(A[vi] * A[vi])
''',
    # Numba's parfors mis-sizes `a[:M, None] * 2.0 + b[None, :N]`.
    "outer_add": '''
@njit(parallel=True)
def outer_add(a, b, C, M, N):
    for i in prange(M):
        for j in range(N):
            C[i, j] = a[i] * 2.0 + b[j]
''',
}


def numba_module(file):
    """The example file with its parallel loops as prange and @appy.jit as
    @numba.njit(parallel=True)."""
    import numba
    lines = open(os.path.join(EX, file)).read().split("\n")
    out, pending = [], False
    for line in lines:
        s = line.strip()
        if s.startswith("#pragma parallel for"):
            pending = True
        elif pending and s.startswith("for ") and " in range(" in s:
            line = line.replace(" in range(", " in prange(", 1)
            pending = False
        elif pending and s and not s.startswith("#"):
            pending = False
        line = line.replace("float('-inf')", "-np.inf").replace("float('inf')", "np.inf")
        out.append(line)
    src = "from numba import prange\n" + "\n".join(out)
    shim = types.ModuleType("appy")
    shim.jit = lambda fn=None, **kw: (lambda f: numba.njit(parallel=True)(f)) if fn is None else numba.njit(parallel=True)(fn)
    shim.prange = numba.prange
    shim.MVL = MVL
    # (Numba promotes a Python float times a float32 array to float64.)
    shim.mv = numba.njit(lambda A, x: A @ x.astype(A.dtype))
    shim.vidx = numba.njit(lambda s, l, b: np.arange(s, min(s + l, b)))
    shim.where = numba.njit(lambda c, x, y: np.where(c, x, y))
    saved = sys.modules.get("appy")
    sys.modules["appy"] = shim
    try:
        mod = types.ModuleType("nb_" + file[:-3])
        exec(compile(src, file, "exec"), mod.__dict__)
    finally:
        if saved is not None:
            sys.modules["appy"] = saved
        else:
            del sys.modules["appy"]
    return mod


def numba_function(name, file, func):
    import numba
    if name in NUMBA_OVERRIDES:
        ns = {"np": np, "njit": numba.njit, "prange": numba.prange, "MVL": MVL}
        exec(NUMBA_OVERRIDES[name], ns)
        return ns[func]
    return getattr(numba_module(file), func)


def oracle_function(file, func):
    sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
    spec = importlib.util.spec_from_file_location("ex_" + file[:-3], os.path.join(EX, file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, func)


# ----- running and comparing -----

def copies(vals):
    return [v.copy() if isinstance(v, np.ndarray) else v for v in vals]


def outputs(vals, ret, returns=True):
    """Arrays and return values after a call, as a flat list (`returns`: whether the
    kernel returns values; NumPy's `out=` functions return their output array)."""
    rets = [] if ret is None or not returns else list(ret) if isinstance(ret, tuple) else [ret]
    return [v for v in vals if isinstance(v, np.ndarray)] + [np.asarray(x) for x in rets]


def close(got, want, n=1, ref=None):
    """Compares outputs (float32: rtol 2e-4; float64: rtol 1e-8). A float32 scalar that
    sums `n` elements may differ by a rounding error growing like sqrt(n) (any two
    summation orders do). With `ref` (the outputs computed in float64), a float32 output
    outside the tolerance still passes if it is no further from `ref` than NumPy's
    float32 output is (float32 sums of thousands of terms differ by more than the fixed
    tolerance between any two summation orders)."""
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        f32 = g.dtype == np.float32 or w.dtype == np.float32
        tol = dict(rtol=2e-4, atol=2e-5 * (np.sqrt(n) if g.ndim == 0 else 1)) if f32 else dict(rtol=1e-8, atol=1e-10)
        if g.shape != w.shape:
            return f"output {k}: shape {g.shape}, expected {w.shape}"
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        if np.allclose(g64, w64, equal_nan=True, **tol):
            continue
        if f32 and ref is not None:
            r = np.asarray(ref[k], np.float64)
            if np.nanmax(np.abs(g64 - r), initial=0) <= 2 * np.nanmax(np.abs(w64 - r), initial=0) + 2e-5:
                continue
            return f"output {k}: max |diff| {np.nanmax(np.abs(g64 - w64))}, and further from the float64 result than NumPy's"
        return f"output {k}: max |diff| {np.nanmax(np.abs(g64 - w64))}"
    return None


def time_python(fn, vals, repeat):
    fn(*copies(vals))  # warm-up (Numba compiles here)
    ts = []
    for _ in range(repeat):
        a = copies(vals)
        t0 = time.perf_counter()
        fn(*a)
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def appy_args(params, vals, d):
    """`--arg` options; arrays saved under `d/in` (appy never writes over its inputs)."""
    args = []
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    for p, v in zip(params, vals):
        if isinstance(v, np.ndarray):
            path = os.path.join(d, "in", p + ".npy")
            np.save(path, v)
            args += ["--arg", f"{p}=@{path}"]
        else:
            args += ["--arg", f"{p}={v!r}"]
    return args


def appy_run(appy, file, func, params, vals, env):
    with tempfile.TemporaryDirectory() as d:
        cmd = [appy, "run", os.path.join(EX, file), "--func", func, "--device", "cpu", "--out", d, "--mvl", str(MVL)]
        p = subprocess.run(cmd + appy_args(params, vals, d), capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
        got = [np.load(os.path.join(d, f"{pn}.npy")) for pn, v in zip(params, vals) if isinstance(v, np.ndarray)]
        if os.path.exists(os.path.join(d, "return.npy")):
            got.append(np.load(os.path.join(d, "return.npy")))
        k = 0
        while os.path.exists(os.path.join(d, f"return_{k}.npy")):
            got.append(np.load(os.path.join(d, f"return_{k}.npy")))
            k += 1
        return got


def appy_bench(appy, file, func, params, vals, repeat, env):
    with tempfile.TemporaryDirectory() as d:
        cmd = [appy, "bench", os.path.join(EX, file), "--func", func, "--device", "cpu", "--repeat", str(repeat), "--mvl", str(MVL)]
        p = subprocess.run(cmd + appy_args(params, vals, d), capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
        return float(p.stdout.split("median ")[1].split(" ms")[0]) / 1e3


def main():
    try:
        from numba.core.errors import NumbaPerformanceWarning
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
    except ImportError:
        pass
    ap = argparse.ArgumentParser()
    ap.add_argument("--appy", default=os.path.join(ROOT, "target", "release", "appy"))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--no-numba", action="store_true")
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()
    env = dict(os.environ)
    env.setdefault("APPY_CACHE_DIR", tempfile.mkdtemp(prefix="appy-bench-cache-"))
    names = a.cases or list(CASES)
    rows = []
    bad = 0
    for name in names:
        file, func, gen, n_bench, np_impl = CASES[name]
        ref = oracle_function(file, func)
        np_fn = ref if np_impl is SOURCE else np_impl
        nb_fn = None if a.no_numba else numba_function(name, file, func)
        params = list(ref.__code__.co_varnames[:ref.__code__.co_argcount])
        # Correctness at a small size: NumPy, Numba and appy against the oracle.
        small = gen(np.random.default_rng(7), 97 if n_bench > 5000 else 13)
        v = copies(small)
        r = ref(*v)
        returns = r is not None
        want = outputs(v, r)
        problems = []
        for label, fn in [("numpy", np_fn), ("numba", nb_fn)]:
            if fn is None:
                continue
            v = copies(small)
            try:
                err = close(outputs(v, fn(*v), returns), want)
            except Exception as e:  # a Numba typing error, ...
                err = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            if err:
                problems.append(f"{label}: {err}")
        try:
            err = close(appy_run(a.appy, file, func, params, small, env), want)
            if err:
                problems.append(f"appy: {err}")
        except RuntimeError as e:
            problems.append(f"appy failed: {e}")
        vals = gen(np.random.default_rng(11), n_bench)
        if not problems:
            # At the benchmark size: appy against the NumPy implementation.
            v = copies(vals)
            want = outputs(v, np_fn(*v), returns)
            n_in = sum(x.size for x in vals if isinstance(x, np.ndarray))
            got = appy_run(a.appy, file, func, params, vals, env)
            err = close(got, want, n_in)
            if err and any(isinstance(x, np.ndarray) and x.dtype == np.float32 for x in vals):
                v64 = [x.astype(np.float64) if isinstance(x, np.ndarray) and x.dtype == np.float32 else x for x in copies(vals)]
                err = close(got, want, n_in, outputs(v64, np_fn(*v64), returns))
            if err:
                problems.append(f"appy at the benchmark size: {err}")
        if problems:
            bad += 1
            print(f"FAIL {name}: " + "; ".join(problems), flush=True)
            continue
        if a.check_only:
            print(f"ok   {name}", flush=True)
            continue
        t_appy = appy_bench(a.appy, file, func, params, vals, a.repeat, env)
        t_np = time_python(np_fn, vals, a.repeat)
        t_nb = time_python(nb_fn, vals, a.repeat) if nb_fn else float("nan")
        shapes = ", ".join("x".join(map(str, v.shape)) + " " + str(v.dtype) for v in vals if isinstance(v, np.ndarray) and v.size > 1)
        rows.append((name, shapes, t_appy, t_np, t_nb, "source" if np_impl is SOURCE else "whole-array"))
        print(f"{name:<16} appy {t_appy*1e3:9.3f} ms   numpy {t_np*1e3:9.3f} ms   numba {t_nb*1e3:9.3f} ms   "
              f"numpy/appy {t_np/t_appy:6.2f}   numba/appy {t_nb/t_appy:6.2f}", flush=True)
    if rows:
        print()
        print("| kernel | inputs | appy ms | NumPy ms | Numba ms | NumPy / appy | Numba / appy |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for name, shapes, ta, tn, tb, kind in rows:
            mark = "" if kind != "source" else " (source)"
            print(f"| {name} | {shapes} | {ta*1e3:.3f} | {tn*1e3:.3f}{mark} | {tb*1e3:.3f} | {tn/ta:.2f} | {tb/ta:.2f} |")
        r_np = np.array([r[3] / r[2] for r in rows])
        r_nb = np.array([r[4] / r[2] for r in rows])
        print(f"\ngeomean NumPy/appy {np.exp(np.log(r_np).mean()):.2f}, Numba/appy {np.exp(np.nanmean(np.log(r_nb))):.2f}; "
              f"appy slower than NumPy on {int((r_np < 1).sum())}, more than 1.3x slower than Numba on {int((r_nb < 1 / 1.3).sum())} of {len(rows)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
