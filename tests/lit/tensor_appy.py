# The appy level of a tensor statement (seed 001 Listing 8): views of the operands, the
# element-wise ops as appy.ew, the contraction as appy.reduce, and appy.assign with
# the pragma (loop order, parallel, simd); the printed IR re-parses.
# RUN: appy-opt %s --signature 'f64,f64[:,:],f64[:],f64[:]' --emit=appy | filecheck %s
# RUN: appy-opt %s --signature 'f64,f64[:,:],f64[:],f64[:]' --emit=appy | appy-opt - | filecheck %s
import numpy as np
import appy
from appy import mv


@appy.jit(auto_simd=True)
def kernel(alpha, A, x, y):
    M, N = A.shape
    #pragma :M=>parallel :N=>reduction(sum:y)
    y[:M] = mv(alpha * A[:M, :N], x[:N])

# CHECK-LABEL: func.func @kernel
# CHECK: %[[A:[a-z_0-9]+]] = "appy.view"(%arg1, {{.*}}) {dims = array<i64: 0, 1>} : (memref<?x?xf64>, i64, i64) -> tensor<?x?xf64>
# CHECK: %[[S:[a-z_0-9]+]] = "appy.ew"(%arg0, %[[A]]) {op = "arith.mulf"
# CHECK: %[[X:[a-z_0-9]+]] = "appy.view"(%arg2, {{.*}}) {dims = array<i64: 1>} : (memref<?xf64>, i64) -> tensor<?xf64>
# CHECK: %[[P:[a-z_0-9]+]] = "appy.ew"(%[[S]], %[[X]]) {op = "arith.mulf"
# CHECK: %[[R:[a-z_0-9]+]] = "appy.reduce"(%[[P]]) {dims = array<i64: 1>, kind = "sum"} : (tensor<?x?xf64>) -> tensor<?xf64>
# CHECK: "appy.assign"(%arg3, %[[R]], {{.*}}) {dims = array<i64: 0>, {{.*}}order = array<i64: 0, 1>, parallel = array<i64: 1, 0>, simd = array<i64: 0, 1>}
