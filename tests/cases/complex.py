"""complex64 and complex128: arrays (NumPy's layout, the parts side by side), complex
scalars in kernels and host code, arithmetic (division as NumPy computes it), abs,
.real, .imag, np.conj, np.exp, complex(x, y), reductions of a complex `shared`
scalar, whole-array statements, and NumPy's promotion with float32/float64."""
import numpy as np
import appy


# test: z:c128[n] w:c128[n]@0.5..2 out:c128[n] | n=1,7,256,1001
@appy.jit
def c128_arith(z, w, out):
    #pragma parallel for
    for i in range(z.shape[0]):
        a = z[i]
        b = w[i]
        out[i] = a * b + a / b - np.conj(a) * 2j + np.exp(a) - abs(b) + complex(1, 2) * a.real + b.imag


# test: z:c64[n] x:f32[n] y:f64[n] out:c64[n] o128:c128[n] | n=1,13,300
@appy.jit
def c64_promotion(z, x, y, out, o128):
    #pragma parallel for
    for i in range(z.shape[0]):
        # complex64 with float32 and Python numbers stays complex64;
        out[i] = z[i] * x[i] + 0.5j - z[i] / (x[i] + 3.0)
        # with float64 it is complex128.
        o128[i] = z[i] * y[i] + np.complex64(1 + 1j) * z[i] ** 2


# test: cs:c128[n]@-1.5..1 counts:i64[n] | n=1,31,257
@appy.jit
def mandelbrot(cs, counts):
    #pragma parallel for
    for i in range(cs.shape[0]):
        c = cs[i]
        z = 0j
        k = 0
        while k < 20 and abs(z) <= 2.0:
            z = z * z + c
            k += 1
        counts[i] = k


# test: out:i32[h,w] | h=1,9,40 w=1,13,61
@appy.jit
def mandelbrot_grid(out):
    # APPy's slides: the point is built with complex(x, y).
    h, w = out.shape
    #pragma parallel for
    for i in range(h):
        for j in range(w):
            c = complex(-2.0 + 2.5 * j / w, -1.2 + 2.4 * i / h)
            z = complex(0, 0)
            n = 0
            while n < 16 and z.real * z.real + z.imag * z.imag <= 4.0:
                z = z * z + c
                n += 1
            out[i, j] = n


# test: z:c128[n] zf:c64[n] | n=1,7,1000,4099
@appy.jit
def complex_sums(z, zf):
    s = 0j
    #pragma parallel for shared(s)
    for i in range(z.shape[0]):
        s += z[i] * z[i]
    t = np.sum(zf)
    return s.real, s.imag, t.real, t.imag


# test: z:c128[n] w:c128[n]@0.5..2 out:c128[n] mag:f64[n] re:f64[n] | n=1,7,256,1001
@appy.jit
def complex_arrays(z, w, out, mag, re):
    out[:] = z[:] * w[:] + 1j
    out[1:] = out[1:] / w[1:] - np.conj(z[:-1])
    mag[:] = np.abs(z[:]) + np.abs(np.exp(w[:]))
    re[:] = z.real + w.imag


# test: z:c64[n,m] out:c64[n,m] | n=1,5,37 m=1,7,130
@appy.jit
def complex_rows(z, out):
    #pragma parallel for
    for i in range(z.shape[0]):
        row = z[i]
        for j in range(z.shape[1]):
            out[i, j] = row[j] * row[z.shape[1] - 1 - j].conjugate()


# test: z:c128[n] x:f64[n] | n=1,5,64
@appy.jit
def complex_host(z, x):
    a = complex(x[0], 2.0)
    b = z[0] - a
    b *= 1.5 - 0.5j
    b /= z[z.shape[0] - 1] + 3
    c = b ** 3 + b ** 0
    z[0] = c
    z[z.shape[0] - 1] += 1j
    return c.real, c.imag, abs(b), b == b, c != c, np.real(a), np.imag(a)


# test: z:c128[n] w:c128[n] | n=1,7,100
@appy.jit
def complex_inplace(z, w):
    # Each update reads the parts it writes: the pass keeps the NumPy meaning.
    #pragma parallel for
    for i in range(z.shape[0]):
        z[i] = z[i] * w[i] * 1j
        w[i] += w[i] * 1j
