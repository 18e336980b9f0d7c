# Regression (found by the differential tests): abs() of an integer produced an
# `arith.extui` from i64 to i64, which MLIR rejects.
# RUN: appy-opt %s --signature 'f64[:,:],f64[:],int,int' --emit=appy | filecheck %s
import appy


@appy.jit
def k(m, out, R, N):
    #pragma parallel for
    for r in range(R):
        t = 0.0
        #pragma simd
        for i in range(N):
            t += max(m[r, i] / (1.5 + abs(1)), m[r, i])
        out[r] = t

# CHECK: math.absi {{.*}} : i64
# CHECK: arith.select
