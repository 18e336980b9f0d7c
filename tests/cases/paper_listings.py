"""The APPy paper's listings (seed 001, Listings 1-8), with their bodies as printed.

What is added around them, and why:
- the imports the listings leave out (`from appy import jit, exp, maximum, mv`);
- Listing 2 is printed with `@appx.jit` (the paper's rendering of `appy`): kept, with
  `import appy as appx`;
- Listing 1 is printed without a decorator (the plain Python it starts from); it gets
  `@appy.jit` so that it is compiled too (without pragmas its loop runs sequentially);
- Listing 8 is printed with `y` undefined; `y` is added as a parameter (the generated
  code of the listing's second half, `_generated`, is the same computation).
Listings 3 and 4 both define `vector_add`; the second is `vector_add_simd` here."""
import numpy as np
import appy
import appy as appx
from appy import jit, exp, maximum, mv


# Listing 1.
# test: X:f64[m,n] labels:i64[m]@0..4 centroids:f64[4,n] M:int=m N:int=n | m=1,9,100 n=1,5,33
@appy.jit
def group_by_sum_plain(X, labels, centroids, M, N):
    for i in range(M):
        label = labels[i]
        centroids[label, :N] += X[i, :N]


# Listing 2.
# test: X:f64[m,n] labels:i64[m]@0..4 centroids:f64[4,n] M:int=m N:int=n | m=1,9,100 n=1,5,33
@appx.jit(auto_simd=True)
def group_by_sum(X, labels, centroids, M, N):
    #pragma parallel for
    for i in range(M):
        label = labels[i]
        #pragma atomic
        centroids[label, :N] += X[i, :N]


# Listing 3.
# test: A:f32[n] B:f32[n] C:f32[n] N:int=n | n=1,7,1000,4097
@appy.jit
def vector_add(A, B, C, N):
    #pragma parallel for
    for i in range(N):
        C[i] = A[i] + B[i]


# Listing 4 (top).
# test: A:f32[n] B:f32[n] C:f32[n] N:int=n | n=1,7,1000,4097
@appy.jit
def vector_add_simd(A, B, C, N):
    #pragma parallel for simd
    for i in range(N):
        C[i] = A[i] + B[i]


# Listing 4 (bottom).
# test: A_row:indptr[r]@0..6 A_col:i64[k]@0..40 A_val:f64[k] x:f64[40] y:f64[r-1] N:int=r | r=2,8,64 k=400
@appy.jit
def spmv(A_row, A_col, A_val, x, y, N):
    #pragma parallel for
    for i in range(N - 1):
        y[i] = 0.0
        #pragma simd
        for j in range(A_row[i], A_row[1+i]):
            col = A_col[j]
            y[i] += A_val[j] * x[col]


# Listing 5.
# test: A:f64[n] s:f64[1] N:int=n | n=1,7,1000,4097
@appy.jit
def vector_sum(A, s, N):
    #pragma parallel for simd
    for i in range(N):
        #pragma atomic
        s[0] += A[i]


# Listing 6 (left).
# test: a:f32[m,n]@-4..4 b:f32[m,n] M:int=m N:int=n | m=1,5,64 n=1,13,777
@jit
def softmax_loop_oriented(a, b, M, N):
    #pragma parallel for
    for i in range(M):
        m = float('-inf')
        #pragma simd
        for j in range(N):
            m = maximum(m, a[i,j])

        s = 0.0
        #pragma simd
        for j in range(N):
            s += exp(a[i,j] - m)

        #pragma simd
        for j in range(N):
            b[i,j] = exp(a[i,j] - m) / s


# Listing 6 (right).
# test: a:f32[m,n]@-4..4 b:f32[m,n] M:int=m N:int=n | m=1,5,64 n=1,13,777
@jit(auto_simd=True)
def softmax_tensor_oriented(a, b, M, N):
    #pragma parallel for
    for i in range(M):
        m = max(a[i, :N])
        s = sum(exp(a[i, :N] - m))
        b[i, :N] = exp(a[i, :N] - m) / s


# Listing 7 (top).
# test: alpha:float beta:float A:f64[m,n] B:f64[m,n] x:f64[n] y:f64[m] tmp:f64[m] M:int=m N:int=n | m=1,7,100 n=1,9,130
@appy.jit(auto_simd=True)
def gesummv(alpha, beta, A, B, x, y, tmp, M, N):
    #pragma :M=>parallel :N=>reduction(sum:y)
    y[:M] = mv(alpha * A[:M, :N], x[:N])
    #pragma :M=>parallel :N=>reduction(sum:tmp)
    tmp[:M] = mv(beta * B[:M, :N], x[:N])
    #pragma :M=>parallel
    y[:M] += tmp[:M]


# Listing 7 (bottom).
# test: A:f64[m,n] B:f64[m,n] M:int=m N:int=n | m=3,7,64 n=3,11,100
@appy.jit(auto_simd=True)
def jacobi_2d_one_iteration(A, B, M, N):
    #pragma 1:M-1=>parallel 1:N-1=>parallel
    B[1:M-1, 1:N-1] = 0.2 * (A[1:M-1, 1:N-1] + A[1:M-1, :N-2] +
        A[1:M-1, 2:N] + A[2:M, 1:N-1] + A[0:M-2, 1:N-1])
    #pragma 1:M-1=>parallel 1:N-1=>parallel
    A[1:M-1, 1:N-1] = 0.2 * (B[1:M-1, 1:N-1] + B[1:M-1, :N-2] +
        B[1:M-1, 2:N] + B[2:M, 1:N-1] + B[0:M-2, 1:N-1])


# Listing 8 (before the transformation; `y` added as a parameter).
# test: alpha:float A:f64[m,n] x:f64[n] y:f64[m] | m=1,7,100 n=1,9,130
@appy.jit(auto_simd=True)
def kernel(alpha, A, x, y):
    M, N = A.shape
    #pragma :M=>parallel :N=>reduction(sum:y)
    y[:M] = mv(alpha * A[:M, :N], x[:N])


# Listing 8 (the generated code, `y` added as a parameter).
# test: alpha:float A:f64[m,n] x:f64[n] y:f64[m] | m=1,7,100 n=1,9,1300
@appy.jit
def _generated(alpha, A, x, y):
    M, N = A.shape
    #pragma parallel for
    for _i0 in range(0, M, 1):
        y[_i0] = 0.0
        for _i1 in range(0, N, appy.MVL):
            _v1 = appy.vidx(_i1, appy.MVL, N)
            y[_i0] += sum(alpha * A[_i0, _v1] * x[_v1])
