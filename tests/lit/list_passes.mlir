// The Rust passes are listed, and a pipeline mixes them with upstream passes.
// RUN: appy-opt --list-passes | filecheck %s --check-prefix=LIST
// RUN: appy-opt %s --pass-pipeline='cse,appy-hoist-allocas,cse' | filecheck %s
func.func @f(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %s = memref.alloca() : memref<index>
    memref.store %i, %s[] : memref<index>
  }
  return
}
// LIST: appy-strip-mine
// LIST: appy-hoist-allocas
// LIST: appy-gpu-outline
// CHECK-LABEL: func.func @f
// CHECK-NEXT: memref.alloca
// CHECK: scf.for
