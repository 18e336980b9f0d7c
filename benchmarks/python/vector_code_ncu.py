#!/usr/bin/env python3
"""One call of the matrix-vector product and one Jacobi sweep of
`benchmarks/python/vector_code.py`, for ncu (the same sizes, float32 and float64):

    APPY_AUTOTUNE=0 APPY_GPU_VECTOR=0 ncu --kernel-name regex:_appy_ --metrics ... python3 benchmarks/python/vector_code_ncu.py
    APPY_AUTOTUNE=0 APPY_GPU_VECTOR=1 ncu ... (the same)"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vector_code import jacobi_sweep, matvec  # noqa: E402

dev = torch.device("cuda")
for dt in (torch.float32, torch.float64):
    A = torch.rand(16384, 4096, device=dev, dtype=dt)
    x = torch.rand(4096, device=dev, dtype=dt)
    y = torch.zeros(16384, device=dev, dtype=dt)
    matvec(A, x, y)
J = torch.rand(4096, 4096, device=dev, dtype=torch.float64)
jacobi_sweep(J, torch.zeros_like(J))
torch.cuda.synchronize()
