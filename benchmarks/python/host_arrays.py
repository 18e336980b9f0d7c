#!/usr/bin/env python3
"""Calls on NumPy arrays through the GPU, where each call moves its arrays to the device
and back: `c = s*a + t*b` (two arrays read, one written, float64) at several sizes,
against the same bytes moved by torch alone (`torch.from_numpy(a).cuda()` for `a` and
`b`, then `c_host.copy_(c_dev)`: pageable memory, as NumPy's is), in one process:

    python3 benchmarks/python/host_arrays.py [--sizes 1024,1048576,16777216,67108864]

Each figure is the median over 7 rounds of the mean time of the calls of a round
(enough calls for about 0.2 s); appy's result is checked against NumPy's first. The
ratio `appy / torch copies` is what the call costs above moving its bytes."""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import appy  # noqa: E402
from _timing import timed  # noqa: E402
from kernels_overhead import axpby  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1024,1048576,16777216,67108864")
    a = ap.parse_args()
    appy.device("gpu")
    dev = torch.device("cuda")
    rng = np.random.default_rng(0)
    print(f"# {torch.cuda.get_device_name()}, float64, appy {appy.__file__}")
    print("| n | MiB moved | appy µs | torch copies µs | appy / torch copies | appy GB/s | check |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for n in (int(s) for s in a.sizes.split(",")):
        x, y = rng.random(n) + 0.5, rng.random(n) + 0.5
        z = rng.random(n)
        axpby(x, y, z, 2.0, 0.5)
        ok = np.allclose(z, 2.0 * x + 0.5 * y, rtol=1e-12, atol=0)
        zd = torch.empty(n, device=dev, dtype=torch.float64)
        zh = torch.from_numpy(z)

        def copies():
            xd = torch.from_numpy(x).to(dev)
            yd = torch.from_numpy(y).to(dev)
            torch.add(xd, yd, out=zd)
            zh.copy_(zd)

        reps = max(3, min(2000, int(0.2 / max(1e-6, 24 * n / 10e9))))
        t_appy = timed(lambda: axpby(x, y, z, 2.0, 0.5), reps, lambda: None)
        t_torch = timed(copies, reps, torch.cuda.synchronize)
        moved = 24 * n
        print(f"| {n} | {moved / 2**20:.3f} | {t_appy:.1f} | {t_torch:.1f} | {t_appy / t_torch:.2f} | "
              f"{moved / t_appy / 1e3:.2f} | {'ok' if ok else 'WRONG'} |")


if __name__ == "__main__":
    main()
