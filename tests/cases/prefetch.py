"""`transform(prefetch(a))`: the reads of an array that a group's threads share are
loaded once into the group's shared memory on the GPU (a request the CPU drops). Each
function must agree with NumPy running the same source."""
import numpy as np
import appy


# A 1-D three-point stencil: one tile of MVL + 2 elements per group.
# test: a:f64[n] out:f64[n] | n=1,2,3,97,1000,4099
@appy.jit
def smooth3(a, out):
    #pragma parallel for simd transform(prefetch(a))
    for i in range(1, a.shape[0] - 1):
        out[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0


# A wider, one-sided footprint in float32, with a read that does not qualify (a
# gather through `idx`) beside the ones that do.
# test: a:f32[n] idx:i64[n]@0..4 out:f32[n] | n=5,131,2050 rtol=1e-5 atol=1e-5
@appy.jit
def taps(a, idx, out):
    #pragma parallel for simd transform(prefetch(a))
    for i in range(a.shape[0] - 4):
        out[i] = 0.5 * a[i] - a[i + 1] + 0.25 * a[i + 4] + a[idx[i]]


# A 2-D Jacobi sweep: per row, tiles of rows i-1, i and i+1 inside the chunks of the
# vector loop (columns longer than a group's threads).
# test: A:f64[m,n] B:f64[m,n] | m=1,3,17 n=1,5,1500
@appy.jit
def jacobi2d(A, B):
    #pragma parallel for transform(prefetch(A))
    for i in range(1, A.shape[0] - 1):
        #pragma simd
        for j in range(1, A.shape[1] - 1):
            B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])


# Individual mode (a parallel loop with no vector work runs one iteration per thread)
# with a split into groups of 128, prefetching two arrays.
# test: a:f64[n] b:f64[n] out:f64[n] | n=1,2,129,1001
@appy.jit
def two_arrays(a, b, out):
    #pragma parallel for transform(split(i, 128), prefetch(a), prefetch(b))
    for i in range(1, a.shape[0]):
        out[i] = a[i] * b[i - 1] - a[i - 1] * b[i]


# Time steps: each sweep prefetches the array the other one writes (writes outside
# the prefetching loop are other kernels, ordered with it).
# test: A:f64[m,n] B:f64[m,n] | m=1,3,17 n=2,5,300
@appy.jit
def jacobi_steps(A, B):
    for t in range(3):
        #pragma parallel for transform(prefetch(A))
        for i in range(1, A.shape[0] - 1):
            #pragma simd
            for j in range(1, A.shape[1] - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        #pragma parallel for transform(prefetch(B))
        for i in range(1, A.shape[0] - 1):
            #pragma simd
            for j in range(1, A.shape[1] - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])


# A 17-tap filter: the tap loop unrolled (`tag(k, unr)`) gives constant offsets, so one
# tile of MVL + 16 elements serves all of a group's reads.
# test: a:f32[n] w:f32[17] out:f32[n] | n=17,18,300,4111 rtol=1e-5 atol=1e-5
@appy.jit
def conv17(a, w, out):
    #pragma parallel for simd transform(tag(k, unr), prefetch(a))
    for i in range(a.shape[0] - 16):
        s = 0.0
        for k in range(17):
            s += w[k] * a[i + k]
        out[i] = s
