# appy-cpu-kernels: the GPU's kernels, taken right after appy-gpu-outline (worker-level
# code), as CPU functions that run a range of their groups. Each keeps the launch's
# parameters (the block offset last) and takes the number of groups after them; the
# groups are one parallel loop (g.0, OpenMP workers once appy-cpu-openmp has run), the
# block id is the group's index, a scratchpad of a group (appy.buffer) is a private
# array of the group, and nothing of the gpu dialect is left.
# RUN: appy-opt %s --func total --signature 'f64[:,:],int,int' --mvl 64 --emit=kernel | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-cpu-kernels' | filecheck %s
# RUN: appy-opt %s --func tile --signature 'f64[:],f64[:]' --mvl 64 --emit=kernel | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-cpu-kernels' | filecheck %s --check-prefix=BUF
import numpy as np
import appy


@appy.jit
def total(a, n, m):
    s = 0.0
    #pragma parallel for shared(s)
    for i in range(n):
        #pragma simd
        for j in range(m):
            s += a[i, j]
    return s


@appy.jit
def tile(a, b):
    #pragma parallel for
    for t in range(a.shape[0] // 64):
        buf = appy.buffer(64, np.float64)
        #pragma simd
        for j in range(64):
            buf[j] = 2.0 * a[t * 64 + j]
        #pragma simd
        for j in range(64):
            b[t * 64 + j] = buf[j] + buf[63 - j]

# CHECK-NOT: gpu.
# CHECK-LABEL: func.func @_appy_total_k0(
# CHECK-SAME: %[[OFF:[a-z0-9]+]]: index, %[[GROUPS:[a-z0-9]+]]: index)
# CHECK: scf.parallel (%[[G:[a-z0-9]+]]) = (%{{.*}}) to (%[[GROUPS]]) step
# CHECK: arith.addi %[[G]], %[[OFF]]
# CHECK: memref.atomic_rmw addf
# CHECK: appy.inames = ["_appy_group"], appy.parallel, appy.tags = ["g.0"]
# CHECK-NOT: gpu.

# BUF-NOT: gpu.
# BUF-LABEL: func.func @_appy_tile_k0(
# BUF: scf.parallel
# BUF-NEXT: memref.alloca() : memref<64xf64>
# BUF-NOT: gpu.
