"""Seed 001 Listing 6 (right): softmax with loops and one-dimensional tensor
expressions in sliced index notation."""
import numpy as np
import appy


@appy.jit(auto_simd=True)
def softmax_tensor(a, b, M, N):
    #pragma parallel for
    for i in range(M):
        m = max(a[i, :N])
        s = sum(np.exp(a[i, :N] - m))
        b[i, :N] = np.exp(a[i, :N] - m) / s


@appy.jit
def group_by_sum(X, labels, centroids, M, N):
    # Seed 001 Listing 2: a loop with a tensor statement and an atomic update.
    #pragma parallel for
    for i in range(M):
        label = labels[i]
        #pragma atomic
        centroids[label, :N] += X[i, :N]


@appy.jit
def saxpy_slice(a, x, y, N):
    y[1:N] = a * x[1:N] + y[1:N]
