// The loops level records its vector length as the constant bounds [0, W) of each
// lanes loop, and appy-gpu-outline takes the block size from there; a lanes loop with
// another bound is refused, not guessed.
// RUN: not appy-opt %s --pass-pipeline='appy-gpu-outline' 2>&1 | filecheck %s
func.func @f(%a: memref<?xf64>, %n: index, %w: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.parallel (%l) = (%c0) to (%w) step (%c1) {
      %x = arith.constant 1.0 : f64
      memref.store %x, %a[%l] : memref<?xf64>
      scf.reduce
    } {appy.lanes}
    scf.reduce
  } {appy.parallel}
  return
}
// CHECK: a lanes loop whose bounds are not constants
