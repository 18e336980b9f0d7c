#!/usr/bin/env python3
"""APPy's group mode with a scratchpad (`appy.buffer`, shared memory on the GPU) against
the same stencil without it and against torch and torch.compile: the 1-D Jacobi tile of
APPy's slides, on device-resident float64 torch tensors, in one process:

    python3 benchmarks/python/group_mode.py [--tiles 262144] [--reps 50]

n = 64 * tiles + 2 points; the same points again in tiles of 1024 (`*_1024`). Then a
flat loop (a triad) in individual mode, one iteration per thread, its group size autotuned
through a `tune(...)` list, against the default schedule and torch. Each figure is the median over 7 rounds of the mean time of
`reps` calls, the device synchronized after each call (appy's calls on device arrays
return once queued), with the effective bandwidth (n points read, n - 2 written, 8 bytes each)."""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "cases"))
from group_mode import jacobi_plain, jacobi_tile  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import timed  # noqa: E402

import appy  # noqa: E402


@appy.jit
def jacobi_tile_1024(inp, out):
    #pragma parallel for
    for i in range(1, inp.shape[0] - 1, 1024):
        buf = appy.buffer(1024 + 2)
        buf[:] = inp[i - 1:i + 1025]
        out[i:i + 1024] = (buf[:-2] + buf[1:-1] + buf[2:]) / 3.0


@appy.jit
def jacobi_plain_1024(inp, out):
    #pragma parallel for
    for i in range(1, inp.shape[0] - 1, 1024):
        out[i:i + 1024] = (inp[i - 1:i + 1023] + inp[i:i + 1024] + inp[i + 1:i + 1025]) / 3.0


@appy.jit
def triad(a, b, c, s):
    #pragma parallel for
    for i in range(a.shape[0]):
        c[i] = a[i] + s * b[i]


@appy.jit
def triad_individual(a, b, c, s):
    #pragma parallel for transform(split(i, tune(256, 128, 512), outer=g.0, inner=l.0))
    for i in range(a.shape[0]):
        c[i] = a[i] + s * b[i]


def torch_jacobi(inp, out):
    out[1:-1] = (inp[:-2] + inp[1:-1] + inp[2:]) / 3.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiles", type=int, default=262144)
    ap.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    n = 64 * a.tiles + 2
    assert (n - 2) % 1024 == 0, "--tiles must be a multiple of 16"
    torch.manual_seed(0)
    inp = torch.rand(n, device="cuda", dtype=torch.float64)
    want = torch.zeros_like(inp)
    torch_jacobi(inp, want)
    compiled = torch.compile(torch_jacobi)
    sync = torch.cuda.synchronize
    nbytes = 8 * (2 * n - 2)
    print(f"# {torch.cuda.get_device_name()}, n = {n} float64, {a.reps} calls per round")
    rows = []
    for name, fn, s in (
        ("appy, appy.buffer (group mode)", jacobi_tile, sync),
        ("appy, no buffer", jacobi_plain, sync),
        ("appy, appy.buffer, tiles of 1024", jacobi_tile_1024, sync),
        ("appy, no buffer, tiles of 1024", jacobi_plain_1024, sync),
        ("torch", torch_jacobi, sync),
        ("torch.compile", compiled, sync),
    ):
        out = torch.zeros_like(inp)
        fn(inp, out)
        sync()
        ok = "ok" if torch.allclose(out, want, rtol=1e-12, atol=1e-14) else "WRONG"
        us = timed(lambda: fn(inp, out), a.reps, s)
        rows.append((name, us, nbytes / us / 1e3, ok))
    base = rows[0][1]
    print(f"{'variant':32} {'us':>9} {'GB/s':>7} {'buffer/this':>11}  check")
    for name, us, gbs, ok in rows:
        print(f"{name:32} {us:9.1f} {gbs:7.0f} {base / us:11.2f}  {ok}")
    # Individual mode: a flat loop, one iteration per thread in groups of a tuned size,
    # against the default (workers of a tuned vector length).
    m = 1 << 26
    x, y = torch.rand(m, device="cuda"), torch.rand(m, device="cuda")
    want = x + 0.5 * y
    print(f"# triad c = a + s*b, {m} float32")
    rows = []
    for name, fn in (("appy, default", triad), ("appy, split(i, tune(256, 128, 512), g.0, l.0)", triad_individual)):
        z = torch.zeros_like(x)
        fn(x, y, z, 0.5)
        sync()
        ok = "ok" if torch.allclose(z, want) else "WRONG"
        us = timed(lambda: fn(x, y, z, 0.5), a.reps, sync)
        rows.append((name, us, 12 * m / us / 1e3, ok))
    z = torch.zeros_like(x)
    rows.append(("torch (torch.add(x, y, alpha=0.5, out=z))", timed(lambda: torch.add(x, y, alpha=0.5, out=z), a.reps, sync), 0, ""))
    for name, us, gbs, ok in rows:
        print(f"{name:48} {us:9.1f} {12 * m / us / 1e3:7.0f}  {ok}")


if __name__ == "__main__":
    main()
