# appy-privatize: a temporary array that each iteration of loop `i` uses only at its
# own element, and that nothing outside the loop reads, becomes a scalar slot of the
# iteration (a register); its allocation and fill go. The frontend names the array for
# the pass (`appy.name` on the allocation) when a `transform(privatize(tmp))` clause
# names it. Refused: an element other than `tmp[i]`, a use outside the loop.
# RUN: appy-opt %s --func rows --signature 'f64[:,:],f64[:]' --emit=appy | filecheck %s --check-prefix=APPY
# RUN: appy-opt %s --func rows --signature 'f64[:,:],f64[:]' --emit=loops | filecheck %s
# RUN: appy-opt %s --func shifted --signature 'f64[:],f64[:]' --emit=appy | not appy-opt - --pass-pipeline='appy-privatize{array=t iname=i}' 2>&1 | filecheck %s --check-prefix=SHIFT
# RUN: appy-opt %s --func escapes --signature 'f64[:]' --emit=appy | not appy-opt - --pass-pipeline='appy-privatize{array=t iname=i}' 2>&1 | filecheck %s --check-prefix=ESCAPE
# RUN: appy-opt %s --func rows --signature 'f64[:,:],f64[:]' --emit=appy | not appy-opt - --pass-pipeline='appy-privatize{array=q iname=i}' 2>&1 | filecheck %s --check-prefix=NONE
import numpy as np
import appy


@appy.jit
def rows(a, out):
    t = np.zeros(a.shape[0])
    #pragma parallel for transform(privatize(t))
    for i in range(a.shape[0]):
        #pragma sequential for
        for j in range(a.shape[1]):
            t[i] += a[i, j] * a[i, j]
        out[i] = t[i]


@appy.jit
def shifted(a, out):
    t = np.empty(a.shape[0] + 1)
    #pragma parallel for transform(privatize(t))
    for i in range(a.shape[0]):
        t[i + 1] = a[i]
        out[i] = t[i + 1]


@appy.jit
def escapes(a):
    t = np.empty(a.shape[0])
    #pragma parallel for transform(privatize(t))
    for i in range(a.shape[0]):
        t[i] = 2.0 * a[i]
    return t
# The allocation is named for the pass while the clause waits on the loop.
# APPY: memref.alloc(%{{.*}}) {appy.name = "t"} : memref<?xf64>
# APPY: appy.transforms = ["appy-privatize{array=t iname=i}"]
# After: no allocation, no fill; each iteration's slot starts at the fill's 0.
# CHECK-LABEL: func.func @rows
# CHECK-NOT: memref.alloc(
# CHECK-NOT: appy.zero_fill
# CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f64
# CHECK: scf.parallel
# CHECK: %[[S:.*]] = memref.alloca() : memref<f64>
# CHECK-NEXT: memref.store %[[Z]], %[[S]][] : memref<f64>
# CHECK: memref.load %[[S]][] : memref<f64>
# CHECK-NOT: memref.alloc(
# SHIFT: error: privatize: this element of `t` is not `t[i]`
# ESCAPE: error: privatize: `t` is used here, outside loop `i`
# NONE: error: privatize: no temporary `q` is allocated at the top of this function
