#!/usr/bin/env python3
"""Loop transforms (`transform(...)` clauses) against the same kernel without them and
against torch and torch.compile, on device-resident float32 torch tensors, in one
process:

    python3 benchmarks/python/transforms.py [--m 16384] [--n 4096] [--reps 50]

Two matrix-vector products, each checked against torch first:
- `y = A @ x` (row i reduced over j): by default the inner loop is vectorised (a row per
  group, lanes over j); `seq` runs one row per thread; `seq_unr8` splits that row's loop
  into chunks of 8 unrolled iterations; `seq_unr8_g64` also makes the groups 64 threads.
- `y = A.T @ x` (column j reduced over i): `seq` gives each thread a column, so the
  threads of a warp read consecutive elements; `seq_unr8` unrolls its loop by 8.

Each figure is the median over 7 rounds of the mean time of `reps` calls, the device
synchronized after each call (appy's calls on device arrays return once queued), with the
effective bandwidth (bytes of A and x read, y written, over the time)."""
import argparse

import os
import sys

import torch

import appy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import timed  # noqa: E402


@appy.jit
def mv_default(A, x, y):
    #pragma parallel for
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] = s


@appy.jit
def mv_seq(A, x, y):
    #pragma parallel for
    for i in range(A.shape[0]):
        s = 0.0
        #pragma sequential for
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] = s


@appy.jit
def mv_seq_unr8(A, x, y):
    #pragma parallel for transform(split(j, 8, inner=unr))
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] = s


@appy.jit
def mv_seq_unr8_g64(A, x, y):
    #pragma parallel for transform(split(i, 64, outer=g.0, inner=l.0), split(j, 8, inner=unr))
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] = s


@appy.jit
def mvt_default(A, x, y):
    #pragma parallel for
    for j in range(A.shape[1]):
        s = 0.0
        for i in range(A.shape[0]):
            s += A[i, j] * x[i]
        y[j] = s


@appy.jit
def mvt_seq(A, x, y):
    #pragma parallel for
    for j in range(A.shape[1]):
        s = 0.0
        #pragma sequential for
        for i in range(A.shape[0]):
            s += A[i, j] * x[i]
        y[j] = s


@appy.jit
def mvt_seq_unr8(A, x, y):
    #pragma parallel for transform(split(i, 8, inner=unr))
    for j in range(A.shape[1]):
        s = 0.0
        for i in range(A.shape[0]):
            s += A[i, j] * x[i]
        y[j] = s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=16384)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    A = torch.rand(a.m, a.n, device=dev, dtype=torch.float32) - 0.5
    x = torch.rand(a.n, device=dev, dtype=torch.float32) - 0.5
    xt = torch.rand(a.m, device=dev, dtype=torch.float32) - 0.5
    sync = torch.cuda.synchronize
    print(f"# {torch.cuda.get_device_name()}, A {a.m}x{a.n} float32, {a.reps} calls per round")
    rows = []
    compiled = torch.compile(lambda A, x: A @ x)
    compiled_t = torch.compile(lambda A, x: A.T @ x)
    for label, want, fns, peers, vec in (
        ("A @ x", A @ x, [mv_default, mv_seq, mv_seq_unr8, mv_seq_unr8_g64],
         [("torch", lambda: A @ x), ("torch.compile", lambda: compiled(A, x))], x),
        ("A.T @ x", A.T @ xt, [mvt_default, mvt_seq, mvt_seq_unr8],
         [("torch", lambda: A.T @ xt), ("torch.compile", lambda: compiled_t(A, xt))], xt),
    ):
        nbytes = 4 * (a.m * a.n + vec.numel() + want.numel())
        base = None
        for f in fns:
            y = torch.zeros_like(want)
            f(A, vec, y)
            sync()
            err = (y - want).abs().max().item() / max(want.abs().max().item(), 1e-30)
            ok = "ok" if err < 1e-4 else f"WRONG (rel err {err:.2e})"
            us = timed(lambda: f(A, vec, y), a.reps, sync)
            base = base or us
            rows.append((label, f"appy {f.__name__}", us, nbytes / us / 1e3, ok, base / us))
        for name, p in peers:
            us = timed(p, a.reps, sync)
            rows.append((label, name, us, nbytes / us / 1e3, "", base / us))
    print(f"{'kernel':8} {'variant':28} {'us':>9} {'GB/s':>7} {'default/this':>12}  check")
    for r in rows:
        print(f"{r[0]:8} {r[1]:28} {r[2]:9.1f} {r[3]:7.0f} {r[5]:12.2f}  {r[4]}")


if __name__ == "__main__":
    main()
