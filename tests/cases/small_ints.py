"""The small and unsigned integer dtypes (int8, int16, uint8, uint16, uint32, uint64):
arithmetic that wraps at the width, NumPy 2's promotion between them, exact mixed
comparisons, unsigned division, remainders and shifts, conversions, and NumPy integer
scalars as arguments."""
import numpy as np
import appy


# test: a:u8[n]@0..256 b:u8[n]@0..256 out:u8[n] | n=1,7,256,1001
@appy.jit
def u8_wrap(a, b, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = a[i] + b[i] * 3 - (a[i] >> 2) + (b[i] << 9) - (a[i] ^ 0x5A)


# test: a:i8[n]@-128..128 b:u8[n]@1..256 out:i16[n] q:f64[n] | n=1,13,257
@appy.jit
def mixed_small(a, b, out, q):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = a[i] * b[i] + a[i] // 3 - b[i] % 7 + a[i] % -5
        q[i] = a[i] / b[i]


# test: a:u8[n]@0..256 c:i16[n]@-300..300 out:i64[n] | n=1,7,300
@appy.jit
def exact_compare(a, c, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        k = 0
        if a[i] < -1:
            k += 1
        if a[i] > c[i]:
            k += 2
        if c[i] <= a[i]:
            k += 4
        if a[i] != 300:
            k += 8
        if max(a[i], c[i]) == c[i]:
            k += 16
        out[i] = k


# test: a:u64[n]@0..1000000 b:i64[n]@-500..500 out:f64[n] flag:i32[n] | n=1,11,256
@appy.jit
def u64_mix(a, b, out, flag):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = a[i] + b[i]
        big = a[i] * np.uint64(1 << 40) * np.uint64(1 << 20)
        flag[i] = (big > b[i]) + 2 * (big // np.uint64(3) > a[i]) + 4 * (b[i] < a[i])


# test: a:u32[n]@0..100000 s:u16[n]@0..40 out:u32[n] r:u16[n] | n=1,7,100
@appy.jit
def u32_ops(a, s, out, r):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = (a[i] >> s[i]) + (a[i] << s[i]) + a[i] // (s[i] + 1) - a[i] % np.uint32(17)
        r[i] = abs(s[i] - 20) + np.uint16(65535) * s[i]


# test: out:f32[n] alpha:u8@1..9 beta:u8@1..9 | n=1,10,33
@appy.jit
def u8_scalar_div(out, alpha, beta):
    #pragma parallel for
    for i in range(out.shape[0]):
        out[i] = alpha / beta + i


# test: x:f64[n]@-2..2 out8:i8[n] outu:u8[n] out16:u16[n] | n=1,9,200
@appy.jit
def conversions(x, out8, outu, out16):
    #pragma parallel for
    for i in range(x.shape[0]):
        out8[i] = np.int8(x[i] * 60.0)
        outu[i] = np.uint8(abs(x[i]) * 120.0)
        out16[i] = x[i] * 30000.0 + 32768.0


# test: a:u8[n,m]@0..256 s:i16[n,m]@-1000..1000 tot:u64[n] mx:i16[n] f:f32[n] | n=1,5,37 m=1,7,130
@appy.jit
def row_stats(a, s, tot, mx, f):
    #pragma parallel for
    for i in range(a.shape[0]):
        tot[i] = np.sum(a[i, :])
        mx[i] = np.max(s[i, :])
        f[i] = np.sqrt(s[i, 0] * s[i, 0])


# test: a:u8[n]@0..256 | n=1,5,64
@appy.jit
def host_u8(a):
    t = a[0] + a[a.shape[0] - 1]
    u = np.uint8(250) + np.uint8(10)
    v = np.int8(-128) // np.int8(-1)
    w = np.uint16(7) - np.uint16(9)
    return t, u, v, w, a[0] > -3, a[0] // np.uint8(0 + 3)




# test: a:u8[n]@0..256 b:i8[n]@-100..100 w:u32[n]@0..4000000000 out:i64[n] | n=1,7,64,300
@appy.jit
def unsigned_extremes(a, b, w, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = np.max(a[i:i+3]) + np.min(b[i:i+3]) - np.min(a[i:]) + np.max(w[:i+1]) // 1000
    s = np.uint64(0)
    #pragma parallel for shared(s)
    for i in range(a.shape[0]):
        s += np.uint64(a[i])
    out[0] = s + np.max(a) + np.min(w)


# test: img:u8[n,m]@0..256 out:i64[n] | n=1,5,40 m=1,3,33
@appy.cpu_shader
def brightest_columns(img, out):
    # Individual mode: the top-level loop is parallel; the loops of the inlined
    # np.argmax (which returns from inside one) stay sequential.
    for i in range(img.shape[0]):
        out[i] = np.argmax(img[i, :]) + np.max(img[i, :])


# test: a:u8[n]@0..256 b:i8[n,m]@-128..128 f:bool[n] | n=2,7,257 m=3,33
@appy.jit
def overlapping_rows(a, b, f):
    # Statements that read what they write need a temporary of the array's dtype
    # (an int8 or uint8 array is a byte array like a bool one).
    a[1:] = a[:-1] + a[1:]
    f[1:] = f[:-1] ^ f[1:]
    #pragma parallel for
    for i in range(b.shape[0]):
        b[i, 1:] = b[i, :-1] * 3 - b[i, 1:]


# test: a:u8[n]@0..256 b:i8[n]@-128..128 o1:i64[n] o2:i64[n] o3:i64[n] c:u8[n] d:i8[n] | n=1,7,300
@appy.jit
def out_of_range_bounds(a, b, o1, o2, o3, c, d):
    # Python's max/min compare exactly: a constant beyond uint8's range wins or loses
    # outright; np.clip takes out-of-range Python int bounds as the type's limits.
    #pragma parallel for
    for i in range(a.shape[0]):
        o1[i] = max(a[i], 300)
        o2[i] = min(b[i], -1000)
        o3[i] = max(a[i], -1) + min(a[i], 7, 1000)
        c[i] = np.clip(a[i], -5, 300) // 2 + np.clip(a[i], 3, 100)
        d[i] = np.clip(b[i], -1000, 50)


# test: a:u8[n,m]@200..256 out:f64[n,m] b:i8[n,m]@-128..128 o16:i16[n,m] | n=1,5,17 m=1,7,40
@appy.jit
def cumsum_wide(a, out, b, o16):
    # np.cumsum of uint8 runs in uint64 and of int8 in int64, as NumPy sums them.
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i, :] = np.cumsum(a[i, :])
        o16[i, :] = np.cumsum(b[i, :])


# test: a:i32[n]@-100..100 out:i64[n] big:int=3000000000 | n=1,7,100
@appy.jit
def int32_vs_python_ints(a, out, big):
    # Comparisons of int32 values with Python ints beyond int32's range are exact, as
    # NumPy 2 compares them (no wrap-around of the Python int).
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = (a[i] < 3000000000) + 2 * (a[i] == 4294967296 + 5) + 4 * (a[i] > -big) + 8 * (a[i] >= big)


# test: a:i8[n]@-128..128 b:i8[n]@-128..128 u:u8[n,n]@0..256 v:u8[n]@0..256 out:i8[1] w:u8[n] h:f16[n]@-2..2 hf:f16[1] | n=1,7,40
@appy.jit
def small_dots(a, b, u, v, out, w, h, hf):
    # np.dot keeps the operands' type: int8 and uint8 sums wrap at their width, as
    # NumPy's do; float16 products are summed in float32 and rounded once.
    out[0] = np.dot(a, b)
    w[:] = u @ v
    hf[0] = np.dot(h, h)
    return np.dot(a, b), np.dot(v, v), np.dot(a > 0, b > 0)
