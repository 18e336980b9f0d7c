#!/usr/bin/env python3
"""Per-call overhead of a call that hits the compile cache: Python → launch → back, for
`c = s*a + t*b` (three arrays, two scalars), next to CuPy and torch per-op overhead and
Numba CUDA per-call overhead, in one process.

    python3 benchmarks/python/overhead.py [--n 1024] [--reps 20000]

On the CPU (no GPU, or --cpu): appy's CPU back end on NumPy arrays, next to the NumPy
expression. On the GPU: every framework on its own device arrays; each figure is the
best of 5 rounds of `reps` calls, each call followed by a device synchronize (appy's
calls on device arrays return once queued, as the peers' do), and the kernel time alone (CUDA events around
back-to-back launches of the CuPy kernel) is printed so the overhead above it shows.
Missing peers are skipped."""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import appy  # noqa: E402
from kernels_overhead import axpby  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=1024)
ap.add_argument("--reps", type=int, default=20000)
ap.add_argument("--cpu", action="store_true")
a = ap.parse_args()
N, R = a.n, a.reps


def best_us(fn, sync=lambda: None, rounds=5):
    fn()
    sync()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(R):
            fn()
            sync()
        best = min(best, (time.perf_counter() - t0) / R)
    return best * 1e6


rows = []
if a.cpu or not appy.gpu_available():
    appy.device("cpu")
    x, y, z = np.random.rand(N), np.random.rand(N), np.zeros(N)
    rows.append(("appy CPU back end, NumPy arrays", best_us(lambda: axpby(x, y, z, 2.0, 0.5))))
    rows.append(("NumPy: np.add(2.0*a, 0.5*b, out=c)", best_us(lambda: np.add(2.0 * x, 0.5 * y, out=z))))
    rows.append(("empty Python function call", best_us(lambda: None)))
else:
    import torch
    dev = torch.device("cuda")
    ta, tb, tc = (torch.rand(N, device=dev, dtype=torch.float64) for _ in range(3))
    sync = torch.cuda.synchronize
    axpby(ta, tb, tc, 2.0, 0.5)
    assert torch.allclose(tc, 2.0 * ta + 0.5 * tb)
    rows.append(("appy, torch tensors", best_us(lambda: axpby(ta, tb, tc, 2.0, 0.5), sync)))
    rows.append(("torch: torch.add(a, b, alpha=0.5, out=c) (one kernel)", best_us(lambda: torch.add(ta, tb, alpha=0.5, out=tc), sync)))
    rows.append(("torch: c = 2*a + 0.5*b (3 kernels)", best_us(lambda: torch.add(2.0 * ta, tb, alpha=0.5, out=tc), sync)))
    na, nb, nc = (t.cpu().numpy() for t in (ta, tb, tc))
    rows.append(("appy, NumPy arrays (moved each call)", best_us(lambda: axpby(na, nb, nc, 2.0, 0.5))))
    try:
        import cupy as cp
        ca, cb, cc = (cp.asarray(na) for _ in range(3))
        csync = cp.cuda.Device().synchronize
        axpby(ca, cb, cc, 2.0, 0.5)
        rows.append(("appy, CuPy arrays", best_us(lambda: axpby(ca, cb, cc, 2.0, 0.5), csync)))
        k = cp.ElementwiseKernel("float64 a, float64 b, float64 s, float64 t", "float64 c", "c = s * a + t * b", "axpby")
        rows.append(("CuPy ElementwiseKernel (one kernel)", best_us(lambda: k(ca, cb, 2.0, 0.5, cc), csync)))
        # Kernel time alone: events around back-to-back launches.
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        k(ca, cb, 2.0, 0.5, cc)
        e0.record()
        for _ in range(1000):
            k(ca, cb, 2.0, 0.5, cc)
        e1.record()
        e1.synchronize()
        rows.append(("kernel time alone (CuPy kernel, events, back to back)", cp.cuda.get_elapsed_time(e0, e1) / 1000 * 1e3))
    except ImportError:
        print("(CuPy not installed: skipped)")
    try:
        from numba import cuda

        @cuda.jit
        def nb_axpby(a, b, c, s, t):
            i = cuda.grid(1)
            if i < a.shape[0]:
                c[i] = s * a[i] + t * b[i]

        da, db, dc = (cuda.as_cuda_array(t) for t in (ta, tb, tc))
        blocks = (N + 255) // 256
        rows.append(("Numba CUDA kernel launch", best_us(lambda: nb_axpby[blocks, 256](da, db, dc, 2.0, 0.5), sync)))
    except Exception as e:  # numba missing or without CUDA
        print(f"(Numba CUDA skipped: {type(e).__name__}: {e})")
    rows.append(("torch.cuda.synchronize() alone", best_us(lambda: None, sync)))
print(f"N = {N}, {R} calls per round, best of 5 rounds; microseconds per call")
for name, us in rows:
    print(f"  {us:9.2f} us  {name}")
