import numpy as np
import appy


@appy.jit
def relu_blend(A, B, C, N):
    #pragma parallel for
    for i in range(0, N, appy.MVL):
        vi = appy.vidx(i, appy.MVL, N)
        C[vi] = appy.where(A[vi] > 0.0, A[vi], 0.5 * B[vi])


@appy.jit
def block_sums(A, sums, N):
    #pragma parallel for
    for i in range(0, N, appy.MVL):
        vi = appy.vidx(i, appy.MVL, N)
        sums[i // appy.MVL] = sum(A[vi] * A[vi])
