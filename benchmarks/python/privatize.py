#!/usr/bin/env python3
"""`transform(privatize(tmp))` (a temporary each iteration uses at its own element made
a scalar of the iteration) on gesummv, `y = alpha*A@x + beta*B@x` with the products in
temporaries as NPBench's loop form writes them, against the same source without it and
against torch and torch.compile, on device-resident float64 torch tensors:

    python3 benchmarks/python/privatize.py [--n 8192] [--reps 20]

Two schedules: the default (a row per group, its dot products in the group's lanes) and
a row per thread (`#pragma sequential for` on the inner loop). Each figure is the median
over 7 rounds of the mean time of `reps` calls."""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import timed  # noqa: E402

import appy  # noqa: E402


@appy.jit
def gesummv(A, B, x, y, alpha, beta):
    tmp = np.empty(A.shape[0])
    #pragma parallel for
    for i in range(A.shape[0]):
        tmp[i] = 0.0
        y[i] = 0.0
        for j in range(A.shape[1]):
            tmp[i] += A[i, j] * x[j]
            y[i] += B[i, j] * x[j]
        y[i] = alpha * tmp[i] + beta * y[i]


@appy.jit
def gesummv_private(A, B, x, y, alpha, beta):
    tmp = np.empty(A.shape[0])
    #pragma parallel for transform(privatize(tmp))
    for i in range(A.shape[0]):
        tmp[i] = 0.0
        y[i] = 0.0
        for j in range(A.shape[1]):
            tmp[i] += A[i, j] * x[j]
            y[i] += B[i, j] * x[j]
        y[i] = alpha * tmp[i] + beta * y[i]


@appy.jit
def gesummv_rows(A, B, x, y, alpha, beta):
    tmp = np.empty(A.shape[0])
    #pragma parallel for
    for i in range(A.shape[0]):
        tmp[i] = 0.0
        y[i] = 0.0
        #pragma sequential for
        for j in range(A.shape[1]):
            tmp[i] += A[i, j] * x[j]
            y[i] += B[i, j] * x[j]
        y[i] = alpha * tmp[i] + beta * y[i]


@appy.jit
def gesummv_rows_private(A, B, x, y, alpha, beta):
    tmp = np.empty(A.shape[0])
    #pragma parallel for transform(privatize(tmp))
    for i in range(A.shape[0]):
        tmp[i] = 0.0
        y[i] = 0.0
        #pragma sequential for
        for j in range(A.shape[1]):
            tmp[i] += A[i, j] * x[j]
            y[i] += B[i, j] * x[j]
        y[i] = alpha * tmp[i] + beta * y[i]


def t_gesummv(A, B, x, y, alpha, beta):
    y.copy_(alpha * (A @ x) + beta * (B @ x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=20)
    o = ap.parse_args()
    torch.manual_seed(0)
    A = torch.rand(o.n, o.n, device="cuda", dtype=torch.float64) - 0.5
    B = torch.rand(o.n, o.n, device="cuda", dtype=torch.float64) - 0.5
    x = torch.rand(o.n, device="cuda", dtype=torch.float64) - 0.5
    want = torch.zeros(o.n, device="cuda", dtype=torch.float64)
    t_gesummv(A, B, x, want, 1.5, -0.5)
    sync = torch.cuda.synchronize
    print(f"# {torch.cuda.get_device_name()}, gesummv n = {o.n} float64, {o.reps} calls per round")
    nbytes = 2 * 8 * o.n * o.n
    rows = []
    for name, fn, is_torch in (
        ("appy, privatize(tmp)", gesummv_private, False),
        ("appy", gesummv, False),
        ("appy, a row per thread, privatize(tmp)", gesummv_rows_private, False),
        ("appy, a row per thread", gesummv_rows, False),
        ("torch", t_gesummv, True),
        ("torch.compile", torch.compile(t_gesummv), True),
    ):
        y = torch.zeros_like(want)
        fn(A, B, x, y, 1.5, -0.5)
        sync()
        ok = "ok" if torch.allclose(y, want, rtol=1e-9, atol=1e-9) else "WRONG"
        us = timed(lambda: fn(A, B, x, y, 1.5, -0.5), o.reps, sync)
        rows.append((name, us, ok))
    base = rows[0][1]
    print(f"{'variant':42} {'us':>9} {'GB/s':>7} {'first/this':>10}  check")
    for name, us, ok in rows:
        print(f"{name:42} {us:9.1f} {nbytes / us / 1e3:7.0f} {base / us:10.2f}  {ok}")


if __name__ == "__main__":
    main()
