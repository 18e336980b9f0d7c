"""NumPy code around and inside the loops: whole arrays, open slices, views, new arrays
from expressions, returns of array expressions (issue: APPy programs as people write
them). Each `# test:` line runs the function on random inputs against NumPy."""
import numpy as np
import appy


# test: a:f64[n] b:f64[n] | n=1,7,256,1000
@appy.jit
def open_slices_1d(a, b):
    b[1:] = a[:-1] * 2.0
    b[0] = a[-1]


# test: A:f64[m,n] B:f64[m,n] | m=1,3,17 n=1,5,255
@appy.jit
def open_slices_2d(A, B):
    B[:, :] = 0.0
    B[1:-1, 1:-1] = 0.25 * (A[:-2, 1:-1] + A[2:, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:])


# test: A:f64[m,n] x:f64[n] y:f64[m] | m=1,4,33 n=1,7,300
@appy.jit
def rows_and_columns(A, x, y):
    #pragma parallel for
    for i in range(A.shape[0]):
        y[i] = np.sum(A[i, :] * x)
    A[:, 0] = y


# test: A:f64[m,n] | m=2,9 n=1,31
@appy.jit
def row_of_matrix(A):
    for i in range(1, A.shape[0]):
        A[i] += A[i - 1]


# test: B:f64[m,n] alpha:float | m=1,5,64 n=3,100
@appy.jit
def scale_whole(B, alpha):
    B *= alpha
    B += 1.0


# test: y:f64[n] | n=1,17,1000
@appy.jit
def fill_zero(y):
    y[:] = 0
    y[::3] = 1.5


# test: A:f64[m,n] B:f64[m,n] | m=1,5,40 n=1,3,130
@appy.jit
def add_new(A, B):
    C = A + B
    return C


# test: A:f64[m,n] v:f64[n] | m=1,6,50 n=1,9,200
@appy.jit
def matvec_new(A, v):
    x = A @ v
    return x


# test: x:f64[n] | n=1,13,1000
@appy.jit
def method_sum(x):
    s = x.sum()
    return s


# test: a:f64[n] trace:float | n=1,8,300
@appy.jit
def return_expression(a, trace):
    return a + trace


# test: x:f64[n] N:int=n-1 | n=2,9,1000
@appy.jit
def return_max(x, N):
    return max(x[:N])


# test: x:f32[n] N:int=n alpha:float | n=1,31,1000
@appy.jit
def return_scaled(x, N, alpha):
    return x[:N] + alpha


# test: a:f64[n] b:f64[n] | n=1,5,99
@appy.jit
def return_tuple(a, b):
    return a - b, np.sum(a * b)


# Whole-array integer // and % whose divisor can be 0 (NumPy: 0, with a warning).
# test: a:i64[n]@-50..50 b:i64[n]@-3..3 | n=1,7,257
@appy.jit
def int_div_whole(a, b):
    return a // b, a % b


# test: a:f64[n] | n=1,10,255
@appy.jit
def strided(a):
    a[::2] = a[::2] * 3.0
    a[1::2] += 1.0


# test: a:f64[n] b:f64[n] | n=1,6,100
@appy.jit
def reversed_copy(a, b):
    b[:] = a[::-1]


# test: a:f64[n] | n=1,7,101
@appy.jit
def view_binding(a):
    tail = a[1:]
    tail *= 2.0
    head = a[:3]
    head[0] = 7.0


# test: A:f64[m,n] | m=1,4,30 n=1,6,40
@appy.jit
def transpose_view(A):
    B = A.T
    return B.sum(axis=1) + 0.0


# test: A:f64[m,n] out:f64[n] | m=1,5,33 n=1,4,20
@appy.jit
def row_view_in_loop(A, out):
    for i in range(A.shape[0]):
        r = A[i]
        out[:] += r


# test: a:f64[n] N:int=n+5 | n=1,7,64
@appy.jit
def clamped_slice(a, N):
    a[:N] = a[:N] + 1.0


# test: a:f64[n] k:int=0-2 | n=3,9
@appy.jit
def negative_dynamic_bound(a, k):
    a[k:] = 0.5


# test: A:f64[m,n] | m=1,4,33 n=2,9
@appy.jit
def reductions_axis(A):
    return A.sum(axis=0), A.max(axis=1), A.min(), A.mean(axis=0), np.prod(A[:, :2], axis=1)


# test: a:f64[n] | n=1,12,500
@appy.jit
def copy_fill_astype(a):
    b = a.copy()
    b.fill(2.0)
    c = a.astype(np.float32)
    return b, c


# test: a:f64[n] | n=1,10,300
@appy.jit
def clip_where(a):
    b = np.clip(a, -0.5, 0.5)
    c = np.where(a > 0, a, 0.0)
    return b + c


# test: n:int=n | n=1,5,100
@appy.jit
def arange_values(n):
    x = np.arange(n) * 2
    y = np.arange(1, n + 1, 2)
    return x, y


# test: a:f64[n] | n=1,6,200
@appy.jit
def attributes(a):
    n = len(a)
    b = np.zeros(a.shape, dtype=a.dtype)
    c = np.empty_like(a)
    c[:] = a.size + a.ndim + n
    d = np.full_like(a, 3.0)
    e = np.ones(n, 'float32')
    f = np.zeros(n, a.dtype)
    b[:] = d + c + e + f
    return b


# The syrk of APPy's README: a tensor statement in an unannotated loop inside a
# parallel loop (the loop stays sequential in the worker).
# test: alpha:float beta:float C:f64[n,n] A:f64[n,m] | n=1,5,33 m=1,7,20
@appy.jit
def syrk(alpha, beta, C, A):
    M, N = A.shape
    #pragma parallel for
    for i in range(M):
        C[i, :i + 1] *= beta
        for k in range(N):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]
    return C


# Column reductions (over axis 0): on the CPU the rows are walked with the columns in a
# contiguous inner loop, rows in parallel when there are at least as many rows as
# columns, else blocks of columns in parallel (both forms below).
# test: A:f64[m,n] s:f64[n] mu:f64[n] x:f64[n] | m=1,3,700 n=1,5,1031
# test: A:f32[m,n] s:f32[n] mu:f32[n] x:f32[n] | m=2,600 n=7,1500 rtol=1e-5 atol=1e-5
@appy.jit
def column_reductions(A, s, mu, x):
    s[:] = np.sum(A, axis=0)
    mu[:] = np.mean(A, axis=0) * 2.0 - 1.0
    x[:] = np.max(A[:, :], axis=0)


# np.zeros on the CPU comes zeroed from calloc (no fill): elements never written read
# 0 (returned, summed), for every dtype, rank 1 to 3.
# test: a:f64[n] | n=1,7,1000
@appy.jit
def zeros_untouched(a):
    N = a.shape[0]
    t = np.zeros((N, N))
    c = np.zeros((2, N, 3), dtype=np.int32)
    m = np.zeros(N, dtype=np.bool_)
    f = np.zeros(N + 1, np.float32)
    #pragma parallel for
    for i in range(N):
        t[i, i] = a[i]
        c[1, i, 2] = i
        m[i] = a[i] > 0.0
    return t, np.sum(c), m, f


# Consecutive parallel loops: fused on the CPU when every shared array is touched at the
# same index (the first two), not across loops of other ranges (the third and fourth),
# nor when a loop reads a neighbour the previous one wrote (the last two).
# test: a:f64[n] b:f64[n] c:f64[n] | n=1,7,1000,4099
@appy.jit
def consecutive_loops(a, b, c):
    N = a.shape[0]
    #pragma parallel for simd
    for i in range(N):
        b[i] = a[i] + 1.0
    #pragma parallel for simd
    for i in range(N):
        a[i] = b[i] * 2.0 + c[i]
    #pragma parallel for
    for i in range(N - 1):
        c[i] = b[i + 1] - a[i]
    #pragma parallel for
    for i in range(N // 2):
        b[i] = c[2 * i]
    #pragma parallel for
    for i in range(N - 1):
        c[i] = b[i] + 1.0
    #pragma parallel for
    for i in range(N - 1):
        b[i] = c[i + 1] * 0.5


# A statement reading its target array through another row (a constant index that
# differs: disjoint, no temporary on the CPU) and through the same row shifted (a
# temporary: NumPy's value is computed before any element is written).
# test: a:f64[3,n] f:f64[4] | n=1,7,1000
@appy.jit
def rows_of_target(a, f):
    for t in range(3):
        a[0, :] = f[t]
        a[1, :] += a[0, :] * f[t + 1]
        a[2, 1:] += a[2, :-1]
