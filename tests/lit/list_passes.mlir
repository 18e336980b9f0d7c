// The Rust passes are listed with their files, and a pipeline mixes them with upstream
// passes.
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
// LIST-NEXT: crates/appy-passes/src/strip_mine.rs
// LIST: appy-gpu-sink-loads
// LIST: appy-gpu-outline
// LIST-NEXT: crates/appy-passes/src/gpu_outline.rs
// LIST: appy-gpu-map-threads
// LIST: appy-hoist-allocas
// LIST: appy-test-barriers
// CHECK-LABEL: func.func @f
// CHECK-NEXT: memref.alloca
// CHECK: scf.for
