#!/usr/bin/env python3
"""APPy's own programs (its README blocks and examples/ folder, copied unchanged into
tests/appy_repo/) against the `appy` package.

    python3 scripts/appy_examples.py [--dir tests/appy_repo]           # run each full program: python FILE.py
    python3 scripts/appy_examples.py --check [--dir tests/appy_repo]   # compile each jitted function on NumPy inputs (CPU)

Running needs torch (and, for the examples/ files, which call
`torch.set_default_device('cuda')`, a GPU). `--check` needs neither: it takes each
file's `@appy.jit` functions without running the file's other code, calls them on
NumPy inputs with the sizes and references of tests/appy_repo/CATALOGUE.md, and prints
which compile and match NumPy and which the compiler refuses (with its diagnostic)."""
import argparse
import ast
import contextlib
import io
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FULL_PROGRAMS = ["readme_01_increment_by_1.py", "docs/docs_01_add_one.py", "01-vec_add.py", "02-vec_sum.py",
                 "03-spmv.py", "04-masked_sum.py", "05-gemv.py", "06-spmm.py"]


def run_programs(d):
    ok = 0
    for f in FULL_PROGRAMS:
        path = os.path.join(d, f)
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, os.path.basename(path)], cwd=os.path.dirname(path), capture_output=True, text=True, timeout=1800)
        dt = time.perf_counter() - t0
        tail = (p.stdout + p.stderr).strip().splitlines()[-3:]
        status = "ok" if p.returncode == 0 else f"exit {p.returncode}"
        ok += p.returncode == 0
        print(f"{f:32s} {status:8s} {dt:6.1f} s | " + " / ".join(tail))
    print(f"{ok} of {len(FULL_PROGRAMS)} programs ran to the end")
    return ok == len(FULL_PROGRAMS)


def jitted_functions(path):
    """The file's `@appy.jit` functions, defined from the file's own lines (so that
    locations are the file's) without running the rest of the file."""
    import appy
    src = open(path).read()
    tree = ast.parse(src)
    keep = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
            and all(a.name.split(".")[0] in ("numpy", "appy") for a in n.names)]
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in n.decorator_list)]
    mod = ast.Module(body=keep + funcs, type_ignores=[])
    ns = {"appy": appy, "np": np, "__name__": "appy_example"}
    from appy import jit, prange  # noqa: F401  (docs fragments use them unimported)
    ns.update(jit=jit, prange=prange)
    exec(compile(mod, path, "exec"), ns)
    return {f.name: ns[f.name] for f in funcs}


def csr(rng, M, N, density):
    D = rng.standard_normal((M, N)) * (rng.random((M, N)) < density)
    indptr = np.r_[0, np.cumsum((D != 0).sum(1))].astype(np.int64)
    indices = np.nonzero(D)[1].astype(np.int64)
    return D, D[D != 0], indptr, indices


def cases(rng):
    """(file, function, args builder, check) per CATALOGUE.md."""
    a32, b32 = rng.standard_normal(10007).astype(np.float32), rng.standard_normal(10007).astype(np.float32)
    a64 = rng.standard_normal(10007)
    mask = rng.integers(0, 2, 10007) > 0
    D, data, indptr, indices = csr(rng, 501, 499, 0.05)
    x = rng.standard_normal(499)
    B = rng.standard_normal((499, 37))
    A = rng.standard_normal((257, 263))
    C0 = rng.standard_normal((61, 61))
    As = rng.standard_normal((61, 73))
    close = lambda r, want, rtol=1e-5, atol=1e-6: np.allclose(r, want, rtol=rtol, atol=atol)  # noqa: E731
    y6 = np.empty((501, 37))
    C = C0.copy()
    inc = np.arange(10)
    ones = np.zeros(10)
    return [
        ("01-vec_add.py", "kernel_appy", lambda: (a32, b32), lambda r, a: close(r, a32 + b32)),
        ("02-vec_sum.py", "kernel_appy", lambda: (a32,), lambda r, a: close(r, a32.sum(), 1e-4, 1e-3)),
        ("03-spmv.py", "kernel_appy", lambda: (data, indptr, indices, x, 501, 499), lambda r, a: close(r, D @ x, 1e-6, 1e-6)),
        ("04-masked_sum.py", "kernel_appy1", lambda: (a64, mask), lambda r, a: close(r, a64[mask].sum())),
        ("04-masked_sum.py", "kernel_appy2", lambda: (a64, mask), lambda r, a: close(r, a64[mask].sum())),
        ("05-gemv.py", "kernel_appy", lambda: (1.0, A, A[0].copy()[:263]), lambda r, a: close(r, A @ a[2])),
        ("06-spmm.py", "kernel_appy", lambda: (data, indptr, indices, B, y6, 501), lambda r, a: close(y6, D @ B, 1e-6, 1e-6)),
        ("readme_01_increment_by_1.py", "increment_by_1", lambda: (inc,), lambda r, a: inc.tolist() == list(range(1, 11))),
        ("readme_02_vector_sum.py", "vector_sum", lambda: (a64,), lambda r, a: r is None),
        ("readme_03_syrk.py", "syrk", lambda: (1.5, 1.2, C, As),
         lambda r, a: close(C, np.tril(1.5 * As @ As.T + 1.2 * C0) + np.triu(C0, 1), 1e-10, 1e-10)),
        ("docs/docs_01_add_one.py", "add_one", lambda: (ones,), lambda r, a: ones.tolist() == [1.0] * 10),
        ("docs/docs_02_sum_vector.py", "sum_vector", lambda: (np.ones(10), 10), lambda r, a: r == 10.0),
    ]


def check(d):
    import appy
    appy.device("cpu")
    rng = np.random.default_rng(0)
    good = 0
    all_cases = cases(rng)
    for f, fn, make, ok in all_cases:
        path = os.path.join(d, f)
        try:
            k = jitted_functions(path)[fn]
            args = make()
            with contextlib.redirect_stdout(io.StringIO()):  # dump_code=True output
                r = k(*args)
            res = "matches NumPy" if ok(r, args) else "WRONG RESULT"
            good += res == "matches NumPy"
        except appy.CompileError as e:
            first = str(e).splitlines()
            res = "refused: " + first[0].split(": error: ", 1)[-1]
        except Exception as e:
            res = f"error: {type(e).__name__}: {e}"
        print(f"{f + ' :: ' + fn:45s} {res}")
    print(f"{good} of {len(all_cases)} functions compile and match NumPy on the CPU")
    return good == len(all_cases)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=os.path.join(ROOT, "tests", "appy_repo"))
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    sys.exit(0 if (check(a.dir) if a.check else run_programs(a.dir)) else 1)
