#!/usr/bin/env python3
"""Calls the four thread-per-row and thread-per-column kernels of transforms.py once each,
for a profiler (BENCHMARKS.md gives the ncu command):

    APPY_AUTOTUNE=0 ncu --kernel-name regex:_appy_mv --metrics ... python3 benchmarks/python/transforms_ncu.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transforms import mv_seq, mv_seq_unr8, mvt_seq, mvt_seq_unr8  # noqa: E402

A = torch.rand(16384, 4096, device="cuda") - 0.5
x = torch.rand(16384, device="cuda") - 0.5
xr = torch.rand(4096, device="cuda") - 0.5
y = torch.zeros(4096, device="cuda")
yr = torch.zeros(16384, device="cuda")
for f in (mvt_seq, mvt_seq_unr8):
    f(A, x, y)
for f in (mv_seq, mv_seq_unr8):
    f(A, xr, yr)
torch.cuda.synchronize()
