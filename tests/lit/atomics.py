# `#pragma atomic` becomes memref.atomic_rmw; at the gpu level only thread 0 of a
# block performs an atomic outside lanes.
# RUN: appy-opt %s --signature 'f64[:],f64[:],int' --emit=gpu | filecheck %s
import appy


@appy.jit
def vector_sum(A, s, N):
    #pragma parallel for simd
    for i in range(N):
        #pragma atomic
        s[0] += A[i]

# CHECK: gpu.func
# CHECK: memref.atomic_rmw addf
# CHECK: gpu.launch_func
