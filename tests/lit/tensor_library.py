# appy-tensor-library: on the GPU path, a matrix product statement (NPBench gemm)
# becomes appy.gemm (cuBLAS at run time) with alpha and beta; on the CPU path it stays
# a loop nest.
# RUN: appy-opt %s --func gemm --signature 'float,float,f64[:,:],f64[:,:],f64[:,:],int,int,int' --emit=gpu | filecheck %s
# RUN: appy-opt %s --func gemm --signature 'float,float,f64[:,:],f64[:,:],f64[:,:],int,int,int' --emit=gpu | appy-opt - | filecheck %s
# RUN: appy-opt %s --func gemm --signature 'float,float,f64[:,:],f64[:,:],f64[:,:],int,int,int' --emit=loops | filecheck %s --check-prefix=CPU
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

# A matrix-vector product is the same op with `vec = 1` (cuBLAS gemv); `x @ A` reads A
# transposed.
# RUN: appy-opt %s --func vec_mat --signature 'f64[:,:],f64[:],f64[:],int,int' --emit=gpu | filecheck %s --check-prefix=GEMV

@appy.jit
def vec_mat(A, x, y, M, N):
    y[:N] += 2.0 * x[:M] @ A[:M, :N]

# GEMV-LABEL: func.func @vec_mat
# GEMV-NOT: gpu.launch_func
# GEMV: "appy.gemm"(%arg2, %arg0, %arg1, {{.*}}) {trans_a = 1 : i64, trans_b = 0 : i64, vec = 1 : i64}

# CPU-LABEL: func.func @gemm
# CPU-NOT: appy.gemm
# CPU: scf.parallel
# CPU: arith.mulf
# CPU: appy.parallel
