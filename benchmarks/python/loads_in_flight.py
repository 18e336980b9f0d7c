#!/usr/bin/env python3
"""Loads in flight (BENCHMARKS.md, 2026-11-30 03:02–03:43 UTC): a copy and NPBench's
go_fast at 12 500² float64, each with a row per worker (`*_rows`: the default for a
statement without a pragma before d405d2f) and over rows × strips (`*_grid`: the default
for an element-wise statement since), timed with `appy exec --bench` next to torch's
`copy_`, `a + s` and go_fast in the same call; every result checked against NumPy.

    # build machine, once per build of appy to compare:
    python3 benchmarks/python/loads_in_flight.py compile --appy target/debug/appy --out DIR
    # GPU machine (torch installed), one or more bundle folders:
    python3 benchmarks/python/loads_in_flight.py run --runner appy DIR [DIR ...]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

try:
    import appy
except ImportError:  # `compile` reads only the source; `run` times bundles

    class appy:  # noqa: N801
        jit = staticmethod(lambda f: f)

N = 12_500
MVLS = (1024, 2048)


@appy.jit
def copy_rows(a, out):
    N = a.shape[0]
    #pragma :N=>parallel :N=>simd
    out[:N, :N] = a[:N, :N]


@appy.jit
def copy_grid(a, out):
    N = a.shape[0]
    #pragma :N=>parallel :N=>parallel
    out[:N, :N] = a[:N, :N]


@appy.jit
def go_fast_rows(a, out):
    N = a.shape[0]
    trace = 0.0
    #pragma parallel for shared(trace)
    for i in range(N):
        trace += np.tanh(a[i, i])
    #pragma :N=>parallel :N=>simd
    out[:N, :N] = a[:N, :N] + trace


@appy.jit
def go_fast_grid(a, out):
    N = a.shape[0]
    trace = 0.0
    #pragma parallel for shared(trace)
    for i in range(N):
        trace += np.tanh(a[i, i])
    #pragma :N=>parallel :N=>parallel
    out[:N, :N] = a[:N, :N] + trace


FUNCS = ("copy_rows", "copy_grid", "go_fast_rows", "go_fast_grid")


def compile_all(a):
    os.makedirs(a.out, exist_ok=True)
    for f in FUNCS:
        for m in MVLS:
            out = os.path.join(a.out, f"{f}_{m}.json")
            cmd = [a.appy, "compile", os.path.abspath(__file__), "--func", f, "--signature", "f64[:,:],f64[:,:]", "--mvl", str(m), "-o", out]
            subprocess.run(cmd, check=True, capture_output=True, text=True)
            print("compiled", out)


def expected(f, a):
    if f.startswith("copy"):
        return a
    return a + np.tanh(np.diagonal(a)).sum()


def torch_times():
    import torch

    a = torch.rand(N, N, dtype=torch.float64, device="cuda")
    out = torch.empty_like(a)

    def t(f, n=20):
        f()
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
        for i in range(n):
            ev[i].record()
            f()
            ev[i + 1].record()
        torch.cuda.synchronize()
        return sorted(ev[i].elapsed_time(ev[i + 1]) for i in range(n))[n // 2]

    print(f"torch copy_          {t(lambda: out.copy_(a)):.4f} ms", flush=True)
    print(f"torch add(out=)      {t(lambda: torch.add(a, 1.5, out=out)):.4f} ms", flush=True)
    print(f"torch a + s          {t(lambda: a + 1.5):.4f} ms", flush=True)
    print(f"torch go_fast        {t(lambda: a + torch.sum(torch.tanh(torch.diagonal(a)))):.4f} ms", flush=True)


def run(a):
    rng = np.random.default_rng(0)
    x = rng.random((N, N)) + 0.5
    with tempfile.TemporaryDirectory() as d:
        np.save(os.path.join(d, "a.npy"), x)
        np.save(os.path.join(d, "o.npy"), np.ones_like(x))
        for folder in a.dirs:
            for f in FUNCS:
                want = expected(f, x)
                for m in MVLS:
                    b = os.path.join(folder, f"{f}_{m}.json")
                    o = os.path.join(d, "res")
                    os.makedirs(o, exist_ok=True)
                    cmd = [a.runner, "exec", b, "--arg", f"a=@{d}/a.npy", "--arg", f"out=@{d}/o.npy", "--out", o, "--bench", "20", "--resident"]
                    p = subprocess.run(cmd, capture_output=True, text=True)
                    line = [l for l in p.stdout.splitlines() if l.startswith("bench:")]
                    got = np.load(os.path.join(o, "out.npy")) if p.returncode == 0 else None
                    ok = got is not None and np.allclose(got, want, rtol=1e-12, atol=0)
                    med = line[0].split()[2] if line else "failed"
                    print(f"{folder}: {f:<14} MVL {m:<5} median {med} ms  {'agrees with NumPy' if ok else 'WRONG or failed: ' + p.stderr[-300:]}", flush=True)
    torch_times()


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("compile")
    c.add_argument("--appy", default="appy")
    c.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--runner", default="appy")
    r.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    compile_all(a) if a.mode == "compile" else run(a)


if __name__ == "__main__":
    sys.exit(main())
