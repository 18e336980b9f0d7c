# appy-tensor-sync: in softmax (tensor form) the store to b is the only access to b
# in the worker, so it needs no barrier (appy.nosync) and the kernel has none; in
# Figure 2 the copy from the temporary writes A, which the first statement reads
# through another slice: that one keeps its barriers.
# RUN: appy-opt %s --func softmax --signature 'f32[:,:],f32[:,:],int,int' --emit=appy | appy-opt - --pass-pipeline='appy-tensor-sync' | filecheck %s --check-prefix=SOFT
# RUN: appy-opt %s --func softmax --signature 'f32[:,:],f32[:,:],int,int' --emit=gpu | filecheck %s --check-prefix=GPU
# RUN: appy-opt %s --func shift --signature 'f64[:,:],f64[:,:],int,int' --emit=appy | appy-opt - --pass-pipeline='appy-tensor-temporaries,appy-tensor-sync' | filecheck %s --check-prefix=SHIFT
import numpy as np
import appy


@appy.jit(auto_simd=True)
def softmax(a, b, M, N):
    #pragma parallel for
    for i in range(M):
        m = max(a[i, :N])
        s = sum(np.exp(a[i, :N] - m))
        b[i, :N] = np.exp(a[i, :N] - m) / s


@appy.jit
def shift(A, B, M, N):
    #pragma parallel for
    for i in range(M):
        #pragma 1:N=>simd
        A[i, 1:N] = 0.5 * (A[i, :N-1] + B[i, :N-1])

# SOFT-LABEL: func.func @softmax
# SOFT: "appy.assign"(%arg1, {{.*}}) {appy.nosync

# GPU-LABEL: gpu.func @_appy_softmax_k0
# GPU-NOT: gpu.barrier
# GPU: gpu.return

# SHIFT-LABEL: func.func @shift
# SHIFT: "appy.assign"(%alloc, {{.*}}) {appy.nosync, appy.temporary
# SHIFT: "appy.assign"(%arg0, {{.*}}) {dims
