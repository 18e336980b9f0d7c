// appy-hoist-allocas moves scalar slots to the function's entry block.
// RUN: appy-opt %s --pass-pipeline='appy-hoist-allocas' | filecheck %s
func.func @f(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %s = memref.alloca() : memref<f64>
    %z = arith.constant 0.0 : f64
    memref.store %z, %s[] : memref<f64>
  }
  return
}
// CHECK-LABEL: func.func @f
// CHECK-NEXT: memref.alloca() : memref<f64>
// CHECK: scf.for
// CHECK-NOT: memref.alloca
// CHECK: return
