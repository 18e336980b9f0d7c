# appy-tensor-fuse: a reduction used inside a larger element-wise expression is a
# fusion boundary. Inside a worker it is split into a statement that writes a private
# scalar; outside, into a temporary array. A reduction that is the statement's whole
# value stays fused (no split).
# RUN: appy-opt %s --func normalise --signature 'f64[:,:],f64[:,:],int,int' --emit=appy | appy-opt - --pass-pipeline='appy-tensor-fuse' | filecheck %s --check-prefix=ROW
# RUN: appy-opt %s --func normalise_all --signature 'f64[:,:],f64[:,:],int,int' --emit=appy | appy-opt - --pass-pipeline='appy-tensor-fuse' | filecheck %s --check-prefix=ALL
# RUN: appy-opt %s --func row_sums --signature 'f64[:,:],f64[:],int,int' --emit=appy | appy-opt - --pass-pipeline='appy-tensor-fuse' | filecheck %s --check-prefix=SUM
import numpy as np
import appy


@appy.jit
def normalise(x, out, M, N):
    #pragma parallel for
    for i in range(M):
        out[i, :N] = x[i, :N] / np.sum(x[i, :N])


@appy.jit
def normalise_all(x, out, M, N):
    #pragma :M=>parallel :N=>simd
    out[:M, :N] = x[:M, :N] / np.sum(x[:M, :N], axis=1)[:, None]


@appy.jit
def row_sums(x, y, M, N):
    #pragma :M=>parallel :N=>simd
    y[:M] = 2.0 * np.sum(x[:M, :N], axis=1) + y[:M]

# ROW-LABEL: func.func @normalise
# ROW: scf.parallel
# ROW: %[[R:[a-z_0-9]+]] = "appy.reduce"
# ROW: %[[S:[a-z_0-9]+]] = memref.alloca() : memref<f64>
# ROW: "appy.assign"(%[[S]], %[[R]], {{.*}}appy.split
# ROW: %[[L:[a-z_0-9]+]] = memref.load %[[S]][] : memref<f64>
# ROW: "appy.ew"({{.*}}, %[[L]]) {op = "arith.divf"
# ROW: "appy.assign"(%arg1,

# ALL-LABEL: func.func @normalise_all
# ALL: %[[R:[a-z_0-9]+]] = "appy.reduce"
# ALL: %[[T:[a-z_0-9]+]] = memref.alloc({{.*}}) : memref<?xf64>
# ALL: "appy.assign"(%[[T]], %[[R]], {{.*}}appy.split
# ALL: %[[V:[a-z_0-9]+]] = "appy.view"(%[[T]], {{.*}}) {dims = array<i64: 0>}
# ALL: "appy.ew"({{.*}}, %[[V]]) {op = "arith.divf"
# ALL: "appy.assign"(%arg1,

# SUM-LABEL: func.func @row_sums
# SUM-NOT: appy.split
# SUM-NOT: memref.alloc(
# SUM: "appy.assign"(%arg1,
