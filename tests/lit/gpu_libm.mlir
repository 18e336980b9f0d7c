// appy-gpu-libm: in kernels, math.trunc becomes the LLVM intrinsic, float32 tan is
// computed in float64, erfc (float64, and float32 computed in float64) becomes appy's
// expansion (no math.erfc left, libdevice's erf below 0.46875); float32 exp and host
// code are left alone.
// RUN: appy-opt %s --pass-pipeline='appy-gpu-libm' | filecheck %s
// RUN: appy-opt %s --pass-pipeline='appy-gpu-libm' | appy-opt - | filecheck %s
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @f(%x: f32, %y: f64) kernel {
      %a = math.tan %x : f32
      %b = math.trunc %y : f64
      %c = math.exp %x : f32
      gpu.return
    }
    gpu.func @g(%x: f32, %y: f64, %o: memref<2xf64>, %o32: memref<1xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %e = math.erfc %y : f64
      memref.store %e, %o[%c0] : memref<2xf64>
      %f = math.erfc %x : f32
      memref.store %f, %o32[%c0] : memref<1xf32>
      gpu.return
    }
  }
  func.func @host(%x: f32, %y: f64) -> f32 {
    %t = math.tan %x : f32
    %e = math.erfc %y : f64
    return %t : f32
  }
}
// CHECK-LABEL: gpu.func @f
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK-NEXT: math.tan %{{.*}} : f64
// CHECK-NEXT: arith.truncf %{{.*}} : f64 to f32
// CHECK-NEXT: llvm.intr.trunc
// CHECK-NEXT: math.exp %{{.*}} : f32
// CHECK-LABEL: gpu.func @g
// CHECK-NOT: math.erfc
// CHECK: math.erf %{{.*}} : f64
// CHECK-NOT: math.erfc
// CHECK: math.fma
// CHECK-NOT: math.erfc
// CHECK: arith.select
// CHECK-NOT: math.erfc
// CHECK: memref.store %{{.*}} : memref<2xf64>
// CHECK-NOT: math.erfc
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK-NOT: math.erfc
// CHECK: math.erf %{{.*}} : f64
// CHECK-NOT: math.erfc
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK-NEXT: memref.store %{{.*}} : memref<1xf32>
// CHECK-NEXT: gpu.return
// CHECK-LABEL: func.func @host
// CHECK-NEXT: math.tan %{{.*}} : f32
// CHECK-NEXT: math.erfc %{{.*}} : f64
