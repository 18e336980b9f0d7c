# appy-ilp interleaves the iterations of a loop tagged `ilp` (unroll and jam): the loads of
# every iteration, then their arithmetic, then their stores. A loop whose iterations touch
# one element from two iterations (`a[i, j + 1] = a[i, j] * 0.5`) is left to appy-unroll,
# which unrolls it in program order.
# RUN: appy-opt %s --func rows --signature 'f64[:,:],f64[:,:]' --emit=appy | appy-opt - --pass-pipeline='appy-tag-inames{tags=j:ilp},appy-ilp' | filecheck %s
# RUN: appy-opt %s --func shift --signature 'f64[:,:]' --emit=appy | appy-opt - --pass-pipeline='appy-tag-inames{tags=j:ilp},appy-ilp' | filecheck %s --check-prefix=LEFT
# RUN: appy-opt %s --func shift --signature 'f64[:,:]' --emit=appy | appy-opt - --pass-pipeline='appy-tag-inames{tags=j:ilp},appy-ilp,appy-unroll' | filecheck %s --check-prefix=ORDER
import appy


@appy.jit
def rows(a, b):
    #pragma parallel for
    for i in range(a.shape[0]):
        #pragma sequential for
        for j in range(3):
            b[i, j] = a[i, j] * 2.0


@appy.jit
def shift(a):
    #pragma parallel for
    for i in range(a.shape[0]):
        #pragma sequential for
        for j in range(3):
            a[i, j + 1] = a[i, j] * 0.5

# CHECK-LABEL: func.func @rows
# CHECK-NOT: scf.for
# CHECK: %[[X0:.*]] = memref.load %arg0
# CHECK-NEXT: %[[X1:.*]] = memref.load %arg0
# CHECK-NEXT: %[[X2:.*]] = memref.load %arg0
# CHECK-NOT: memref.store
# CHECK: arith.mulf %[[X0]]
# CHECK-NOT: memref.store
# CHECK: arith.mulf %[[X1]]
# CHECK-NOT: memref.store
# CHECK: arith.mulf %[[X2]]
# CHECK: memref.store
# CHECK-NEXT: memref.store
# CHECK-NEXT: memref.store
# CHECK-NOT: scf.for

# LEFT-LABEL: func.func @shift
# LEFT: scf.for
# LEFT: appy.tags = ["ilp"]

# ORDER-LABEL: func.func @shift
# ORDER-NOT: scf.for
# ORDER: memref.load
# ORDER-NOT: memref.load
# ORDER: memref.store
# ORDER-NOT: memref.store
# ORDER: memref.load
# ORDER-NOT: memref.load
# ORDER: memref.store
# ORDER-NOT: memref.store
# ORDER: memref.load
# ORDER-NOT: memref.load
# ORDER: memref.store
