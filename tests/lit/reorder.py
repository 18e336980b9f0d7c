# appy-reorder interchanges a perfect nest of two sequential loops when the order of
# the iterations cannot change a result: here every array the body writes is written
# and read at one subscript, a different element in every iteration. A scalar updated
# in every iteration (a sum, whose rounding depends on the order) and a write at a
# subscript that several iterations share are refused at the outer loop's line.
# RUN: appy-opt %s --func t --signature 'f64[:,:],f64[:,:]' --emit=appy | appy-opt - --pass-pipeline='appy-reorder{outer=j inner=k}' | filecheck %s
# RUN: appy-opt %s --func total --signature 'f64[:,:],f64[:]' --emit=appy | not appy-opt - --pass-pipeline='appy-reorder{outer=j inner=k}' 2>&1 | filecheck %s --check-prefix=SUM
# RUN: appy-opt %s --func cols --signature 'f64[:,:],f64[:]' --emit=appy | not appy-opt - --pass-pipeline='appy-reorder{outer=j inner=k}' 2>&1 | filecheck %s --check-prefix=SHARED
# RUN: appy-opt %s --func t --signature 'f64[:,:],f64[:,:]' --emit=appy | not appy-opt - --pass-pipeline='appy-reorder{outer=k inner=j}' 2>&1 | filecheck %s --check-prefix=NEST
import numpy as np
import appy


@appy.jit
def t(a, b):
    for j in range(a.shape[0]):
        for k in range(a.shape[1]):
            b[k, j] = a[j, k] * 2.0 + b[k, j]


@appy.jit
def total(a, s):
    for j in range(a.shape[0]):
        for k in range(a.shape[1]):
            s[0] += a[j, k]


@appy.jit
def cols(a, c):
    for j in range(a.shape[0]):
        for k in range(a.shape[1]):
            c[k] = c[k] * 0.5 + a[j, k]
# CHECK-LABEL: func.func @t
# CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
# CHECK-NEXT: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
# CHECK: } {appy.inames = ["j"]}
# CHECK-NEXT: } {appy.inames = ["k"]}
# SUM: error: cannot reorder `j` and `k`: an array the body writes is written at the same element by several iterations
# SHARED: error: cannot reorder `j` and `k`: an array the body writes is written at the same element by several iterations
# NEST: error: cannot reorder `k` and `j`: `j` is not directly inside `k`
