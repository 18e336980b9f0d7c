# APPy's group mode: `appy.buffer` at the top of a parallel loop's body is a statically
# sized `memref.alloca {appy.buffer}` (cast to the dynamic array type) at the `loops`
# level; appy-gpu-outline makes it a workgroup attribution of the kernel (shared memory),
# and the barrier analysis puts a barrier between the cooperative load and the reads at
# other offsets. A buffer of a loop run one iteration per lane stays private.
# RUN: appy-opt %s --func tile --signature 'f64[:],f64[:]' --mvl 64 --emit=loops | filecheck %s --check-prefix=LOOPS
# RUN: appy-opt %s --func tile --signature 'f64[:],f64[:]' --mvl 64 --emit=gpu | filecheck %s --check-prefix=GPU
# RUN: appy-opt %s --func private --signature 'f64[:],f64[:]' --emit=gpu | filecheck %s --check-prefix=PRIVATE
import numpy as np
import appy


@appy.jit
def tile(inp, out):
    #pragma parallel for
    for i in range(1, inp.shape[0] - 1, 64):
        buf = appy.buffer(64 + 2)
        buf[:] = inp[i - 1:i + 65]
        out[i:i + 64] = (buf[:-2] + buf[1:-1] + buf[2:]) / 3.0


@appy.jit
def private(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        s = appy.buffer(2)
        s[0] = a[i]
        s[1] = 2.0 * s[0]
        out[i] = s[1]
# LOOPS: %[[A:.*]] = memref.alloca() {appy.buffer} : memref<66xf64>
# LOOPS: %[[B:.*]] = memref.cast %[[A]] : memref<66xf64> to memref<?xf64>
# LOOPS: memref.store %{{.*}}, %[[B]][%{{.*}}] : memref<?xf64>
# GPU: gpu.func @_appy_tile_k0({{.*}}) workgroup(%[[W:.*]] : memref<66xf64, #gpu.address_space<workgroup>>) kernel
# GPU-NOT: memref.alloca
# GPU: memref.store %{{.*}}, %[[W]][%{{.*}}] : memref<66xf64, #gpu.address_space<workgroup>>
# GPU-NEXT: }
# GPU-NEXT: gpu.barrier
# GPU: memref.load %[[W]][%{{.*}}] : memref<66xf64, #gpu.address_space<workgroup>>
# PRIVATE: gpu.func @_appy_private_k0({{.*}}) kernel
# PRIVATE: memref.alloca() {appy.buffer} : memref<2xf64>
