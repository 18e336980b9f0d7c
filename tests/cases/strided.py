"""Strided accesses (seed 002 §5.3): on the GPU a launch whose subscripts have constant
strides moves only the elements it touches, packed (`a[2*i]`: every other element;
`a[3*i]` with `a[3*i+1]`: two of every three; every other row of a matrix), in both
directions. The elements a kernel does not touch keep their values. Each function must
agree with NumPy running the same source."""
import numpy as np
import appy


# test: a:f64[2*n+1] out:f64[n] | n=1,2,37,1031
@appy.jit
def every_other(a, out):
    #pragma parallel for simd
    for i in range(out.shape[0]):
        out[i] = 2.0 * a[2 * i] + 1.0


# One element in sixteen, float32 (the unit the packing kernels move is 4 bytes).
# test: a:f32[16*n] out:f32[n] | n=1,3,1029 rtol=1e-6 atol=1e-6
@appy.jit
def sparse(a, out):
    #pragma parallel for simd
    for i in range(out.shape[0]):
        out[i] = a[16 * i] - 1.0


# test: a:f64[3*n+2] out:f64[n] | n=1,29,1025
@appy.jit
def interleaved(a, out):
    #pragma parallel for simd
    for i in range(out.shape[0]):
        out[i] = a[3 * i] - 0.5 * a[3 * i + 1]


# test: a:f32[2*m+1,n] out:f32[m,n] | m=1,6,67 n=1,7,130
@appy.jit
def odd_rows(a, out):
    #pragma parallel for
    for i in range(out.shape[0]):
        #pragma simd
        for j in range(out.shape[1]):
            out[i, j] = a[2 * i + 1, j] * 3.0


# Writes every third element from 2 on: the others keep their values.
# test: a:f64[n] out:f64[3*n+4] | n=1,11,1027
@appy.jit
def scatter_third(a, out):
    #pragma parallel for simd
    for i in range(a.shape[0]):
        out[3 * i + 2] = a[i] + out[3 * i + 2]


# Every other column, read and written in place; then a second launch reads the whole
# array (the strided part goes back to the host before the dense one moves).
# test: a:f64[m,2*n] out:f64[m,2*n] | m=1,5,33 n=1,3,129
@appy.jit
def columns_then_all(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        #pragma simd
        for j in range(a.shape[1] // 2):
            a[i, 2 * j] = a[i, 2 * j] * 2.0
    #pragma parallel for
    for i in range(a.shape[0]):
        #pragma simd
        for j in range(a.shape[1]):
            out[i, j] = a[i, j] + 1.0


# A stepped loop read backwards: `m - 1 - j` for j = 0, 2, 4, ... reads the columns
# m - 1, m - 3, ... (the step's last value, not the range's end, anchors them), and
# writes them back in place.
# test: a:f64[r,m] out:f64[r] | r=1,4,33 m=1,2,7,8,130
@appy.jit
def backwards_stepped(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(0, a.shape[1], 2):
            s += a[i, a.shape[1] - 1 - j]
            a[i, a.shape[1] - 1 - j] = 2.0 * a[i, a.shape[1] - 1 - j]
        out[i] = s
