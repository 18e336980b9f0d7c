# appy-strip-mine: a simd loop inside a worker becomes a loop over MVL-wide chunks of
# lanes with a mask; the lane partial sums are reduced and carried across chunks.
# RUN: appy-opt %s --signature 'f32[:,:],f32[:],int,int' --mvl 128 --emit=loops | filecheck %s
# RUN: appy-opt %s --signature 'f32[:,:],f32[:],int,int' --mvl 128 --emit=loops | appy-opt - | filecheck %s
import appy


@appy.jit
def row_sum(a, out, M, N):
    #pragma parallel for
    for i in range(M):
        s = 0.0
        #pragma simd
        for j in range(N):
            s += a[i, j]
        out[i] = s

# CHECK-LABEL: func.func @row_sum
# CHECK: scf.parallel
# CHECK: scf.for {{.*}} iter_args
# CHECK: scf.parallel {{.*}} to (%c128
# CHECK: arith.cmpi slt
# CHECK: scf.if
# CHECK: scf.reduce
# CHECK: appy.lanes
# CHECK: scf.yield
# CHECK: appy.chunks
# CHECK: appy.parallel
