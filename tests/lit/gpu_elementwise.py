# An element-wise tensor statement without a pragma has every dimension parallel (the
# strips of a long row are workers too: the grid covers rows x strips), while one that
# reduces keeps the row in one worker. On the GPU each thread's lanes (a block apart) are
# unrolled where all are in range, the loads issued before the stores.
# RUN: appy-opt %s --func scale --signature 'f64[:,:],f64[:,:]' --emit=appy | filecheck %s --check-prefix=APPY
# RUN: appy-opt %s --func row_sums --signature 'f64[:,:],f64[:]' --emit=appy | filecheck %s --check-prefix=ROWS
# RUN: appy-opt %s --func scale --signature 'f64[:,:],f64[:,:]' --emit=gpu | filecheck %s --check-prefix=GPU
import numpy as np
import appy


@appy.jit
def scale(a, out):
    M, N = a.shape
    out[:M, :N] = a[:M, :N] * 2.0 + 1.0


@appy.jit
def row_sums(a, s):
    M, N = a.shape
    s[:M] = np.sum(a[:M, :N], axis=1)

# APPY: appy.assign
# APPY-SAME: parallel = array<i64: 1, 1>
# APPY-SAME: simd = array<i64: 0, 1>

# ROWS: appy.assign
# ROWS-SAME: parallel = array<i64: 1, 0>

# GPU: gpu.func @_appy_scale_k0
# GPU: %[[ROW:.*]] = arith.divsi
# GPU: scf.if
# GPU-NEXT: memref.load
# GPU-NEXT: memref.load
# GPU-NEXT: memref.load
# GPU-NEXT: memref.load
# GPU: memref.store
# GPU-NEXT: memref.store
# GPU-NEXT: memref.store
# GPU-NEXT: memref.store
# GPU: } else {
# GPU: scf.for
