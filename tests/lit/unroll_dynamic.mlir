// appy-unroll refuses a loop tagged to unroll whose trip count is not a constant, and
// says how to get one (split the loop, then unroll the inner loop of constant length).
// RUN: not appy-opt %s --pass-pipeline='appy-unroll' 2>&1 | filecheck %s
func.func @g(%a: memref<?xf64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  scf.for %k = %c0 to %n step %c1 {
    memref.store %z, %a[%k] : memref<?xf64>
  } {appy.inames = ["m"], appy.tags = ["ilp"]}
  return
}
// CHECK: unroll_dynamic.mlir:8:3: error: loop `m` is tagged to unroll but its trip count is not a constant: split it first and unroll the inner loop (`split(m, 4, inner=unr)` in a pragma's transform(...), appy-split-iname{iname=m factor=4 inner-tag=unr} in a pipeline)
