"""Time-stepped kernels, the programs a launch split between devices serves: every step
reads what the step before wrote on neighbouring rows (halos), the host reads results
between steps, and reductions and atomics combine what every group computed. Each
function must agree with NumPy running the same source, for sizes that do not divide
evenly and sizes smaller than the number of devices."""
import numpy as np
import appy


# test: A:f64[n,m] B:f64[n,m] T:int=4 | n=1,3,4,7,31,100 m=5
@appy.jit
def jacobi_2d(A, B, T):
    n, m = A.shape
    for t in range(T):
        #pragma parallel for
        for i in range(1, n - 1):
            B[i, 1:m - 1] = 0.2 * (A[i, 1:m - 1] + A[i, :m - 2] + A[i, 2:] + A[i + 1, 1:m - 1] + A[i - 1, 1:m - 1])
        #pragma parallel for
        for i in range(1, n - 1):
            A[i, 1:m - 1] = 0.2 * (B[i, 1:m - 1] + B[i, :m - 2] + B[i, 2:] + B[i + 1, 1:m - 1] + B[i - 1, 1:m - 1])


# The host reads a value the kernels wrote at every step and steers the next step by it.
# test: a:f64[n] b:f64[n] steps:int=5 | n=2,3,17,1000
@appy.jit
def steered_smoothing(a, b, steps):
    n = a.shape[0]
    for t in range(steps):
        #pragma parallel for simd
        for i in range(1, n - 1):
            b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0
        w = b[n // 2] * 0.5
        a[0] = w
        #pragma parallel for simd
        for i in range(1, n - 1):
            a[i] = b[i] + w * 1e-3


# A reduction of every step into a scalar, and an array written by atomics: their
# groups write the same elements.
# test: x:f64[n] hist:f64[8] steps:int=3 | n=1,5,97,1000
@appy.jit
def reduce_steps(x, hist, steps):
    total = 0.0
    for t in range(steps):
        s = 0.0
        #pragma parallel for simd shared(s)
        for i in range(x.shape[0]):
            s += x[i]
        #pragma parallel for
        for i in range(x.shape[0]):
            #pragma atomic
            hist[i % 8] += x[i]
        #pragma parallel for simd
        for i in range(x.shape[0]):
            x[i] = x[i] * 0.5 + 0.125
        total += s
    return total


# A temporary allocated in the function, written by one launch and read shifted by the
# next (a halo in a temporary), then returned.
# test: a:f32[n] steps:int=3 | n=1,2,9,1031
@appy.jit
def temp_halo(a, steps):
    n = a.shape[0]
    t = np.empty(n, dtype=np.float32)
    for s in range(steps):
        #pragma parallel for simd
        for i in range(n):
            t[i] = a[i] * 2.0
        #pragma parallel for simd
        for i in range(1, n):
            a[i] = t[i - 1] - a[i]
    return t


# Atomics into the neighbours of an array another launch has just written in ranges:
# each range's accumulation box reaches into the next range's part.
# test: x:f64[n] y:f64[n] c:float | n=3,7,300,1001
@appy.jit
def spread_to_neighbours(x, y, c):
    n = x.shape[0]
    #pragma parallel for simd
    for i in range(n):
        y[i] = x[i] * 2.0
    #pragma parallel for
    for i in range(1, n - 1):
        #pragma atomic
        y[i - 1] += c * x[i]
        #pragma atomic
        y[i + 1] += c * x[i]
