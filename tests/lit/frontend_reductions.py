# The frontend: a `shared(s)` reduction becomes an scf.parallel reduction; a simd
# loop's `m = max(m, ...)` a max reduction; scalars live in private slots.
# RUN: appy-opt %s --func f --signature 'f64[:,:],int,int' --emit=appy | filecheck %s
# RUN: appy-opt %s --func f --signature 'f64[:,:],int,int' --emit=appy | appy-opt - | filecheck %s
import appy


@appy.jit
def f(a, M, N):
    s = 0.0
    #pragma parallel for shared(s)
    for i in range(M):
        m = float('-inf')
        #pragma simd
        for j in range(N):
            m = max(m, a[i, j])
        s += m
    return s

# CHECK-LABEL: func.func @f(
# CHECK: memref.alloca() : memref<f64>
# CHECK: scf.parallel
# CHECK: scf.parallel
# CHECK: arith.maximumf
# CHECK: scf.reduce
# CHECK: appy.simd
# CHECK: arith.addf
# CHECK: appy.parallel
# CHECK: return
