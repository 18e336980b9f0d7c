import numpy as np
import appy


@appy.jit
def shared_sum(A, N):
    s = 0.0
    #pragma parallel for shared(s)
    for i in range(N):
        s += A[i] * A[i]
    return s


@appy.jit
def masked_max(A, N):
    m = float('-inf')
    #pragma parallel for shared(m)
    for i in range(N):
        if A[i] < 0.5:
            m = max(m, A[i])
    return m


@appy.jit
def int_init_sum(A, N):
    s = 0
    #pragma parallel for shared(s)
    for i in range(N):
        s += A[i]
    return s
