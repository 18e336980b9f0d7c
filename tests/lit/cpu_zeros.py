# appy-cpu-zeros: on the CPU, np.zeros is a calloc'd block (advised as huge pages when
# large) made into a memref, and the fill nest is gone; np.ones is still filled.
# RUN: appy-opt %s --func zeros --signature 'int' --emit=cpu | filecheck %s
# RUN: appy-opt %s --func zeros --signature 'int' --emit=cpu | appy-opt - | filecheck %s
import numpy as np
import appy


@appy.jit
def zeros(N):
    t = np.zeros((N, 3))
    u = np.ones(N)
    return t, u

# CHECK: llvm.func @calloc(i64, i64) -> !llvm.ptr
# CHECK-LABEL: func.func @zeros
# CHECK: %[[P:[0-9]+]] = llvm.call @calloc(
# CHECK: llvm.call @madvise(
# CHECK: llvm.insertvalue %[[P]], {{.*}}[0]
# CHECK: builtin.unrealized_conversion_cast {{.*}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<?x?xf64>
# CHECK: memref.alloc
# CHECK: omp.parallel
# CHECK: memref.store
