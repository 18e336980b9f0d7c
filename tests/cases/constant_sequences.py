"""Small constant lists and tuples of numbers, indexed by constants and by loop
variables, in kernels and in host code."""
import numpy as np
import appy


# test: a:f64[n] b:f64[n] | n=3,7,256,1001
@appy.jit
def smooth3(a, b):
    w = [0.25, 0.5, 0.25]
    #pragma parallel for
    for i in range(1, a.shape[0] - 1):
        b[i] = w[0] * a[i - 1] + w[1] * a[i] + w[-1] * a[i + 1]


# test: a:f64[n] b:f64[n] | n=5,13,300
@appy.jit
def stencil5(a, b):
    #pragma parallel for
    for i in range(2, a.shape[0] - 2):
        c = (1.0, -8.0, 0.0, 8.0, -1.0)
        s = 0.0
        for k in range(len(c)):
            s += c[k] * a[i + k - 2]
        b[i] = s / 12.0


# test: a:i64[n]@-40..40 out:i64[n] | n=1,7,100
@appy.jit
def digits_back(a, out):
    p = [1, 10, 100, 1000]
    #pragma parallel for
    for i in range(a.shape[0]):
        k = a[i] % 4
        out[i] = p[k] + p[-1 - k] + len(p)


# test: x:int=n | n=0,1,2,3
@appy.jit
def host_table(x):
    t = (2, 3, 5, 7)
    s = 0
    for k in range(x + 1):
        s += t[k] * t[-k - 1]
    return s, t[x]
