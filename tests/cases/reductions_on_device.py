"""Reductions across workers whose result later kernels use (`appy-gpu-keep-reductions`):
the kernels read the reduction's buffer and combine it with the initial value
themselves, the host never reads it. Where the host also needs the value (returned,
branched on, read again in the next step of a loop), it is read as before."""
import numpy as np
import appy


# NPBench's go_fast: the trace, then every element plus it.
# test: a:f64[n,n] out:f64[n,n] | n=1,7,131
@appy.jit
def trace_then_add(a, out):
    N = a.shape[0]
    trace = 0.0
    #pragma parallel for shared(trace)
    for i in range(N):
        trace += np.tanh(a[i, i])
    out[:N, :N] = a[:N, :N] + trace


# A non-zero initial value, a maximum, and two kernels reading each result.
# test: a:f64[n] b:f64[n] c:f64[n] | n=1,5,1000,4099
@appy.jit
def two_readers(a, b, c):
    s = 1.25
    m = -3.0
    #pragma parallel for shared(s, m)
    for i in range(a.shape[0]):
        s += a[i]
        m = max(m, a[i])
    #pragma parallel for simd
    for i in range(a.shape[0]):
        b[i] = a[i] / s + m
    #pragma parallel for simd
    for i in range(a.shape[0]):
        c[i] = a[i] * m - s


# The value is also returned: the host reads it after the kernel that uses it.
# test: a:f64[n] b:f64[n] | n=1,9,777
@appy.jit
def read_and_returned(a, b):
    s = 0.5
    #pragma parallel for shared(s)
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    #pragma parallel for simd
    for i in range(a.shape[0]):
        b[i] = a[i] - s
    return s


# Every step reduces into a scalar the next kernel of the same step reads; the scalar
# starts again at every step, and is read after the loop.
# test: a:f64[n] b:f64[n] T:int=4 | n=1,6,513
@appy.jit
def per_step(a, b, T):
    n = a.shape[0]
    total = 0.0
    for t in range(T):
        s = 0.0
        #pragma parallel for shared(s)
        for i in range(n):
            s += a[i]
        #pragma parallel for simd
        for i in range(n):
            b[i] = b[i] + a[i] / (1.0 + abs(s))
        total += s
    return total


# An integer count, made float by host arithmetic before the kernel reads it.
# test: a:f64[n]@-1..1 b:f64[n] | n=1,10,1001
@appy.jit
def count_then_scale(a, b):
    k = 0
    #pragma parallel for shared(k)
    for i in range(a.shape[0]):
        if a[i] > 0.0:
            k += 1
    w = k * 0.5 + 1.0
    #pragma parallel for simd
    for i in range(a.shape[0]):
        b[i] = a[i] * w


# A time loop whose every step sums into a scalar that only the step's next kernel
# reads (the scalar is set at the top of the step): nothing is read back in the loop.
# test: a:f64[n] b:f64[n] T:int=3 | n=1,8,1025
@appy.jit
def normalise_steps(a, b, T):
    n = a.shape[0]
    for t in range(T):
        s = 1.0
        #pragma parallel for shared(s)
        for i in range(n):
            s += abs(a[i])
        #pragma parallel for simd
        for i in range(n):
            a[i] = a[i] / s + b[i]


# The scalar carries over from step to step (each step's reduction starts from the last
# step's value): the host keeps reading it back.
# test: a:f64[n] b:f64[n] T:int=3 | n=1,8,1025
@appy.jit
def accumulating_steps(a, b, T):
    n = a.shape[0]
    s = 0.5
    for t in range(T):
        #pragma parallel for shared(s)
        for i in range(n):
            s += a[i]
        #pragma parallel for simd
        for i in range(n):
            b[i] = b[i] + a[i] / s
