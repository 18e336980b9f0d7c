// appy-half-in-f32: each float16/bfloat16 operation runs on float32 and its result is
// rounded back at once (two chained ops round twice); comparisons and math functions
// too; constants, selects and the conversions themselves stay. float64 to a 16-bit
// float goes through float32 rounded to odd; with cpu=1 float32 to bfloat16 is integer
// arithmetic.
// RUN: appy-opt %s --pass-pipeline='appy-half-in-f32' | filecheck %s
// RUN: appy-opt %s --pass-pipeline='appy-half-in-f32{cpu=1}' | filecheck %s --check-prefix=CPU
func.func @f(%a: f16, %b: f16, %c: bf16, %d: f64) -> (f16, i1, bf16, f16, bf16) {
  %m = arith.mulf %a, %b : f16
  %s = arith.addf %m, %a : f16
  %l = arith.cmpf olt, %s, %b : f16
  %e = math.exp %c : bf16
  %h = arith.truncf %d : f64 to f16
  %k = arith.truncf %d : f64 to bf16
  return %s, %l, %e, %h, %k : f16, i1, bf16, f16, bf16
}
// CHECK-LABEL: func.func @f
// CHECK: %[[A:[0-9]+]] = arith.extf %arg0 : f16 to f32
// CHECK: %[[B:[0-9]+]] = arith.extf %arg1 : f16 to f32
// CHECK: %[[M32:[0-9]+]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK: %[[M:[0-9]+]] = arith.truncf %[[M32]] : f32 to f16
// CHECK: arith.extf %[[M]] : f16 to f32
// CHECK: arith.addf %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.cmpf olt, %{{.*}} : f32
// CHECK: math.exp %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.truncf %arg3 : f64 to f32
// CHECK: arith.ori
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK-NOT: : f64 to f16
// CPU-LABEL: func.func @f
// CPU: math.exp %{{.*}} : f32
// CPU: arith.shrui
// CPU: arith.trunci %{{.*}} : i32 to i16
// CPU: arith.bitcast %{{.*}} : i16 to bf16
