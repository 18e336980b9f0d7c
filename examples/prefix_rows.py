import numpy as np
import appy


@appy.jit
def prefix_rows(a, M, N):
    #pragma parallel for
    for i in range(M):
        #pragma sequential for
        for j in range(1, N):
            a[i, j] = a[i, j] + a[i, j - 1]


@appy.jit
def recurrence(x, y, N):
    #pragma sequential for
    for i in range(1, N):
        y[i] = 0.5 * y[i - 1] + x[i]
