// appy-expand-erfc: every math.erfc, in any function, becomes appy's expansion (the
// GPU's erfc; the CPU back end runs this pass only under its test knob): float64
// directly, float32 computed in float64 and rounded; other ops are left alone.
// RUN: appy-opt %s --pass-pipeline='appy-expand-erfc' | filecheck %s
// RUN: appy-opt %s --pass-pipeline='appy-expand-erfc' | appy-opt - | filecheck %s
func.func @f(%x: f64, %y: f32) -> (f64, f32, f64) {
  %a = math.erfc %x : f64
  %b = math.erfc %y : f32
  %c = math.erf %x : f64
  return %a, %b, %c : f64, f32, f64
}
// CHECK-LABEL: func.func @f
// CHECK-NOT: math.erfc
// CHECK: math.erf %arg0 : f64
// CHECK-NOT: math.erfc
// CHECK: math.fma
// CHECK-NOT: math.erfc
// CHECK: arith.bitcast %{{.*}} : f64 to i64
// CHECK-NOT: math.erfc
// CHECK: %[[A:[0-9]+]] = arith.select %{{.*}} : f64
// CHECK-NEXT: arith.extf %arg1 : f32 to f64
// CHECK-NOT: math.erfc
// CHECK: %[[B:[0-9]+]] = arith.truncf %{{.*}} : f64 to f32
// CHECK-NEXT: %[[C:[0-9]+]] = math.erf %arg0 : f64
// CHECK-NEXT: return %[[A]], %[[B]], %[[C]] : f64, f32, f64
