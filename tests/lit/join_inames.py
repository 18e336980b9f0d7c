# appy-join-inames (Loopy's join_inames) makes a perfect nest of two parallel loops one
# parallel loop `i_j` over ni * nj iterations, i and j recovered by division and
# remainder; strip-mining then splits that one range. A nest with a reduction, or an
# inner loop whose bounds depend on the outer variable, is refused.
# RUN: appy-opt %s --func scale --signature 'f64[:,:],f64[:,:]' --emit=appy | appy-opt - --pass-pipeline='appy-join-inames{outer=i inner=j}' | filecheck %s
# RUN: appy-opt %s --func tri --signature 'f64[:,:]' --emit=appy | not appy-opt - --pass-pipeline='appy-join-inames{outer=i inner=j}' 2>&1 | filecheck %s --check-prefix=TRI
# RUN: appy-opt %s --func scale --signature 'f64[:,:],f64[:,:]' --emit=appy | not appy-opt - --pass-pipeline='appy-join-inames{outer=j inner=i}' 2>&1 | filecheck %s --check-prefix=NEST
import numpy as np
import appy


@appy.jit
def scale(a, b):
    #pragma parallel for
    for i in range(a.shape[0]):
        #pragma parallel for
        for j in range(1, a.shape[1], 2):
            b[i, j] = 2.0 * a[i, j]


@appy.jit
def tri(a):
    #pragma parallel for
    for i in range(a.shape[0]):
        #pragma parallel for
        for j in range(i):
            a[i, j] = 0.0
# CHECK-LABEL: func.func @scale
# CHECK: %[[NI:.*]] = arith.maxsi
# CHECK: %[[NJ:.*]] = arith.maxsi
# CHECK: %[[T:.*]] = arith.muli %[[NI]], %[[NJ]] : index
# CHECK: scf.parallel (%[[K:.*]]) = (%{{.*}}) to (%[[T]])
# CHECK: arith.divsi %[[K]], %[[NJ]] : index
# CHECK: arith.remsi %[[K]], %[[NJ]] : index
# CHECK-NOT: scf.parallel
# CHECK: } {appy.inames = ["i_j"], appy.parallel}
# TRI: error: cannot join `i` and `j`: the bounds of `j` depend on `i` (the nest is not a rectangle)
# NEST: error: cannot join `j` and `i`: `i` is not directly inside `j`
