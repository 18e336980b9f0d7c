"""Tensor statements used as GPU performance targets (issue: tensor model)."""
import numpy as np
import appy


@appy.jit
def fused_chain(a, b, c, N):
    # Five element-wise operators fused into one pass: 2 reads and 1 write per element.
    c[:N] = np.exp(a[:N] * 0.5) * b[:N] + np.sqrt(np.abs(a[:N] - b[:N])) - 1.0


@appy.jit(auto_simd=True)
def softmax_rows(a, b, M, N):
    # Listing 6 (right) with the row kept in registers (le: rows of at most 4096).
    #pragma parallel for
    for i in range(M):
        #pragma :N=>simd,le(4096)
        m = max(a[i, :N])
        #pragma :N=>simd,le(4096)
        s = sum(np.exp(a[i, :N] - m))
        #pragma :N=>simd,le(4096)
        b[i, :N] = np.exp(a[i, :N] - m) / s
