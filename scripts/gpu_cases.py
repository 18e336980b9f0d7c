#!/usr/bin/env python3
"""GPU correctness and bandwidth checks for the example kernels.

Two steps, because the GPU machine has no compiler:

  python3 scripts/gpu_cases.py compile [--appy target/release/appy] [--out DIR]
      compiles every case to a bundle (host program + PTX) with `appy compile`
      and records the compile times;
  python3 scripts/gpu_cases.py check --runner DIR/appy-runner [--dir DIR]
      on the GPU machine: runs every bundle with `appy exec` on random inputs and
      compares with CPython + NumPy running the same source (pragmas are comments);
      GPU_CASES_ONLY=PREFIX limits `check` and `sanitize` to the cases named so;
  python3 scripts/gpu_cases.py sanitize-cases --runner DIR/appy-runner [--dir DIR]
      on the GPU machine: compute-sanitizer memcheck, racecheck and synccheck over the
      `# test:` cases (GPU_CASES_ONLY=a,b: the functions or files named so);
  python3 scripts/gpu_cases.py bench --runner DIR/appy-runner [--dir DIR]
      times vector add (2^26 float32) and the row-wise sum (8192x8192 float64) on
      device-resident data against the device-to-device copy bandwidth (torch).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

# name: (file, func, signature, input generator(rng, size variant) -> list of args)
def _cases():
    import numpy as np

    def arr(rng, shape, dtype, lo=-1.0, hi=1.0):
        return (rng.random(shape) * (hi - lo) + lo).astype(dtype)

    def csr(rng, rows, cols, max_nnz):
        nnz = rng.integers(0, max_nnz + 1, rows)
        indptr = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int64)
        indices = rng.integers(0, cols, indptr[-1]).astype(np.int32)
        return indptr, indices, arr(rng, indptr[-1], np.float64)

    def spmv(rng, n):
        rows, cols = n, 53
        p, i, v = csr(rng, rows, cols, 40)
        return [p, i, v, arr(rng, cols, np.float64), arr(rng, rows, np.float64), rows + 1]

    def lower(rng, n, dtype):
        # Well conditioned: small off-diagonal entries, a diagonal in [1, 2].
        L = np.tril(arr(rng, (n, n), dtype)) / n
        L[np.diag_indices(n)] = arr(rng, n, dtype, 1.0, 2.0)
        return L

    def spd(rng, n, dtype, extra=0, bad=False):
        # Symmetric positive definite (B Bᵀ + n I), with `extra` rows and columns of noise
        # beyond the leading n x n block; `bad` puts a negative pivot in the middle.
        B = arr(rng, (n, n), np.float64)
        A = arr(rng, (n + extra, n + extra), np.float64)
        A[:n, :n] = B @ B.T + n * np.eye(n)
        if bad:
            A[n // 2, n // 2] = -1.0e6
        if n > 2:
            # The strict upper triangle is never read and must come back as it was.
            A[0, n - 1], A[0, 1], A[1, n - 1] = np.inf, np.nan, -0.0
        return A.astype(dtype)

    return {
        "h_time_loop": ("host_reads.py", "time_loop", "f64[:,:],f64[:],int",
                        lambda r, n: [arr(r, (2, n), np.float64), arr(r, 12, np.float64), 11]),
        "h_before_loop": ("host_reads.py", "before_loop", "f64[:,:],f64[:],int",
                          lambda r, n: [arr(r, (1, n), np.float64), arr(r, n, np.float64), 5]),
        "h_read_then_write": ("host_reads.py", "read_then_write", "f64[:,:],int",
                              lambda r, n: [arr(r, (n, 37), np.float64), 7]),
        "s_trisolv": ("solvers.py", "trisolv", "f64[:,:],f64[:],f64[:]",
                      lambda r, n: [lower(r, n, np.float64), arr(r, n, np.float64), arr(r, n, np.float64)]),
        "s_trisolv_inplace": ("solvers.py", "trisolv_inplace", "f32[:,:],f32[:],int",
                              lambda r, n: [lower(r, n + 3, np.float32), arr(r, n + 3, np.float32), n]),
        "s_cholesky": ("solvers.py", "cholesky", "f64[:,:]", lambda r, n: [spd(r, n // 4 + 1, np.float64)]),
        "s_cholesky_f32": ("solvers.py", "cholesky", "f32[:,:]", lambda r, n: [spd(r, n // 4 + 1, np.float32)]),
        "s_cholesky_block": ("solvers.py", "cholesky_block", "f64[:,:],int",
                             lambda r, n: [spd(r, n // 4 + 1, np.float64, extra=5), n // 4 + 1]),
        "s_cholesky_rows": ("solvers.py", "cholesky_rows", "f64[:,:]", lambda r, n: [spd(r, n // 4 + 1, np.float64)]),
        "s_cholesky_rows_f32": ("solvers.py", "cholesky_rows", "f32[:,:]", lambda r, n: [spd(r, n // 4 + 1, np.float32)]),
        "s_cholesky_not_pd": ("solvers.py", "cholesky", "f64[:,:]", lambda r, n: [spd(r, n // 4 + 1, np.float64, bad=True)]),
        "vector_add": ("vector_add.py", "vector_add", "f32[:],f32[:],f32[:],int",
                       lambda r, n: [arr(r, n, np.float32), arr(r, n, np.float32), arr(r, n, np.float32), n]),
        "vector_sum": ("vector_sum.py", "vector_sum", "f64[:],f64[:],int",
                       lambda r, n: [arr(r, n, np.float64), arr(r, 1, np.float64), n]),
        "shared_sum": ("shared_sum.py", "shared_sum", "f64[:],int", lambda r, n: [arr(r, n, np.float64), n]),
        "int_init_sum": ("shared_sum.py", "int_init_sum", "f32[:],int", lambda r, n: [arr(r, n, np.float32), n]),
        "masked_max": ("shared_sum.py", "masked_max", "f32[:],int", lambda r, n: [arr(r, n, np.float32, 0, 1), n]),
        "spmv": ("spmv.py", "spmv", "i64[:],i32[:],f64[:],f64[:],f64[:],int", spmv),
        "row_sum": ("rowwise.py", "row_sum", "f64[:,:],f64[:],int,int",
                    lambda r, n: [arr(r, (n // 7 + 1, n), np.float64), arr(r, n // 7 + 1, np.float64), n // 7 + 1, n]),
        "row_max": ("rowwise.py", "row_max", "f64[:,:],f64[:],int,int",
                    lambda r, n: [arr(r, (n // 7 + 1, n), np.float64), arr(r, n // 7 + 1, np.float64), n // 7 + 1, n]),
        "row_min": ("rowwise.py", "row_min", "f32[:,:],f32[:],int,int",
                    lambda r, n: [arr(r, (n // 7 + 1, n), np.float32), arr(r, n // 7 + 1, np.float32), n // 7 + 1, n]),
        "gemver": ("gemver.py", "gemver", "float,float,f64[:,:]," + ",".join(["f64[:]"] * 8) + ",int",
                   lambda r, n: [1.5, 1.2, arr(r, (n // 4 + 1, n // 4 + 1), np.float64)]
                   + [arr(r, n // 4 + 1, np.float64) for _ in range(8)] + [n // 4 + 1]),
        "softmax": ("softmax.py", "softmax", "f32[:,:],f32[:,:],int,int",
                    lambda r, n: [arr(r, (n // 9 + 1, n), np.float32, -4, 4), arr(r, (n // 9 + 1, n), np.float32), n // 9 + 1, n]),
        "softmax_f64": ("softmax.py", "softmax", "f64[:,:],f64[:,:],int,int",
                        lambda r, n: [arr(r, (n // 9 + 1, n), np.float64, -4, 4), arr(r, (n // 9 + 1, n), np.float64), n // 9 + 1, n]),
        "relu_blend": ("vidx_where.py", "relu_blend", "f64[:],f64[:],f64[:],int",
                       lambda r, n: [arr(r, n, np.float64), arr(r, n, np.float64), arr(r, n, np.float64), n]),
        "block_sums": ("vidx_where.py", "block_sums", "f64[:],f64[:],int",
                       lambda r, n: [arr(r, n, np.float64), arr(r, (n + 255) // 256, np.float64), n]),
        "prefix_rows": ("prefix_rows.py", "prefix_rows", "f64[:,:],int,int",
                        lambda r, n: [arr(r, (n // 5 + 1, 37), np.float64), n // 5 + 1, 37]),
        "recurrence": ("prefix_rows.py", "recurrence", "f64[:],f64[:],int",
                       lambda r, n: [arr(r, n // 10 + 2, np.float64), arr(r, n // 10 + 2, np.float64), n // 10 + 2]),
        "jacobi_1d": ("jacobi_1d.py", "jacobi_1d", "f64[:],f64[:],int,int",
                      lambda r, n: [arr(r, n, np.float64), arr(r, n, np.float64), n, 10]),
        "vsum": ("prange.py", "vsum", "f64[:],int", lambda r, n: [arr(r, n, np.float64), n]),
        "masked_sum": ("prange.py", "masked_sum", "f64[:],int", lambda r, n: [arr(r, n, np.float64, 0, 1), n]),
        "go_fast": ("prange.py", "go_fast", "f64[:,:],int", lambda r, n: [arr(r, (n // 9 + 1, n // 9 + 1), np.float64), n // 9 + 1]),
        "azimint_like": ("prange.py", "azimint_like", "f64[:],f64[:],float,float,int",
                         lambda r, n: [arr(r, n, np.float64), arr(r, n, np.float64, 0, 10), 2.5, 7.0, n]),
        "add_one": ("prange.py", "add_one", "f64[:],int", lambda r, n: [arr(r, n, np.float64), n]),
        "col_sums": ("prange.py", "col_sums", "f64[:],f64[:,:],int,int",
                     lambda r, n: [arr(r, n % 300 + 3, np.float64), arr(r, (n // 7 + 2, n % 300 + 3), np.float64), n // 7 + 2, n % 300 + 3]),
        "row_sums": ("prange.py", "row_sums", "f64[:],f64[:,:],int,int",
                     lambda r, n: [arr(r, n // 7 + 2, np.float64), arr(r, (n // 7 + 2, n % 300 + 3), np.float64), n // 7 + 2, n % 300 + 3]),
        "softmax_tensor": ("softmax_tensor.py", "softmax_tensor", "f32[:,:],f32[:,:],int,int",
                           lambda r, n: [arr(r, (n // 9 + 1, n), np.float32, -4, 4), arr(r, (n // 9 + 1, n), np.float32), n // 9 + 1, n]),
        "group_by_sum": ("softmax_tensor.py", "group_by_sum", "f64[:,:],i64[:],f64[:,:],int,int",
                         lambda r, n: [arr(r, (n // 9 + 1, n), np.float64), r.integers(0, 3, n // 9 + 1).astype(np.int64),
                                       arr(r, (3, n), np.float64), n // 9 + 1, n]),
        "saxpy_slice": ("softmax_tensor.py", "saxpy_slice", "float,f64[:],f64[:],int",
                        lambda r, n: [1.5, arr(r, n, np.float64), arr(r, n, np.float64), n]),
        "t_gesummv": ("tensor_paper.py", "gesummv", "float,float,f64[:,:],f64[:,:],f64[:],f64[:],f64[:],int,int",
                      lambda r, n: [1.5, -0.5, arr(r, (n // 7 + 1, n), np.float64), arr(r, (n // 7 + 1, n), np.float64),
                                    arr(r, n, np.float64), arr(r, n // 7 + 1, np.float64), arr(r, n // 7 + 1, np.float64), n // 7 + 1, n]),
        "t_jacobi_2d": ("tensor_paper.py", "jacobi_2d_one_iteration", "f32[:,:],f32[:,:],int,int",
                        lambda r, n: [arr(r, (n // 9 + 2, n // 3 + 2), np.float32), arr(r, (n // 9 + 2, n // 3 + 2), np.float32), n // 9 + 2, n // 3 + 2]),
        "t_mv_alpha": ("tensor_paper.py", "mv_alpha", "float,f32[:,:],f32[:],f32[:]",
                       lambda r, n: [0.75, arr(r, (n // 5 + 1, n), np.float32), arr(r, n, np.float32), arr(r, n // 5 + 1, np.float32)]),
        "t_shift": ("tensor_paper.py", "shift", "f64[:,:],f64[:,:],int,int",
                    lambda r, n: [arr(r, (n // 9 + 1, n), np.float64), arr(r, (n // 9 + 1, n), np.float64), n // 9 + 1, n]),
        "t_outer_add": ("tensor_paper.py", "outer_add", "f64[:],f64[:],f64[:,:],int,int",
                        lambda r, n: [arr(r, n // 9 + 1, np.float64), arr(r, n, np.float64), arr(r, (n // 9 + 1, n), np.float64), n // 9 + 1, n]),
        "t_column_sum": ("tensor_paper.py", "column_sum", "f64[:,:],f64[:],int,int",
                         lambda r, n: [arr(r, (n // 9 + 1, n), np.float64), arr(r, n, np.float64), n // 9 + 1, n]),
        "t_layernorm": ("tensor_paper.py", "layernorm", "f32[:,:],f32[:],f32[:],f32[:,:],int,int,float",
                        lambda r, n: [arr(r, (n // 9 + 1, n), np.float32, -2, 2), arr(r, n, np.float32), arr(r, n, np.float32),
                                      arr(r, (n // 9 + 1, n), np.float32), n // 9 + 1, n, 1e-5]),
        "t_heat_3d": ("tensor_paper.py", "heat_3d", "f64[:,:,:],f64[:,:,:],int,int",
                      lambda r, n: [arr(r, (n // 100 + 3,) * 3, np.float64), arr(r, (n // 100 + 3,) * 3, np.float64), n // 100 + 3, 6]),
        "t_fused_chain": ("tensor_bench.py", "fused_chain", "f32[:],f32[:],f32[:],int",
                          lambda r, n: [arr(r, n, np.float32), arr(r, n, np.float32), arr(r, n, np.float32), n]),
        "t_softmax_rows": ("tensor_bench.py", "softmax_rows", "f32[:,:],f32[:,:],int,int",
                           lambda r, n: [arr(r, (n // 9 + 1, n), np.float32, -4, 4), arr(r, (n // 9 + 1, n), np.float32), n // 9 + 1, n]),
        "t_gemm": ("tensor_matmul.py", "gemm", "float,float,f64[:,:],f64[:,:],f64[:,:],int,int,int",
                   lambda r, n: [1.5, 0.5, arr(r, (n // 9 + 1, n // 7 + 2), np.float64), arr(r, (n // 9 + 1, n // 5 + 3), np.float64),
                                 arr(r, (n // 5 + 3, n // 7 + 2), np.float64), n // 9 + 1, n // 7 + 2, n // 5 + 3]),
        "t_at_b": ("tensor_matmul.py", "at_b", "f32[:,:],f32[:,:],f32[:,:],int,int,int",
                   lambda r, n: [arr(r, (n // 5 + 3, n // 9 + 1), np.float32), arr(r, (n // 5 + 3, n // 7 + 2), np.float32),
                                 arr(r, (n // 9 + 1, n // 7 + 2), np.float32), n // 9 + 1, n // 7 + 2, n // 5 + 3]),
        "t_sub_block": ("tensor_matmul.py", "sub_block", "f64[:,:],f64[:,:],f64[:,:],int,int",
                        lambda r, n: [arr(r, (n // 9 + 2, n // 7 + 2), np.float64), arr(r, (n // 7 + 2, n // 7 + 2), np.float64),
                                      arr(r, (n // 9 + 2, n // 7 + 2), np.float64), n // 9 + 2, n // 7 + 2]),
        "t_vec_mat": ("tensor_matmul.py", "vec_mat", "f64[:,:],f64[:],f64[:],int,int",
                      lambda r, n: [arr(r, (n // 9 + 1, n), np.float64), arr(r, n // 9 + 1, np.float64), arr(r, n, np.float64), n // 9 + 1, n]),
        "heat_2d": ("jacobi_1d.py", "heat_2d", "f64[:,:],f64[:,:],int,int,int",
                    lambda r, n: [arr(r, (n // 9 + 3, n // 3 + 3), np.float64), arr(r, (n // 9 + 3, n // 3 + 3), np.float64),
                                  n // 9 + 3, n // 3 + 3, 4]),
    }


MVLS = [256, 512, 1024, 2048]

MOVEMENT = {
    "mv_scale_row": ("data_movement.py", "scale_row", "f64[:,:],int,int"),
    "mv_two_regions": ("data_movement.py", "two_regions", "f64[:],f64[:],int"),
    "fault_big": ("data_movement.py", "big_temporary", "f64[:],int"),
}

BENCH = {
    "bench_vector_add": ("vector_add.py", "vector_add", "f32[:],f32[:],f32[:],int"),
    "bench_row_sum": ("rowwise.py", "row_sum", "f64[:,:],f64[:],int,int"),
    "bench_fused_chain": ("tensor_bench.py", "fused_chain", "f32[:],f32[:],f32[:],int"),
    "bench_softmax_rows": ("tensor_bench.py", "softmax_rows", "f32[:,:],f32[:,:],int,int"),
    "bench_softmax_tensor": ("softmax_tensor.py", "softmax_tensor", "f32[:,:],f32[:,:],int,int"),
}


def compile_all(args):
    os.makedirs(args.out, exist_ok=True)
    times = {}
    # The examples use the default MVL, except block_sums, whose result depends on
    # appy.MVL (the oracle's shim says 256).
    items = [(k, v[0], v[1], v[2], 256 if k == "block_sums" else 1024) for k, v in _cases().items()]
    items += [(f"{k}_mvl{m}", *v, m) for k, v in BENCH.items() for m in MVLS]
    items += [(k, *v, 1024) for k, v in MOVEMENT.items()]
    for name, f, func, sig, mvl in items:
        out = os.path.join(args.out, name + ".json")
        cmd = [args.appy, "compile", os.path.join(ROOT, "examples", f), "--func", func, "--signature", sig, "--mvl", str(mvl), "-o", out]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            print(f"COMPILE FAIL {name}: {p.stderr}")
            sys.exit(1)
        ms = float(p.stderr.split(" in ")[-1].split(" ms")[0])
        times[name] = ms
        print(f"compiled {name:<14} {ms:7.1f} ms (source -> PTX, in-process; process {dt*1e3:.0f} ms)")
    json.dump(times, open(os.path.join(args.out, "compile_times.json"), "w"), indent=1)
    compile_cases(args)


def case_bundle(d, path, func, k):
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.join(d, "cases", f"{stem}__{func}__{k}.json")


def compile_cases(args):
    """The `# test:` cases of tests/cases/*.py and examples/*.py (scripts/cases.py), and
    tests/cases/printing.py's `report`."""
    import cases
    failed = 0
    os.makedirs(os.path.join(args.out, "cases"), exist_ok=True)
    for path, func, k, spec in cases.all_specs():
        out = case_bundle(args.out, path, func, k)
        cmd = [args.appy, "compile", path, "--func", func, "--signature", spec.signature(), "--mvl", str(spec.mvl), "-o", out]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"COMPILE FAIL {path}::{func}: {p.stderr}")
            failed += 1
    p = subprocess.run([args.appy, "compile", os.path.join(ROOT, "tests", "cases", "printing.py"), "--func", "report",
                        "--signature", "f64[:],int", "-o", os.path.join(args.out, "cases", "printing__report.json")],
                       capture_output=True, text=True)
    failed += p.returncode != 0
    print(f"compiled {len(cases.all_specs())} test cases ({failed} failed)")
    if failed:
        sys.exit(1)


def oracle_at(path, func, vals, longdouble=False):
    """Runs `func` of `path` under CPython + NumPy (float arrays in long double when
    `longdouble`, rounded back); returns the final arguments and the return value."""
    import importlib.util
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
    spec = importlib.util.spec_from_file_location("k_" + func, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    dts = [v.dtype if isinstance(v, np.ndarray) else None for v in vals]
    vals = [v.copy() if isinstance(v, np.ndarray) else v for v in vals]
    if longdouble:
        vals = [v.astype(np.longdouble) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v for v in vals]
    with np.errstate(all="ignore"):
        ret = getattr(mod, func)(*vals)
    if longdouble:
        vals = [v.astype(d) if d is not None and v.dtype == np.longdouble else v for v, d in zip(vals, dts)]
        conv = lambda r: np.asarray(r).astype(np.float64) if np.asarray(r).dtype == np.longdouble else r  # noqa: E731
        ret = tuple(conv(r) for r in ret) if isinstance(ret, tuple) else (None if ret is None else conv(ret))
    return vals, ret


def check_cases(args):
    """Every `# test:` case on the GPU against the oracle, and `print` against Python."""
    import cases
    import numpy as np
    ok = fail = 0
    only = os.environ.get("GPU_CASES_ONLY", "")
    for path, func, k, spec in cases.all_specs():
        if not func.startswith(only) and not os.path.basename(path).startswith(only):
            continue
        bundle = case_bundle(args.dir, path, func, k)
        params = [n for n, _ in spec.params]
        bad_case = []
        for c in range(spec.cases()):
            seed = sum(map(ord, func)) * 1000 + c
            vals = spec.args(c, np.random.default_rng(seed))
            want, want_ret = oracle_at(path, func, vals, spec.refld)
            with tempfile.TemporaryDirectory() as d:
                p = run_bundle(args.runner, bundle, params, vals, d)
                if p.returncode != 0:
                    bad_case.append(f"{spec.env(c)}: {p.stderr.strip()}")
                    continue
                for pn, v, w in zip(params, vals, want):
                    if isinstance(v, np.ndarray):
                        e = cases.compare(spec, np.load(os.path.join(d, pn + ".npy")), w)
                        if e:
                            bad_case.append(f"{spec.env(c)}: {pn}: {e}")
                if want_ret is not None:
                    rets = want_ret if isinstance(want_ret, tuple) else (want_ret,)
                    for r, w in enumerate(rets):
                        fname = "return.npy" if len(rets) == 1 else f"return_{r}.npy"
                        e = cases.compare(spec, np.load(os.path.join(d, fname)), w)
                        if e:
                            bad_case.append(f"{spec.env(c)}: {fname}: {e}")
        name = f"{os.path.basename(path)}::{func}[{k}]"
        if bad_case:
            fail += 1
            print(f"FAIL {name}: " + "; ".join(bad_case))
        else:
            ok += 1
            print(f"ok   {name} ({spec.cases()} sizes)")
    # print(...) from the host code, against Python's output.
    a = np.array([0.5, 1.25, -3.0, 1e-7, 123456789.0])
    with tempfile.TemporaryDirectory() as d:
        p = run_bundle(args.runner, os.path.join(args.dir, "cases", "printing__report.json"), ["a", "n"], [a.copy(), 5], d)
        import contextlib
        import io
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            oracle_at(os.path.join(ROOT, "tests", "cases", "printing.py"), "report", [a.copy(), 5])
        if p.returncode == 0 and p.stdout == buf.getvalue():
            ok += 1
            print("ok   printing.py::report (stdout equals Python's)")
        else:
            fail += 1
            print(f"FAIL printing.py::report:\n--- appy\n{p.stdout}{p.stderr}--- python\n{buf.getvalue()}")
    print(f"cases: {ok} passed, {fail} failed")
    return fail == 0


def run_bundle(runner, bundle, params, vals, outdir, extra=(), prefix=(), env=None):
    """Runs `runner exec bundle` with the values as .npy files / literals; `prefix`
    wraps the command (e.g. compute-sanitizer), `env` replaces the environment."""
    import numpy as np
    cmd = [*prefix, runner, "exec", bundle, "--out", outdir, *extra]
    for p, v in zip(params, vals):
        if isinstance(v, np.ndarray):
            path = os.path.join(outdir, "in_" + p + ".npy")
            np.save(path, v)
            cmd += ["--arg", f"{p}=@{path}"]
        else:
            cmd += ["--arg", f"{p}={v!r}"]
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def oracle(f, func, vals):
    import importlib.util
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
    spec = importlib.util.spec_from_file_location("k_" + func, os.path.join(ROOT, "examples", f))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    vals = [v.copy() if isinstance(v, np.ndarray) else v for v in vals]
    ret = getattr(mod, func)(*vals)
    return vals, ret


def check_all(args):
    import numpy as np
    ok = fail = 0
    only = os.environ.get("GPU_CASES_ONLY", "")
    for name, (f, func, sig, gen) in _cases().items():
        if not name.startswith(only):
            continue
        bundle = os.path.join(args.dir, name + ".json")
        params = json.load(open(bundle))["params"]
        for k, n in enumerate([1, 257, 1000, 4097]):
            rng = np.random.default_rng(1000 + k)
            vals = gen(rng, n)
            want, want_ret = oracle(f, func, vals)
            with tempfile.TemporaryDirectory() as d:
                p = run_bundle(args.runner, bundle, params, vals, d)
                if p.returncode != 0:
                    print(f"FAIL {name} n={n}: {p.stderr.strip()}")
                    fail += 1
                    continue
                bad = []
                for pn, v, w in zip(params, vals, want):
                    if isinstance(v, np.ndarray):
                        got = np.load(os.path.join(d, pn + ".npy"))
                        tol = dict(rtol=2e-4, atol=2e-5) if got.dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
                        if not np.allclose(got, w, **tol, equal_nan=True):
                            bad.append(f"{pn}: max |diff| {np.nanmax(np.abs(got - w)):.3e}")
                if want_ret is not None:
                    rets = want_ret if isinstance(want_ret, tuple) else (want_ret,)
                    for k, w in enumerate(rets):
                        fname = "return.npy" if len(rets) == 1 else f"return_{k}.npy"
                        got = np.load(os.path.join(d, fname))
                        if not np.allclose(got, w, rtol=1e-6, atol=1e-9):
                            bad.append(f"{fname}: {got} vs {w}")
                if bad:
                    print(f"FAIL {name} n={n}: {'; '.join(bad)}")
                    fail += 1
                else:
                    ok += 1
        print(f"ok   {name}")
    print(f"{ok} passed, {fail} failed")
    return fail == 0


def movement(args):
    """Counted transfers: one row of a 4096x4096 matrix; two consecutive regions."""
    import numpy as np
    ok = True
    rng = np.random.default_rng(3)
    cases = [
        ("mv_scale_row", "scale_row", [rng.random((4096, 4096)), 17, 4096], 4096 * 8, 4096 * 8),
        ("mv_two_regions", "two_regions", [rng.random(1 << 20), rng.random(1 << 20), 1 << 20], 2 * 8 << 20, 2 * 8 << 20),
    ]
    # With the arrays already in device buffers (`--resident`), the runtime copies nothing.
    cases.append(("mv_two_regions", "two_regions", [rng.random(1 << 20), rng.random(1 << 20), 1 << 20], 0, 0))
    for k, (name, func, vals, want_htod, want_dtoh) in enumerate(cases):
        bundle = os.path.join(args.dir, name + ".json")
        params = json.load(open(bundle))["params"]
        want, _ = oracle("data_movement.py", func, vals)
        extra = ["--stats"] + (["--resident"] if k == len(cases) - 1 else [])
        with tempfile.TemporaryDirectory() as d:
            p = run_bundle(args.runner, bundle, params, vals, d, extra=extra)
            line = [l for l in p.stdout.splitlines() if l.startswith("stats:")]
            if p.returncode != 0 or not line:
                print(f"FAIL {name}: {p.stderr}")
                ok = False
                continue
            st = dict(kv.split("=") for kv in line[0].split()[1:])
            correct = all(np.allclose(np.load(os.path.join(d, pn + ".npy")), w) for pn, v, w in zip(params, vals, want) if isinstance(v, np.ndarray))
            good = int(st["htod_bytes"]) == want_htod and int(st["dtoh_bytes"]) == want_dtoh and correct
            ok &= good
            total = sum(v.nbytes for v in vals if isinstance(v, np.ndarray))
            print(f"{'ok  ' if good else 'FAIL'} {func}{' (device buffers)' if '--resident' in extra else ''}: launches={st['launches']} htod={st['htod_bytes']} B dtoh={st['dtoh_bytes']} B "
                  f"(expected {want_htod}/{want_dtoh}; whole arrays: {total} B each way), results match NumPy: {correct}")
    return ok


def tiling(args):
    """A forced small device memory budget (APPY_DEVICE_BUDGET): launches run in tiles
    whose data fits, and the results still match NumPy."""
    import numpy as np
    ok = True
    rng = np.random.default_rng(11)
    cases = [
        ("vector_add", [rng.random(1 << 20, dtype=np.float32), rng.random(1 << 20, dtype=np.float32), np.zeros(1 << 20, np.float32), 1 << 20]),
        ("row_sum", [rng.random((2000, 3000)), np.zeros(2000), 2000, 3000]),
        ("heat_2d", [rng.random((700, 900)), rng.random((700, 900)), 700, 900, 3]),
        ("vector_sum", [rng.random(1 << 20), np.zeros(1), 1 << 20]),
        ("spmv", _cases()["spmv"][3](rng, 20000)),
    ]
    env = dict(os.environ, APPY_DEVICE_BUDGET=str(1 << 20))
    for name, vals in cases:
        f, func = _cases()[name][0], _cases()[name][1]
        bundle = os.path.join(args.dir, name + ".json")
        params = json.load(open(bundle))["params"]
        want, want_ret = oracle(f, func, vals)
        with tempfile.TemporaryDirectory() as d:
            p = run_bundle(args.runner, bundle, params, vals, d, extra=["--stats"], env=env)
            line = [l for l in p.stdout.splitlines() if l.startswith("stats:")]
            if p.returncode != 0 or not line:
                print(f"FAIL {name}: {p.stderr}")
                ok = False
                continue
            st = dict(kv.split("=") for kv in line[0].split()[1:])
            correct = True
            for pn, v, w in zip(params, vals, want):
                if isinstance(v, np.ndarray):
                    got = np.load(os.path.join(d, pn + ".npy"))
                    tol = dict(rtol=2e-4, atol=2e-5) if got.dtype == np.float32 else dict(rtol=1e-9, atol=1e-9)
                    correct &= bool(np.allclose(got, w, **tol))
            good = correct and (int(st["tiles"]) > 1 or name == "spmv")
            ok &= good
            total = sum(v.nbytes for v in vals if isinstance(v, np.ndarray))
            print(f"{'ok  ' if good else 'FAIL'} {name}: budget 1 MiB, arrays {total >> 20} MiB: tiles={st['tiles']} launches={st['launches']} "
                  f"htod={st['htod_bytes']} B, results match NumPy: {correct}")
    return ok


def faults(args):
    """Failures on the GPU are clean errors: a PTX the driver rejects, a device out of
    memory, a bundle that is not JSON. Never a crash or an abort."""
    import numpy as np
    ok = True
    src = json.load(open(os.path.join(args.dir, "vector_add.json")))
    with tempfile.TemporaryDirectory() as d:
        bad = dict(src, ptx=src["ptx"].replace(".entry", ".entyr"))
        json.dump(bad, open(os.path.join(d, "bad_ptx.json"), "w"))
        open(os.path.join(d, "garbage.json"), "w").write("{ not json")
        vals = [np.ones(10, np.float32), np.ones(10, np.float32), np.zeros(10, np.float32), 10]
        cases = [
            ("bad_ptx.json", src["params"], vals, "rejected the PTX"),
            ("garbage.json", src["params"], vals, "not a valid appy bundle"),
            (os.path.join(args.dir, "fault_big.json"), ["a", "N"], [np.ones(4, np.float64), 4_000_000], "out of memory"),
        ]
        for bundle, params, v, want in cases:
            path = bundle if os.path.isabs(bundle) else os.path.join(d, bundle)
            p = run_bundle(args.runner, path, params, v, d)
            good = p.returncode not in (0,) and p.returncode > 0 and want in p.stderr and "panicked" not in p.stderr
            ok &= good
            print(f"{'ok  ' if good else 'FAIL'} {os.path.basename(bundle)}: exit {p.returncode}: {p.stderr.strip().splitlines()[0] if p.stderr.strip() else ''}")
    return ok


def sanitize(args):
    """compute-sanitizer memcheck and racecheck over every example bundle (n=1000)."""
    import numpy as np
    bad = 0
    only = os.environ.get("GPU_CASES_ONLY", "")
    for tool in ["memcheck", "racecheck"]:
        for name, (f, func, sig, gen) in _cases().items():
            if only and not name.startswith(only):
                continue
            bundle = os.path.join(args.dir, name + ".json")
            params = json.load(open(bundle))["params"]
            vals = gen(np.random.default_rng(5), 1000)
            with tempfile.TemporaryDirectory() as d:
                sanitizer = ["compute-sanitizer", "--tool", tool, "--error-exitcode", "3"]
                p = run_bundle(args.runner, bundle, params, vals, d, prefix=sanitizer)
                summary = [l for l in p.stdout.splitlines() if "ERROR SUMMARY" in l or "RACECHECK SUMMARY" in l]
                status = "ok  " if p.returncode == 0 else "FAIL"
                if p.returncode != 0:
                    bad += 1
                print(f"{status} {tool:<9} {name:<12} {' '.join(summary).replace('=========', '').strip()}")
                if p.returncode != 0:
                    print(p.stdout[-2000:], p.stderr[-2000:])
    print(f"sanitizer: {bad} failing runs")
    return bad == 0


def sanitize_cases(args):
    """compute-sanitizer memcheck, racecheck and synccheck over the `# test:` cases (the
    largest size of each); GPU_CASES_ONLY=a,b limits them to functions or files whose
    names start with one of the prefixes."""
    import cases
    import numpy as np
    only = tuple(p for p in os.environ.get("GPU_CASES_ONLY", "").split(",") if p)
    bad = 0
    for path, func, k, spec in cases.all_specs():
        if only and not (func.startswith(only) or os.path.basename(path).startswith(only)):
            continue
        bundle = case_bundle(args.dir, path, func, k)
        params = [n for n, _ in spec.params]
        vals = spec.args(spec.cases() - 1, np.random.default_rng(1))
        for tool in ["memcheck", "racecheck", "synccheck"]:
            with tempfile.TemporaryDirectory() as d:
                sanitizer = ["compute-sanitizer", "--tool", tool, "--error-exitcode", "3"]
                p = run_bundle(args.runner, bundle, params, vals, d, prefix=sanitizer)
                summary = [l.replace("=========", "").strip() for l in p.stdout.splitlines() if "SUMMARY" in l]
                bad += p.returncode != 0
                status = "ok  " if p.returncode == 0 else "FAIL"
                print(f"{status} {tool:<9} {os.path.basename(path)}::{func} {' '.join(summary[-1:])}")
                if p.returncode != 0:
                    print(p.stdout[-2000:], p.stderr[-2000:])
    print(f"sanitizer: {bad} failing runs")
    return bad == 0


def bench(args):
    import numpy as np
    import torch
    res = {}
    # Device-to-device copy bandwidth (read + write bytes / time), same run.
    n = 1 << 28
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    ts = []
    for _ in range(20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        dst.copy_(src)
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    copy_bw = 2 * n / min(ts)
    res["copy_GBs"] = copy_bw / 1e9
    print(f"device copy bandwidth: {copy_bw/1e9:.0f} GB/s (torch copy_ of {n>>20} MiB, best of 20)")
    rng = np.random.default_rng(0)
    cases = {
        "bench_vector_add": (lambda: [rng.random(1 << 26, dtype=np.float32), rng.random(1 << 26, dtype=np.float32),
                                      np.zeros(1 << 26, np.float32), 1 << 26], 3 * 4 * (1 << 26)),
        "bench_row_sum": (lambda: [rng.random((8192, 8192)), np.zeros(8192), 8192, 8192], 8 * 8192 * 8192 + 8 * 8192),
        "bench_fused_chain": (lambda: [rng.random(1 << 26, dtype=np.float32), rng.random(1 << 26, dtype=np.float32),
                                       np.zeros(1 << 26, np.float32), 1 << 26], 3 * 4 * (1 << 26)),
        "bench_softmax_rows": (lambda: [rng.random((4096, 4096), dtype=np.float32), np.zeros((4096, 4096), np.float32), 4096, 4096],
                               2 * 4 * 4096 * 4096),
        "bench_softmax_tensor": (lambda: [rng.random((4096, 4096), dtype=np.float32), np.zeros((4096, 4096), np.float32), 4096, 4096],
                                 2 * 4 * 4096 * 4096),
    }
    # torch.softmax on the same 4096x4096 float32 input, same run.
    x = torch.rand((4096, 4096), dtype=torch.float32, device="cuda")
    for _ in range(5):
        y = torch.softmax(x, dim=1)
    torch.cuda.synchronize()
    ts = []
    for _ in range(50):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        y = torch.softmax(x, dim=1)
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    res["torch_softmax_4096_f32"] = {"min_ms": ts[0], "median_ms": ts[len(ts) // 2]}
    print(f"torch.softmax 4096x4096 f32: min {ts[0]:.3f} ms median {ts[len(ts) // 2]:.3f} ms "
          f"-> {2 * 4 * 4096 * 4096 / (ts[0] / 1e3) / 1e9:.0f} GB/s")
    for (base, (gen, nbytes)), mvl in [(c, m) for c in cases.items() for m in MVLS]:
        name = f"{base}_mvl{mvl}"
        bundle = os.path.join(args.dir, name + ".json")
        params = json.load(open(bundle))["params"]
        with tempfile.TemporaryDirectory() as d:
            p = run_bundle(args.runner, bundle, params, gen(), d, extra=["--bench", "50"])
            if p.returncode != 0:
                print(f"FAIL {name}: {p.stderr}")
                continue
            line = [l for l in p.stdout.splitlines() if l.startswith("bench:")][0]
            mn, med, mx = map(float, line.split()[1:])
            bw = nbytes / (mn / 1e3)
            res[name] = {"min_ms": mn, "median_ms": med, "GBs": bw / 1e9, "fraction_of_copy": bw / copy_bw}
            print(f"{name:<26} min {mn:.3f} ms median {med:.3f} ms -> {bw/1e9:.0f} GB/s = {100*bw/copy_bw:.1f}% of copy")
    print(json.dumps(res))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["compile", "check", "cases", "bench", "sanitize", "sanitize-cases", "movement", "faults", "tiling"])
    ap.add_argument("--appy", default=os.path.join(ROOT, "target", "release", "appy"))
    ap.add_argument("--runner", default=os.path.join(ROOT, ".dev", "gpu", "appy-runner"))
    ap.add_argument("--out", default=os.path.join(ROOT, ".dev", "gpu"))
    ap.add_argument("--dir", default=os.path.join(ROOT, ".dev", "gpu"))
    a = ap.parse_args()
    if a.mode == "compile":
        compile_all(a)
    elif a.mode == "tiling":
        sys.exit(0 if tiling(a) else 1)
    elif a.mode == "faults":
        sys.exit(0 if faults(a) else 1)
    elif a.mode == "movement":
        sys.exit(0 if movement(a) else 1)
    elif a.mode == "sanitize":
        sys.exit(0 if sanitize(a) else 1)
    elif a.mode == "sanitize-cases":
        sys.exit(0 if sanitize_cases(a) else 1)
    elif a.mode == "check":
        good = check_all(a)
        sys.exit(0 if check_cases(a) and good else 1)
    elif a.mode == "cases":
        sys.exit(0 if check_cases(a) else 1)
    else:
        bench(a)


if __name__ == "__main__":
    main()
