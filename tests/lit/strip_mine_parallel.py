# A parallel loop with scalar bodies is split into workers of MVL iterations.
# RUN: appy-opt %s --signature 'f32[:],f32[:],f32[:],int' --emit=loops | filecheck %s
import appy


@appy.jit
def vector_add(A, B, C, N):
    #pragma parallel for simd
    for i in range(N):
        C[i] = A[i] + B[i]

# CHECK: arith.ceildivsi
# CHECK: scf.parallel
# CHECK: scf.parallel {{.*}} to (%c1024
# CHECK: arith.cmpi slt
# CHECK: memref.store
# CHECK: appy.lanes
# CHECK: appy.parallel
# CHECK-NOT: appy.simd
