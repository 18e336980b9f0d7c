#!/usr/bin/env python3
"""Calls the jacobi_2d and 1-D Jacobi kernels of prefetch.py once each, with and without
`prefetch`, for a profiler (BENCHMARKS.md gives the ncu command):

    APPY_AUTOTUNE=0 ncu --kernel-name regex:_appy_jacobi --metrics ... python3 benchmarks/python/prefetch_ncu.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prefetch import jacobi1d, jacobi1d_prefetch, jacobi2d, jacobi2d_prefetch  # noqa: E402

A = torch.rand(4096, 4096, device="cuda", dtype=torch.float64)
B = torch.zeros_like(A)
for f in (jacobi2d, jacobi2d_prefetch):
    f(A, B)
x = torch.rand((1 << 26) + 2, device="cuda", dtype=torch.float64)
y = torch.zeros_like(x)
for f in (jacobi1d, jacobi1d_prefetch):
    f(x, y)
torch.cuda.synchronize()
