# appy-solve-library: on the GPU path, a forward-substitution loop becomes appy.trsv
# (cuBLAS) and a column-by-column Cholesky loop nest appy.potrf (cuSOLVER), whatever the
# spelling of the dot products; near misses stay loops, and on the CPU path nothing
# changes.
# RUN: appy-opt %s --func trisolv --signature 'f64[:,:],f64[:],f64[:]' --emit=gpu | filecheck %s --check-prefix=TRI
# RUN: appy-opt %s --func trisolv --signature 'f64[:,:],f64[:],f64[:]' --emit=gpu | appy-opt - | filecheck %s --check-prefix=TRI
# RUN: appy-opt %s --func trisolv --signature 'f64[:,:],f64[:],f64[:]' --emit=loops | filecheck %s --check-prefix=CPU
import numpy as np
import appy


@appy.jit
def trisolv(L, x, b):
    N = x.shape[0]
    #pragma sequential for
    for i in range(N):
        x[i] = (b[i] - np.sum(L[i, :i] * x[:i])) / L[i, i]

# TRI-LABEL: func.func @trisolv
# TRI-NOT: gpu.launch_func
# TRI: "appy.trsv"(%arg0, %arg1, %arg2, %{{.*}}) {lower = 1 : i64}
# TRI-NOT: gpu.launch_func
# TRI: return

# CPU-LABEL: func.func @trisolv
# CPU-NOT: appy.trsv
# CPU: scf.for

# The NPBench spelling (`@`, the operands swapped), solving in place (b is x), and a
# bound that is an argument.
# RUN: appy-opt %s --func trisolv_inplace --signature 'f64[:,:],f32[:],int' --emit=gpu | filecheck %s --check-prefix=INPLACE-F32
# RUN: appy-opt %s --func trisolv_inplace --signature 'f32[:,:],f32[:],int' --emit=gpu | filecheck %s --check-prefix=INPLACE

@appy.jit
def trisolv_inplace(L, x, n):
    for i in range(n):
        x[i] = (x[i] - x[:i] @ L[i, :i]) * (1.0 / L[i, i])

# INPLACE-LABEL: func.func @trisolv_inplace
# INPLACE: "appy.trsv"(%arg0, %arg1, %arg1, %{{.*}})
# Mixed element types stay loops.
# INPLACE-F32-LABEL: func.func @trisolv_inplace
# INPLACE-F32-NOT: appy.trsv
# INPLACE-F32: gpu.launch_func

# Near misses: a loop that does not start at 0, a wrong diagonal, an upper triangle,
# a unit diagonal. None is a lower-triangular solve from row 0.
# RUN: appy-opt %s --func near_misses --signature 'f64[:,:],f64[:],f64[:]' --emit=gpu | filecheck %s --check-prefix=MISS

@appy.jit
def near_misses(L, x, b):
    N = x.shape[0]
    for i in range(1, N):
        x[i] = (b[i] - np.sum(L[i, :i] * x[:i])) / L[i, i]
    for i in range(N):
        x[i] = (b[i] - np.sum(L[i, :i] * x[:i])) / L[i, 0]
    for i in range(N):
        x[i] = (b[i] - np.sum(L[:i, i] * x[:i])) / L[i, i]
    for i in range(N):
        x[i] = b[i] - np.sum(L[i, :i] * x[:i])

# MISS-LABEL: func.func @near_misses
# MISS-NOT: appy.trsv
# MISS: return

# Cholesky, column by column; the loop over the rows may be parallel or not.
# RUN: appy-opt %s --func cholesky --signature 'f64[:,:]' --emit=gpu | filecheck %s --check-prefix=CHOL
# RUN: appy-opt %s --func cholesky --signature 'f64[:,:]' --emit=gpu | appy-opt - | filecheck %s --check-prefix=CHOL
# RUN: appy-opt %s --func cholesky_seq --signature 'f32[:,:],int' --emit=gpu | filecheck %s --check-prefix=CHOL-SEQ

@appy.jit
def cholesky(A):
    N = A.shape[0]
    for j in range(N):
        A[j, j] = np.sqrt(A[j, j] - np.sum(A[j, :j] * A[j, :j]))
        #pragma parallel for
        for i in range(j + 1, N):
            A[i, j] = (A[i, j] - np.sum(A[i, :j] * A[j, :j])) / A[j, j]

# CHOL-LABEL: func.func @cholesky
# CHOL-NOT: gpu.launch_func
# CHOL: "appy.potrf"(%arg0, %{{.*}}) {lower = 1 : i64}
# CHOL-NOT: gpu.launch_func
# CHOL: return

@appy.jit
def cholesky_seq(A, n):
    for j in range(n):
        A[j, j] = np.sqrt(A[j, j] - A[j, :j] @ A[j, :j])
        for i in range(j + 1, n):
            A[i, j] = (A[i, j] - A[j, :j] @ A[i, :j]) / A[j, j]

# CHOL-SEQ-LABEL: func.func @cholesky_seq
# CHOL-SEQ: "appy.potrf"(%arg0, %{{.*}})

# Near misses: the row loop starts at the diagonal (it would overwrite it), the row
# loop runs to another bound, the diagonal statement comes after the rows.
# RUN: appy-opt %s --func cholesky_misses --signature 'f64[:,:],int' --emit=gpu | filecheck %s --check-prefix=CHOL-MISS

@appy.jit
def cholesky_misses(A, m):
    N = A.shape[0]
    for j in range(N):
        A[j, j] = np.sqrt(A[j, j] - np.sum(A[j, :j] * A[j, :j]))
        for i in range(j, N):
            A[i, j] = (A[i, j] - np.sum(A[i, :j] * A[j, :j])) / A[j, j]
    for j in range(N):
        A[j, j] = np.sqrt(A[j, j] - np.sum(A[j, :j] * A[j, :j]))
        for i in range(j + 1, m):
            A[i, j] = (A[i, j] - np.sum(A[i, :j] * A[j, :j])) / A[j, j]
    for j in range(N):
        for i in range(j + 1, N):
            A[i, j] = (A[i, j] - np.sum(A[i, :j] * A[j, :j])) / A[j, j]
        A[j, j] = np.sqrt(A[j, j] - np.sum(A[j, :j] * A[j, :j]))

# CHOL-MISS-LABEL: func.func @cholesky_misses
# CHOL-MISS-NOT: appy.potrf
# CHOL-MISS: return

# NPBench's row-by-row Cholesky (the first element, then each row's off-diagonal
# elements in place, then its diagonal) is the same factorisation.
# RUN: appy-opt %s --func cholesky_rows --signature 'f64[:,:]' --emit=gpu | filecheck %s --check-prefix=ROWS
# RUN: appy-opt %s --func cholesky_rows --signature 'f64[:,:]' --emit=gpu | appy-opt - | filecheck %s --check-prefix=ROWS

@appy.jit
def cholesky_rows(A):
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])

# ROWS-LABEL: func.func @cholesky_rows
# ROWS-NOT: gpu.launch_func
# ROWS: arith.maxsi
# ROWS: "appy.potrf"(%arg0, %{{.*}}) {lower = 1 : i64}
# ROWS-NOT: gpu.launch_func
# ROWS: return

# Near misses of the row form: no first element, the row loop from 0, the inner loop
# one step too far (it would read the diagonal before it is computed).
# RUN: appy-opt %s --func rows_misses --signature 'f64[:,:]' --emit=gpu | filecheck %s --check-prefix=ROWS-MISS

@appy.jit
def rows_misses(A):
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(0, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i + 1):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])

# ROWS-MISS-LABEL: func.func @rows_misses
# ROWS-MISS-NOT: appy.potrf
# ROWS-MISS: return
