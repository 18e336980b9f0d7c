#!/usr/bin/env python3
"""Checked mode and integer division on the GPU.

  python3 scripts/gpu_checked.py compile [--appy target/release/appy] [--out .dev/gpu/checked]
      compiles tests/checked/kernels.py with `appy compile --bounds-check` (and the
      division kernel without it);
  python3 scripts/gpu_checked.py check --runner .dev/gpu/appy-runner [--dir .dev/gpu/checked]
      on the GPU machine: an out-of-bounds read and write are errors naming the
      subscript (exit non-zero, no outputs written); in-range and negative indices give
      NumPy's results; `//` and `%` by zero give 0 with one warning; a negative
      dimension is an error.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import gpu_cases  # noqa: E402
SRC = os.path.join(ROOT, "tests", "checked", "kernels.py")
KERNELS = {
    "shift": ("f64[:],f64[:],int", True),
    "write_past": ("f64[:],f64[:],int", True),
    "prev": ("f64[:],f64[:],int", True),
    "column": ("f64[:,:],f64[:],int", True),
    "divs": ("i64[:],i64[:],i64[:],i64[:]", False),
    "make": ("int,int", False),
}


def line_of(text):
    for k, ln in enumerate(open(SRC), 1):
        if text in ln:
            return k, ln.index(text.strip()) + 1
    raise AssertionError(text)


def compile_all(a):
    os.makedirs(a.out, exist_ok=True)
    bad = 0
    for f, (sig, checked) in KERNELS.items():
        cmd = [a.appy, "compile", SRC, "--func", f, "--signature", sig, "-o", os.path.join(a.out, f + ".json")]
        if checked:
            cmd.append("--bounds-check")
        p = subprocess.run(cmd, capture_output=True, text=True)
        print(("ok   " if p.returncode == 0 else "FAIL ") + f + ("" if p.returncode == 0 else ": " + p.stderr))
        bad += p.returncode != 0
    sys.exit(1 if bad else 0)


def run(a, f, args):
    """Runs kernel `f` with `gpu_cases.run_bundle`; returns the process and the outputs
    (None when it wrote none)."""
    d = tempfile.mkdtemp()
    p = gpu_cases.run_bundle(a.runner, os.path.join(a.dir, f + ".json"), list(args), list(args.values()), d)
    res = {k[:-4]: np.load(os.path.join(d, k)) for k in os.listdir(d) if k.endswith(".npy") and not k.startswith("in_")}
    return p, res or None


def check(a):
    ok = fail = 0

    def expect(name, cond, detail=""):
        nonlocal ok, fail
        if cond:
            ok += 1
            print(f"ok   {name}")
        else:
            fail += 1
            print(f"FAIL {name}: {detail}")

    rng = np.random.default_rng(7)
    n = 100000
    x = rng.random(n) + 0.5
    for f, marker in [("shift", "a[i + 1]"), ("write_past", "b[i + 3]")]:
        p, res = run(a, f, {"a": x, "b": np.ones(n), "n": n})
        l, c = line_of(marker)
        want = f"kernels.py:{l}:{c}: error: index "
        expect(f"{f}: out of bounds is an error at its subscript",
               p.returncode != 0 and want in p.stderr and f"out of bounds for axis 0 with size {n}" in p.stderr
               and res is None, p.stderr)
    p, res = run(a, "shift", {"a": x, "b": np.ones(n - 1), "n": n - 1})
    expect("shift in range equals NumPy", p.returncode == 0 and np.array_equal(res["b"], x[1:]), p.stderr)
    p, res = run(a, "prev", {"a": x, "b": np.ones(n), "n": n})
    expect("negative index counts from the end", p.returncode == 0 and np.array_equal(res["b"], np.roll(x, 1)), p.stderr)
    A = rng.random((257, 3))
    p, res = run(a, "column", {"A": A, "b": np.ones(257), "j": 3})
    expect("axis 1 is named", "out of bounds for axis 1 with size 3" in p.stderr, p.stderr)
    p, res = run(a, "column", {"A": A, "b": np.ones(257), "j": -1})
    expect("A[i, -1]", p.returncode == 0 and np.array_equal(res["b"], A[:, -1]), p.stderr)
    ia = np.array([7, -7, 5, np.iinfo(np.int64).min, 9] * 1000, dtype=np.int64)
    ib = np.array([2, 2, 0, -1, 0] * 1000, dtype=np.int64)
    p, res = run(a, "divs", {"a": ia, "b": ib, "q": np.zeros_like(ia), "r": np.zeros_like(ia)})
    with np.errstate(all="ignore"):
        wq, wr = ia // ib, ia % ib
    expect("// and % by zero give NumPy's results", p.returncode == 0 and np.array_equal(res["q"], wq)
           and np.array_equal(res["r"], wr), p.stderr)
    expect("one divide-by-zero warning", p.stderr.count("warning: divide by zero") == 1, p.stderr)
    expect("one overflow warning", p.stderr.count("warning: overflow encountered in floor_divide") == 1, p.stderr)
    p, res = run(a, "make", {"n": 3, "m": -2})
    expect("negative dimension is an error", p.returncode != 0 and "negative dimensions are not allowed" in p.stderr, p.stderr)
    print(f"checked: {ok} passed, {fail} failed")
    sys.exit(1 if fail else 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["compile", "check"])
    ap.add_argument("--appy", default=os.path.join(ROOT, "target", "release", "appy"))
    ap.add_argument("--runner", default=os.path.join(ROOT, ".dev", "gpu", "appy-runner"))
    ap.add_argument("--out", default=os.path.join(ROOT, ".dev", "gpu", "checked"))
    ap.add_argument("--dir", default=os.path.join(ROOT, ".dev", "gpu", "checked"))
    a = ap.parse_args()
    compile_all(a) if a.mode == "compile" else check(a)


if __name__ == "__main__":
    main()
