# appy-tensor-to-loops{cpu=1}: a column reduction walks rows with the columns in a
# contiguous inner loop: rows in parallel with atomic updates of the target (privatised
# per thread later) when N <= M, else parallel blocks of 512 float64 columns, each
# walking all rows; the division of the mean is applied after the reduction. Without
# cpu=1 (the GPU) it is one loop per column with the reduction (over lanes) inside.
# RUN: appy-opt %s --func col_mean --signature 'f64[:,:],f64[:]' --emit=appy | appy-opt - --pass-pipeline='appy-tensor-to-loops{cpu=1}' | filecheck %s
# RUN: appy-opt %s --func col_mean --signature 'f64[:,:],f64[:]' --emit=appy | appy-opt - --pass-pipeline='appy-tensor-to-loops' | filecheck %s --check-prefix=GPU
import numpy as np
import appy


@appy.jit
def col_mean(A, y):
    y[:] = np.mean(A, axis=0)

# CHECK-LABEL: func.func @col_mean
# CHECK: %[[BYROWS:[0-9]+]] = arith.cmpi sle
# CHECK: scf.if %[[BYROWS]]
# CHECK: scf.parallel
# CHECK: scf.parallel
# CHECK: memref.atomic_rmw addf
# CHECK: appy.simd
# CHECK: appy.parallel
# CHECK: arith.divf
# CHECK: } else {
# CHECK: arith.constant 512 : index
# CHECK: scf.parallel {{.*}} step (%c512)
# CHECK: scf.for
# CHECK: scf.for
# CHECK: memref.load %arg1
# CHECK: arith.addf
# CHECK: arith.divf
# CHECK: appy.parallel

# GPU-LABEL: func.func @col_mean
# GPU-NOT: scf.if
# GPU: scf.parallel
# GPU: scf.parallel {{.*}} init
# GPU: memref.load %arg0
# GPU: scf.reduce
