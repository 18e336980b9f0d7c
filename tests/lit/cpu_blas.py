# appy-cpu-blas: on the CPU path with a BLAS library, appy-tensor-library{cpu=1} turns a
# matrix product into appy.gemm and appy-cpu-blas into a call of CBLAS dgemm (ILP64,
# row-major) through the address the runtime writes into @appy_blas_dgemm.
# RUN: appy-opt %s --func gemm --signature 'float,float,f64[:,:],f64[:,:],f64[:,:],int,int,int' --pass-pipeline='cse,appy-tensor-library{cpu=1},appy-cpu-blas,canonicalize' | filecheck %s
# RUN: appy-opt %s --func gemm --signature 'float,float,f64[:,:],f64[:,:],f64[:,:],int,int,int' --pass-pipeline='cse,appy-tensor-library{cpu=1},appy-cpu-blas,canonicalize' | appy-opt - | filecheck %s
# A parameter that takes strided views (here A) cannot be passed to BLAS: loops.
# RUN: appy-opt %s --func gemm --signature 'float,float,f64[:,:],f64[:,:],f64[:,:],int,int,int' --pass-pipeline='cse,appy-tensor-library{cpu=1 strided=00010},appy-cpu-blas' | filecheck %s --check-prefix=STRIDED
import numpy as np
import appy


@appy.jit
def gemm(alpha, beta, C, A, B, M, N, K):
    C[:M, :N] = alpha * A[:M, :K] @ B[:K, :N] + beta * C[:M, :N]

# CHECK: memref.global "public" @appy_blas_dgemm : memref<1xi64> = dense<0>
# CHECK-LABEL: func.func @gemm
# CHECK-NOT: appy.assign
# CHECK: scf.if
# CHECK: memref.extract_aligned_pointer_as_index %arg2
# CHECK: memref.get_global @appy_blas_dgemm
# CHECK: llvm.call %{{.*}}(%c101_i32, %c111_i32, %c111_i32, {{.*}}, %arg0, {{.*}}, %arg1, {{.*}}) : !llvm.ptr, (i32, i32, i32, i64, i64, i64, f64, !llvm.ptr, i64, !llvm.ptr, i64, f64, !llvm.ptr, i64) -> ()
# CHECK: return

# STRIDED-LABEL: func.func @gemm
# STRIDED-NOT: llvm.call
# STRIDED: appy.assign

# x @ A is a gemv on A transposed (CblasTrans = 112), in float32 (sgemv).
# RUN: appy-opt %s --func vec_mat --signature 'f32[:,:],f32[:],f32[:],int,int' --pass-pipeline='cse,appy-tensor-library{cpu=1},appy-cpu-blas,canonicalize' | filecheck %s --check-prefix=GEMV

@appy.jit
def vec_mat(A, x, y, M, N):
    y[:N] += 2.0 * x[:M] @ A[:M, :N]

# GEMV: memref.global "public" @appy_blas_sgemv
# GEMV-LABEL: func.func @vec_mat
# GEMV: llvm.call %{{.*}}(%c101_i32, %c112_i32, {{.*}}) : !llvm.ptr, (i32, i32, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> ()

# A Cholesky loop nest on the CPU: appy.potrf with a result (LAPACK on a copy through
# the runtime's @appy_blas_dpotrf), and the loops kept for when it fails.
# RUN: appy-opt %s --func chol --signature 'f64[:,:]' --pass-pipeline='cse,appy-solve-library{cpu=1},appy-cpu-blas' | filecheck %s --check-prefix=CHOL

@appy.jit
def chol(A):
    N = A.shape[0]
    for j in range(N):
        A[j, j] = np.sqrt(A[j, j] - np.sum(A[j, :j] * A[j, :j]))
        #pragma parallel for
        for i in range(j + 1, N):
            A[i, j] = (A[i, j] - np.sum(A[i, :j] * A[j, :j])) / A[j, j]

# CHOL: memref.global "public" @appy_blas_dpotrf
# CHOL-LABEL: func.func @chol
# CHOL: %[[INFO:[0-9]+]] = llvm.call %{{.*}}(%{{.*}}) : !llvm.ptr, (!llvm.ptr, i64, i64, i64) -> i64
# CHOL: %[[OK:[0-9]+]] = arith.cmpi eq, %[[INFO]]
# CHOL: %[[FAILED:[0-9]+]] = arith.xori %[[OK]]
# CHOL: scf.if %[[FAILED]]
# CHOL: scf.for
# CHOL: math.sqrt
