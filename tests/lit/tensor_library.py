# appy-tensor-library: on the GPU path, a matrix product statement (NPBench gemm)
# becomes appy.gemm (cuBLAS at run time) with alpha and beta; on the CPU path it stays
# a loop nest.
# RUN: appy-opt %s --signature 'float,float,f64[:,:],f64[:,:],f64[:,:],int,int,int' --emit=gpu | filecheck %s
# RUN: appy-opt %s --signature 'float,float,f64[:,:],f64[:,:],f64[:,:],int,int,int' --emit=gpu | appy-opt - | filecheck %s
# RUN: appy-opt %s --signature 'float,float,f64[:,:],f64[:,:],f64[:,:],int,int,int' --emit=loops | filecheck %s --check-prefix=CPU
import numpy as np
import appy


@appy.jit
def gemm(alpha, beta, C, A, B, M, N, K):
    C[:M, :N] = alpha * A[:M, :K] @ B[:K, :N] + beta * C[:M, :N]

# CHECK-LABEL: func.func @gemm
# CHECK-NOT: gpu.launch_func
# CHECK: "appy.gemm"(%arg2, %arg3, %arg4, {{.*}}, %arg0, %arg1) {trans_a = 0 : i64, trans_b = 0 : i64}
# CHECK-NOT: gpu.launch_func
# CHECK: return

# CPU-LABEL: func.func @gemm
# CPU-NOT: appy.gemm
# CPU: scf.parallel
# CPU: arith.mulf
# CPU: appy.parallel
