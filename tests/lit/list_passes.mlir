// The Rust passes are listed with their files (in the folder of their level) and their
// typed options, and a pipeline mixes them with upstream passes; a value not of its
// option's type is refused.
// RUN: appy-opt --list-passes | filecheck %s --check-prefix=LIST
// RUN: appy-opt %s --pass-pipeline='cse,appy-hoist-allocas,cse' | filecheck %s
// RUN: not appy-opt %s --pass-pipeline='appy-strip-mine{mvl=96}' 2>&1 | filecheck %s --check-prefix=BAD
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
// LIST-NEXT: crates/appy-passes/src/loops/strip_mine.rs
// LIST-NEXT: mvl=1024 (power of two in [1, 4096]): lanes per worker
// LIST: appy-gpu-sink-loads
// LIST: appy-gpu-outline
// LIST-NEXT: crates/appy-passes/src/gpu/outline.rs
// LIST: appy-gpu-map-threads
// LIST: appy-hoist-allocas
// LIST: appy-test-barriers
// CHECK-LABEL: func.func @f
// CHECK-NEXT: memref.alloca
// CHECK: scf.for
// BAD: error: appy-strip-mine: option mvl must be a power of two in [1, 4096], got 96
