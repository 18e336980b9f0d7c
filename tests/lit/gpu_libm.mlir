// appy-gpu-libm: in kernels, math.trunc becomes the LLVM intrinsic, float32 tan is
// computed in float64; float32 exp and host code are left alone.
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
  }
  func.func @host(%x: f32) -> f32 {
    %t = math.tan %x : f32
    return %t : f32
  }
}
// CHECK-LABEL: gpu.func @f
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK-NEXT: math.tan %{{.*}} : f64
// CHECK-NEXT: arith.truncf %{{.*}} : f64 to f32
// CHECK-NEXT: llvm.intr.trunc
// CHECK-NEXT: math.exp %{{.*}} : f32
// CHECK-LABEL: func.func @host
// CHECK-NEXT: math.tan %{{.*}} : f32
