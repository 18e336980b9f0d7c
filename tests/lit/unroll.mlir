// appy-unroll generates the code of the `unr` and `ilp` tags: a tagged `scf.for` with
// constant bounds becomes its iterations in order, the carried value flowing from one
// copy to the next; the loop's result is the last copy's. A tagged loop whose trip count
// is not a constant, or above the budget (`max`), is refused.
// RUN: appy-opt %s --pass-pipeline='appy-unroll' | filecheck %s
// RUN: not appy-opt %s --pass-pipeline='appy-unroll{max=2}' 2>&1 | filecheck %s --check-prefix=BUDGET
func.func @f(%a: memref<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %r = scf.for %k = %c0 to %c3 step %c1 iter_args(%acc = %z) -> (f64) {
    %x = memref.load %a[%k] : memref<?xf64>
    %s = arith.addf %acc, %x : f64
    scf.yield %s : f64
  } {appy.inames = ["k"], appy.tags = ["unr"]}
  return %r : f64
}
// CHECK-LABEL: func.func @f
// CHECK-NOT: scf.for
// CHECK: %[[X0:.*]] = memref.load %{{.*}}[%c0{{.*}}]
// CHECK: %[[S0:.*]] = arith.addf %{{.*}}, %[[X0]]
// CHECK: %[[X1:.*]] = memref.load %{{.*}}[%c1{{.*}}]
// CHECK: %[[S1:.*]] = arith.addf %[[S0]], %[[X1]]
// CHECK: %[[X2:.*]] = memref.load %{{.*}}[%c2{{.*}}]
// CHECK: %[[S2:.*]] = arith.addf %[[S1]], %[[X2]]
// CHECK: return %[[S2]]
// BUDGET: error: loop `k` has 3 iterations, more than the unrolling budget of 2: split it first and unroll the inner loop
