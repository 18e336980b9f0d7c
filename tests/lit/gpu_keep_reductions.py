# A reduction across workers whose result only a later kernel uses stays on the device:
# the kernel takes the reduction's buffer and the initial value, and combines them as its
# first ops; the host never reads the buffer, and frees it after that kernel. A result
# the host itself needs (returned) is read back as before.
# RUN: appy-opt %s --func trace_then_add --signature 'f64[:,:],f64[:,:]' --emit=gpu | filecheck %s --check-prefix=KEEP
# RUN: appy-opt %s --func returned --signature 'f64[:],f64[:]' --emit=gpu | filecheck %s --check-prefix=READ
import numpy as np
import appy


@appy.jit
def trace_then_add(a, out):
    N = a.shape[0]
    trace = 0.5
    #pragma parallel for shared(trace)
    for i in range(N):
        trace += np.tanh(a[i, i])
    out[:N, :N] = a[:N, :N] + trace


@appy.jit
def returned(a, b):
    s = 0.0
    #pragma parallel for shared(s)
    for i in range(a.shape[0]):
        s += a[i]
    #pragma parallel for simd
    for i in range(a.shape[0]):
        b[i] = a[i] - s
    return s

# KEEP: gpu.func @_appy_trace_then_add_k1
# KEEP-SAME: %[[BUF:[a-z0-9]+]]: memref<1xf64>, %[[INIT:[a-z0-9]+]]: f64
# KEEP: %[[PART:.*]] = memref.load %[[BUF]][%{{.*}}] : memref<1xf64>
# KEEP-NEXT: %[[SUM:.*]] = arith.addf %[[INIT]], %[[PART]] : f64
# KEEP: arith.addf %{{.*}}, %[[SUM]] : f64
# KEEP: func.func @trace_then_add
# KEEP: %[[ALLOC:.*]] = memref.alloc() : memref<1xf64>
# KEEP-NOT: memref.load %[[ALLOC]][
# KEEP: gpu.launch_func @_appy_kernels::@_appy_trace_then_add_k0
# KEEP-NOT: memref.load %[[ALLOC]][
# KEEP: gpu.launch_func @_appy_kernels::@_appy_trace_then_add_k1
# KEEP-SAME: %[[ALLOC]] : memref<1xf64>
# KEEP-NEXT: }
# KEEP-NEXT: memref.dealloc %[[ALLOC]]

# READ: func.func @returned
# READ: gpu.launch_func @_appy_kernels::@_appy_returned_k0
# READ: %[[V:.*]] = memref.load %alloc
# READ: gpu.launch_func @_appy_kernels::@_appy_returned_k1
# READ-NOT: memref<1xf64>
# READ: return
