"""Checked mode's cost on the CPU (BENCHMARKS.md): a stencil and a gather, timed with
`appy bench --device cpu` with APPY_BOUNDS_CHECK=0 and 1."""
import numpy as np
import appy

@appy.jit
def stencil(a, b, n):
    #pragma parallel for
    for i in range(1, n - 1):
        b[i] = 0.25 * a[i - 1] + 0.5 * a[i] + 0.25 * a[i + 1]

@appy.jit
def gather(idx, x, y, n):
    #pragma parallel for
    for i in range(n):
        y[i] = x[idx[i]] * 2.0
