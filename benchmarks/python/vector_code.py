#!/usr/bin/env python3
"""Seed 002's code generation (APPY_GPU_VECTOR=1: a thread's lanes consecutive,
unrolled and jammed, redundant loads removed, vector loads and stores) against the
default code and against torch and torch.compile, on device-resident torch tensors:

    python3 benchmarks/python/vector_code.py [--reps 20]

appy runs in three child processes (the options are read when a function compiles),
each checking its results against torch's first: the plain code at the default vector
length (APPY_AUTOTUNE=0), the same with seed 002's code generation forced
(APPY_AUTOTUNE=0 APPY_GPU_VECTOR=1), and the autotuned default, whose candidates
include the vector code at the default vector length (the choice is printed). Each figure is the median over 7 rounds of the mean time of `reps` calls, the
device synchronized after each call (appy's calls on device arrays return once queued)."""
import argparse
import json
import os
import sys

import torch

import appy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import run_modes, timed  # noqa: E402


@appy.jit
def matmul_loops(A, B, C):
    #pragma parallel for
    for i in range(A.shape[0]):
        #pragma simd
        for j in range(B.shape[1]):
            acc = 0.0
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


@appy.jit
def matvec(A, x, y):
    #pragma parallel for
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] = s


@appy.jit
def jacobi_sweep(A, B):
    n, m = A.shape
    #pragma parallel for
    for i in range(1, n - 1):
        B[i, 1:m - 1] = 0.2 * (A[i, 1:m - 1] + A[i, :m - 2] + A[i, 2:] + A[i + 1, 1:m - 1] + A[i - 1, 1:m - 1])


@appy.jit
def triad(a, b, c, s):
    #pragma parallel for simd
    for i in range(a.shape[0]):
        a[i] = b[i] + s * c[i]


def cases(dev):
    """(name, appy function, args, torch reference of the output, output index, bytes moved, peer)."""
    g = torch.Generator(device=dev).manual_seed(0)

    def r(*shape, dtype=torch.float32):
        return torch.rand(*shape, device=dev, dtype=dtype, generator=g) - 0.5

    out = []
    A, B = r(4096, 4096), r(4096, 4096)
    out.append(("matmul_loops 4096² f32", matmul_loops, [A, B, torch.zeros_like(A)], lambda: A @ B, 2,
                3 * 4 * 4096 * 4096, lambda: A @ B))
    for dt, name in ((torch.float32, "f32"), (torch.float64, "f64")):
        M, x = r(16384, 4096, dtype=dt), r(4096, dtype=dt)
        out.append((f"matvec 16384×4096 {name}", matvec, [M, x, torch.zeros(16384, device=dev, dtype=dt)],
                    (lambda M=M, x=x: M @ x), 2, M.element_size() * (M.numel() + 4096 + 16384), (lambda M=M, x=x: M @ x)))
    J = r(4096, 4096, dtype=torch.float64)

    def jac_ref(J=J):
        Bj = torch.zeros_like(J)
        Bj[1:-1, 1:-1] = 0.2 * (J[1:-1, 1:-1] + J[1:-1, :-2] + J[1:-1, 2:] + J[2:, 1:-1] + J[:-2, 1:-1])
        return Bj
    out.append(("jacobi_2d sweep 4096² f64", jacobi_sweep, [J, torch.zeros_like(J)], jac_ref, 1, 2 * 8 * 4096 * 4096, jac_ref))
    n = 1 << 26
    b, c = r(n), r(n)
    out.append(("triad 2^26 f32", triad, [torch.zeros_like(b), b, c, 1.5], lambda: b + 1.5 * c, 0, 12 * n,
                lambda: torch.add(b, c, alpha=1.5)))
    return out


def child(reps):
    dev = torch.device("cuda")
    res = {}
    for name, f, args, want, k, nbytes, _ in cases(dev):
        f(*args)
        torch.cuda.synchronize()
        w = want()
        got = args[k]
        if k == 1 and name.startswith("jacobi"):
            got = got[1:-1, 1:-1]
            w = w[1:-1, 1:-1]
        err = ((got - w).abs().max() / w.abs().max().clamp_min(1e-30)).item()
        tol = 1e-3 if got.dtype == torch.float32 else 1e-10
        us = timed(lambda: f(*args), reps, torch.cuda.synchronize)
        res[name] = {"us": us, "gbs": nbytes / us / 1e3, "ok": err < tol, "err": err}
    print(json.dumps(res))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        child(a.reps)
        return
    envs = {
        "plain": {"APPY_AUTOTUNE": "0", "APPY_GPU_VECTOR": "0"},
        "vector": {"APPY_AUTOTUNE": "0", "APPY_GPU_VECTOR": "1"},
        "tuned": {"APPY_AUTOTUNE": "1", "APPY_GPU_VECTOR": "0", "APPY_PRINT_AUTOTUNING": "1"},
    }
    modes = run_modes(__file__, envs, a.reps)
    dev = torch.device("cuda")
    print(f"# {torch.cuda.get_device_name()}, {a.reps} calls per round")
    print(f"{'kernel':28} {'plain µs':>9} {'vector µs':>10} {'tuned µs':>9} {'torch µs':>9} {'compile µs':>10} {'plain/vector':>12} {'compile/tuned':>13} check")
    for name, _, _, _, _, nbytes, peer in cases(dev):
        sync = torch.cuda.synchronize
        t_torch = timed(peer, a.reps, sync)
        comp = torch.compile(peer)
        t_comp = timed(comp, a.reps, sync)
        d, v, t = modes["plain"][name], modes["vector"][name], modes["tuned"][name]
        bad = [f"{m} {modes[m][name]['err']:.1e}" for m in modes if not modes[m][name]["ok"]]
        ok = "ok" if not bad else "WRONG " + ", ".join(bad)
        print(f"{name:28} {d['us']:9.1f} {v['us']:10.1f} {t['us']:9.1f} {t_torch:9.1f} {t_comp:10.1f} {d['us'] / v['us']:12.2f} {t_comp / t['us']:13.2f} {ok}")


if __name__ == "__main__":
    main()
