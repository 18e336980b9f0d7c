# `appy.MVL` is the IRDL op `appy.mvl` at the appy level (the level does not depend on
# the vector length); appy-strip-mine replaces it with the chosen constant.
# RUN: appy-opt %s --signature 'f64[:],f64[:],f64[:],int' --emit=appy | filecheck %s --check-prefix=APPY
# RUN: appy-opt %s --signature 'f64[:],f64[:],f64[:],int' --emit=appy | appy-opt - --pass-pipeline='appy-strip-mine{mvl=512}' | filecheck %s
import appy


@appy.jit
def relu_blend(A, B, C, N):
    #pragma parallel for
    for i in range(0, N, appy.MVL):
        vi = appy.vidx(i, appy.MVL, N)
        C[vi] = appy.where(A[vi] > 0.0, A[vi], 0.5 * B[vi])

# CHECK: arith.constant 512 : i64
# CHECK-NOT: appy.mvl
# CHECK: appy.lanes
# APPY: "appy.mvl"() : () -> i64
# APPY: appy.parallel
