"""float16 arrays and scalars: storage in 16 bits, each operation computed in float32
and rounded back to float16, as NumPy computes it (so + - * / and conversions give
NumPy's float16 results exactly); NumPy's promotion with the other types; sums and
means accumulated in float32 and rounded once; math functions within one float16 ulp
of NumPy's."""
import numpy as np
import appy


# test: a:f16[n]@-4..4 b:f16[n]@-4..4 out:f16[n] w:f32[n] | n=1,7,256,1001
@appy.jit
def f16_arith(a, b, out, w):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = a[i] * b[i] + a[i] / (b[i] + 5.0) - 0.1 * a[i]
        w[i] = a[i] * np.float32(1.5) + b[i]


# test: a:f16[n]@-4..4 k:i8[n]@-100..100 s:i16[n]@-900..900 out:f16[n] o32:f32[n] o64:f64[n] | n=1,13,300
@appy.jit
def f16_promotion(a, k, s, out, o32, o64):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = a[i] + k[i]
        o32[i] = a[i] * s[i]
        o64[i] = a[i] + np.int32(s[i])


# test: a:f16[n]@0..3 out:f16[n] q:f16[n] | n=1,9,333 rtol=1e-3 atol=1e-4
@appy.jit
def f16_math(a, out, q):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = np.exp(a[i]) + np.sqrt(a[i]) + np.sin(a[i])
        # hypot's squares of float16 values near 300 overflow float16 (not float32).
        q[i] = np.float16(a[i] * 3.3) + np.hypot(a[i] * 100, a[i] * 150) / 100


# test: a:f16[n,m]@-1..1 tot:f16[n] mean:f16[n] mx:f16[n] | n=1,5,37 m=1,7,130 rtol=2e-3 atol=2e-3
@appy.jit
def f16_rows(a, tot, mean, mx):
    #pragma parallel for
    for i in range(a.shape[0]):
        tot[i] = np.sum(a[i, :])
        mean[i] = np.mean(a[i, :])
        mx[i] = np.max(a[i, :])


# test: u:u8[n]@0..256 out:f16[n] | n=1,7,64 rtol=1e-3 atol=1e-4
@appy.jit
def u8_sqrt(u, out):
    #pragma parallel for
    for i in range(u.shape[0]):
        out[i] = np.sqrt(u[i])


# test: a:f16[n]@-2..2 | n=1,5,64
@appy.jit
def f16_host(a):
    s = a[0] * a[a.shape[0] - 1] + np.float16(0.1)
    t = np.float16(65504.0) * np.float16(2.0)
    return s, t, a[0] > 0.5, np.float32(a[0]) / 3


# test: a:f16[n]@-4..4 out:f16[n] | n=1,7,300
@appy.jit
def f16_divide(a, out):
    out[:] = a[:] / 3


# test: m:bool[n] out:f16[n] w:f64[n] | n=1,7,100
@appy.jit
def bool_float_functions(m, out, w):
    # NumPy's float functions compute bools in float16.
    #pragma parallel for
    for i in range(m.shape[0]):
        out[i] = np.sqrt(m[i]) + np.exp(m[i])
        w[i] = np.exp(m[i]) * 1.1
