"""Loop transforms asked for in a pragma's `transform(...)` clause (Loopy's split_iname
and tag_inames): each changes how the loops run, never what they compute, so each
function must agree with NumPy running the same source."""
import numpy as np
import appy


# The inner reduction split into chunks of 4 unrolled iterations, then the rest (n not a
# multiple of 4, and n < 4).
# test: A:f64[m,n] x:f64[n] y:f64[m] | m=1,5,33 n=1,3,4,7,130
@appy.jit
def matvec_unrolled(A, x, y):
    #pragma parallel for transform(split(j, 4, inner=unr))
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] = s


# A parallel loop split into groups of 64 threads by hand (the GPU schedule; on the CPU
# it stays one parallel loop), with a sequential inner loop split in order (ord).
# test: a:f64[n,m] b:f64[n,m] | n=1,63,64,65,200 m=1,2,9
@appy.jit
def rows_scaled(a, b):
    #pragma parallel for transform(split(i, 64, outer=g.0, inner=l.0), split(j, 2, outer=ord, inner=ord))
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            b[i, j] = 2.0 * a[i, j] + 1.0


# A loop with a constant trip count unrolled whole, and a split whose inner loop
# carries nothing between iterations (ilp), with steps other than 1.
# test: a:f64[n] b:f64[n] c:f64[n,m] | n=1,3,17,100 m=1,6,11
@appy.jit
def stencil_weights(a, b, c):
    #pragma parallel for transform(tag(k, unr), split(j, 3, inner=ilp))
    for i in range(1, a.shape[0] - 1):
        t = 0.0
        for k in range(3):
            t += (k + 1.0) * a[i - 1 + k]
        b[i] = t
        for j in range(1, c.shape[1], 2):
            c[i, j] = t * j


# `ilp` on a loop whose every iteration reads what the one before wrote: appy-ilp
# cannot interleave it, appy-unroll unrolls it in program order. And one it interleaves
# (each iteration its own element of `b`).
# test: a:f64[n,5] b:f64[n,4] | n=1,4,33
@appy.jit
def ilp_chain_and_rows(a, b):
    #pragma parallel for transform(tag(j, ilp), tag(k, ilp))
    for i in range(a.shape[0]):
        for j in range(4):
            a[i, j + 1] = a[i, j] * 0.5 + a[i, j + 1]
        for k in range(4):
            b[i, k] = a[i, k] * a[i, k + 1] - b[i, k]


# A split loop whose bounds are constants and a multiple of the factor: no rest loop;
# integer accumulation (exact).
# test: a:i64[n,8]@-100..100 out:i64[n] | n=1,2,29
@appy.jit
def int_row_sums(a, out):
    #pragma parallel for transform(split(j, 4, inner=unr))
    for i in range(a.shape[0]):
        s = 0
        for j in range(8):
            s += a[i, j] * (j - 3)
        out[i] = s


# Two inner loops interchanged (each element of b is written in one iteration only).
# test: a:f64[n,m,p] b:f64[n,p,m] | n=1,3,2 m=1,5,7 p=2,9,1
@appy.jit
def transpose_inner(a, b):
    #pragma parallel for transform(reorder(j, k))
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                b[i, k, j] = a[i, j, k] * 2.0 + b[i, k, j]


# A nest of two parallel loops joined into one (a step of 2 and an offset inside).
# test: a:f64[n,m] b:f64[n,m] | n=1,4,9 m=1,2,33
@appy.jit
def joined(a, b):
    #pragma parallel for transform(join(i, j))
    for i in range(a.shape[0]):
        #pragma parallel for
        for j in range(1, a.shape[1], 2):
            b[i, j] = 2.0 * a[i, j] + i


# `assume(j, multiple=8)`: the split by 4 needs no rest loop (the frontend checks the
# assumption at run time; these sizes keep it).
# test: a:f64[m,n] out:f64[m] | m=1,3,17 n=8,16,40
@appy.jit
def assumed(a, out):
    #pragma parallel for transform(assume(j, multiple=8), split(j, 4, inner=unr))
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j]
        out[i] = s


# `privatize(tmp)`: a temporary each iteration uses only at its own element becomes a
# scalar of the iteration (here the reduction of a row, as gesummv writes it).
# test: A:f64[m,n] B:f64[m,n] x:f64[n] alpha:float beta:float | m=1,3,130 n=1,7,257
@appy.jit
def gesummv_private(A, B, x, alpha, beta):
    tmp = np.empty(A.shape[0])
    y = np.empty(A.shape[0])
    #pragma parallel for transform(privatize(tmp))
    for i in range(A.shape[0]):
        tmp[i] = 0.0
        y[i] = 0.0
        for j in range(A.shape[1]):
            tmp[i] += A[i, j] * x[j]
            y[i] += B[i, j] * x[j]
        y[i] = alpha * tmp[i] + beta * y[i]
    return y


# A zero-filled temporary read before it is written, and a float32 one filled with a
# constant: each iteration's scalar starts at the fill.
# test: a:f32[n] out:f32[n] | n=1,5,1025 rtol=1e-5 atol=1e-6
@appy.jit
def private_fills(a, out):
    acc = np.zeros(a.shape[0], dtype=np.float32)
    base = np.full(a.shape[0], 2.5, dtype=np.float32)
    #pragma parallel for transform(privatize(acc), privatize(base))
    for i in range(a.shape[0]):
        acc[i] += a[i] * a[i]
        base[i] = base[i] * a[i]
        out[i] = acc[i] - base[i]
