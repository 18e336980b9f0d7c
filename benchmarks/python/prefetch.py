#!/usr/bin/env python3
"""`transform(prefetch(a))` (a group's shared reads loaded once into shared memory)
against the same source without it, and against torch and torch.compile, on
device-resident torch tensors, in one process:

    python3 benchmarks/python/prefetch.py [--n2 4096] [--n1 67108864] [--reps 50]

* jacobi_2d, one sweep of an n2 x n2 float64 grid (rows in parallel, columns in
  vector lanes): the tiles of rows i-1, i, i+1;
* a 17-tap filter over n1 float32 points, the tap loop unrolled: one tile of MVL + 16;
* the 1-D Jacobi of APPy's slides (n1 float64 points): prefetch against the
  hand-written scratchpad (`appy.buffer`) and the plain loop.

Each figure is the median over 7 rounds of the mean time of `reps` calls, the device
synchronized after each call (appy's calls on device arrays return once queued)."""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import timed  # noqa: E402

import appy  # noqa: E402


@appy.jit
def jacobi2d(A, B):
    #pragma parallel for
    for i in range(1, A.shape[0] - 1):
        #pragma simd
        for j in range(1, A.shape[1] - 1):
            B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])


@appy.jit
def jacobi2d_prefetch(A, B):
    #pragma parallel for transform(prefetch(A))
    for i in range(1, A.shape[0] - 1):
        #pragma simd
        for j in range(1, A.shape[1] - 1):
            B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])


@appy.jit
def conv17(a, w, out):
    #pragma parallel for simd transform(tag(k, unr))
    for i in range(a.shape[0] - 16):
        s = 0.0
        for k in range(17):
            s += w[k] * a[i + k]
        out[i] = s


@appy.jit
def conv17_prefetch(a, w, out):
    #pragma parallel for simd transform(tag(k, unr), prefetch(a))
    for i in range(a.shape[0] - 16):
        s = 0.0
        for k in range(17):
            s += w[k] * a[i + k]
        out[i] = s


@appy.jit
def jacobi1d(inp, out):
    #pragma parallel for simd
    for i in range(1, inp.shape[0] - 1):
        out[i] = (inp[i - 1] + inp[i] + inp[i + 1]) / 3.0


@appy.jit
def jacobi1d_prefetch(inp, out):
    #pragma parallel for simd transform(prefetch(inp))
    for i in range(1, inp.shape[0] - 1):
        out[i] = (inp[i - 1] + inp[i] + inp[i + 1]) / 3.0


@appy.jit
def jacobi1d_buffer(inp, out):
    #pragma parallel for
    for i in range(1, inp.shape[0] - 1, 1024):
        buf = appy.buffer(1024 + 2)
        buf[:] = inp[i - 1:i + 1025]
        out[i:i + 1024] = (buf[:-2] + buf[1:-1] + buf[2:]) / 3.0


def t_jacobi2d(A, B):
    B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])


def t_conv17(a, w, out):
    out[:-16] = torch.nn.functional.conv1d(a.view(1, 1, -1), w.view(1, 1, -1)).view(-1)


def t_conv17_sum(a, w, out):
    m = a.shape[0] - 16
    s = w[0] * a[0:m]
    for k in range(1, 17):
        s = s + w[k] * a[k:k + m]
    out[:m] = s


def t_jacobi1d(inp, out):
    out[1:-1] = (inp[:-2] + inp[1:-1] + inp[2:]) / 3.0


def table(title, rows, nbytes):
    print(f"# {title}")
    base = rows[0][1]
    print(f"{'variant':44} {'us':>9} {'GB/s':>7} {'first/this':>10}  check")
    for name, us, ok in rows:
        print(f"{name:44} {us:9.1f} {nbytes / us / 1e3:7.0f} {base / us:10.2f}  {ok}")


def run(variants, args, want, reps, rtol, atol, outpos=-1):
    rows = []
    sync = torch.cuda.synchronize
    for name, fn, is_torch in variants:
        a = list(args)
        a[outpos] = torch.zeros_like(a[outpos])
        fn(*a)
        sync()
        ok = "ok" if torch.allclose(a[outpos], want, rtol=rtol, atol=atol) else "WRONG"
        us = timed(lambda: fn(*a), reps, sync)
        rows.append((name, us, ok))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n2", type=int, default=4096)
    ap.add_argument("--n1", type=int, default=1 << 26)
    ap.add_argument("--reps", type=int, default=50)
    o = ap.parse_args()
    torch.manual_seed(0)
    print(f"# {torch.cuda.get_device_name()}, {o.reps} calls per round")

    A = torch.rand(o.n2, o.n2, device="cuda", dtype=torch.float64)
    B = torch.zeros_like(A)
    t_jacobi2d(A, B)
    rows = run([("appy, prefetch(A)", jacobi2d_prefetch, False), ("appy", jacobi2d, False),
                ("torch", t_jacobi2d, True), ("torch.compile", torch.compile(t_jacobi2d), True)],
               (A, B), B.clone(), o.reps, 1e-12, 1e-14)
    table(f"jacobi_2d sweep, {o.n2}x{o.n2} float64", rows, 16 * o.n2 * o.n2)

    a = torch.rand(o.n1, device="cuda", dtype=torch.float32)
    w = torch.rand(17, device="cuda", dtype=torch.float32)
    out = torch.zeros_like(a)
    t_conv17_sum(a, w, out)
    rows = run([("appy, tag(k, unr), prefetch(a)", conv17_prefetch, False), ("appy, tag(k, unr)", conv17, False),
                ("torch (conv1d)", t_conv17, True), ("torch (17 slices)", t_conv17_sum, True),
                ("torch.compile (17 slices)", torch.compile(t_conv17_sum), True)],
               (a, w, out), out.clone(), o.reps, 1e-4, 1e-5)
    table(f"17-tap filter, {o.n1} float32", rows, 8 * o.n1)

    n = (o.n1 // 1024) * 1024 + 2
    x = torch.rand(n, device="cuda", dtype=torch.float64)
    y = torch.zeros_like(x)
    t_jacobi1d(x, y)
    rows = run([("appy, prefetch(inp)", jacobi1d_prefetch, False), ("appy", jacobi1d, False),
                ("appy, appy.buffer tiles of 1024", jacobi1d_buffer, False),
                ("torch", t_jacobi1d, True), ("torch.compile", torch.compile(t_jacobi1d), True)],
               (x, y), y.clone(), o.reps, 1e-12, 1e-14)
    table(f"1-D Jacobi, {n} float64", rows, 16 * n)


if __name__ == "__main__":
    main()
