#!/usr/bin/env python3
"""Calls each appy kernel of hdiff_tile.py a few times at NPBench's paper size
(I = J = 256, K = 160, float64), for a profiler (BENCHMARKS.md gives the ncu command):

    APPY_AUTOTUNE=0 ncu --kernel-name regex:_appy_hdiff --metrics ... python3 benchmarks/python/hdiff_tile_ncu.py

With APPY_AUTOTUNE=0 each kernel runs at the default vector length (1024), not the
one hdiff_tile.py's tuned calls pick. The kernels are named `_appy_<function>_k<n>`: k0
the Laplacian and k1 the fluxes, except the appy.buffer variants (one kernel, k0)."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hdiff_tile import variants  # noqa: E402

I, J, K = 256, 256, 160
CALLS = 3
in_field = torch.rand(I + 4, J + 4, K, device="cuda", dtype=torch.float64) + 0.5
coeff = torch.rand(I, J, K, device="cuda", dtype=torch.float64) + 0.5
lap = torch.empty(I + 2, J + 2, K, device="cuda", dtype=torch.float64)
out = torch.zeros(I, J, K, device="cuda", dtype=torch.float64)
for name, fn, args in variants(in_field, coeff, lap):
    a = args(out)
    for _ in range(CALLS):
        fn(*a)
torch.cuda.synchronize()
