"""Control flow as Numba's and APPy's users write it: `while` loops (inside parallel
loops and in host code), `break` and `continue` in sequential loops, early `return`,
and helpers that use them."""
import numpy as np
import appy


# test: cr:f64[n]@-2..1 ci:f64[n]@-1.2..1.2 out:i64[n] | n=1,13,300,1000
@appy.jit
def mandelbrot(cr, ci, out):
    #pragma parallel for
    for i in range(cr.shape[0]):
        zr = 0.0
        zi = 0.0
        k = 0
        while k < 60 and zr * zr + zi * zi <= 4.0:
            t = zr * zr - zi * zi + cr[i]
            zi = 2.0 * zr * zi + ci[i]
            zr = t
            k += 1
        out[i] = k


# test: a:i64[n]@0..4000 out:i64[n] | n=1,7,257,1000
@appy.jit
def smallest_divisor(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        v = a[i] + 2
        d = v
        for k in range(2, v):
            if k * k > v:
                break
            if v % k == 0:
                d = k
                break
        out[i] = d


def is_prime(v):
    if v < 2:
        return False
    k = 2
    while k * k <= v:
        if v % k == 0:
            return False
        k += 1
    return True


# test: a:i64[n]@0..3000 out:i64[n] | n=1,13,300
@appy.jit
def prime_flags(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        p = is_prime(a[i])
        if p:
            out[i] = 1
        else:
            out[i] = 0


# test: a:i64[n]@0..3000 | n=1,13,300
@appy.jit
def prime_counting(a):
    count = 0
    #pragma parallel for shared(count)
    for i in range(a.shape[0]):
        v = a[i]
        prime = v >= 2
        for k in range(2, v):
            if k * k > v:
                break
            if v % k == 0:
                prime = False
                break
        if prime:
            count += 1
    return count


# test: a:f64[n] b:f64[n,m] | n=1,7,64 m=1,5,33
@appy.jit
def row_prefix_until_negative(a, b):
    """`continue` and `break` in one loop, a `while True` with `break`."""
    #pragma parallel for
    for i in range(b.shape[0]):
        s = 0.0
        for j in range(b.shape[1]):
            if b[i, j] > 0.5:
                continue
            if b[i, j] < -0.8:
                break
            s += b[i, j]
        a[i] = s
        k = 0
        while True:
            k += 1
            if k >= b.shape[1] or b[i, k - 1] < 0.0:
                break
        a[i] += k


# test: a:f64[n] | n=1,7,1000
@appy.jit
def first_above(a):
    """Early return from a host loop (the loop runs sequentially on the host)."""
    for i in range(a.shape[0]):
        if a[i] > 0.9:
            return i
    return -1


# test: a:f64[n] k:int=n | n=1,7,100
@appy.jit
def halve_until_small(a, k):
    """A host `while` loop around a parallel loop: a kernel launched per iteration."""
    it = 0
    m = 1.0
    while m > 1e-3 and it < k:
        #pragma parallel for
        for i in range(a.shape[0]):
            a[i] = a[i] * 0.5
        m = 0.0
        for i in range(a.shape[0]):
            m = max(m, abs(a[i]))
        it += 1
    return it, m


# test: x:int=n | n=1,6,27,97
@appy.jit
def collatz_steps(x):
    """Integer `while` in host code, with `continue`, and the early return of a tuple."""
    steps = 0
    v = x
    while v != 1:
        steps += 1
        if v % 2 == 0:
            v = v // 2
            continue
        v = 3 * v + 1
        if steps > 1000:
            return -1, v
    return steps, v


# test: a:f64[n] out:f64[n] | n=1,13,256,1000
@appy.jit
def countdown_step(a, out):
    """A `for` loop with a negative step and `break`; nested loops that both break."""
    #pragma parallel for
    for i in range(a.shape[0]):
        t = 0.0
        for j in range(i, -1, -2):
            if a[j] < -0.7:
                break
            t += a[j]
        for p in range(3):
            for q in range(5):
                if q > p + 1:
                    break
                t += 0.25
            if t > 3.0:
                break
        out[i] = t


# test: a:f64[n,m]@0.01..3 out:i64[n,m] | n=1,7,40 m=1,13,300
@appy.jit
def doublings_simd(a, out):
    """A `while` loop per lane of a simd loop."""
    #pragma parallel for
    for i in range(a.shape[0]):
        #pragma simd
        for j in range(a.shape[1]):
            k = 0
            v = a[i, j]
            while v < 100.0:
                v = v * 2.0 + 1.0
                k += 1
            out[i, j] = k


# test: a:f64[n,m] out:f64[n,m] r:i64[n]@0..5 | n=1,7,40 m=1,13,300
@appy.jit
def repeated_row_updates(a, out, r):
    """Tensor statements (threads of a block, with barriers) inside a `while` loop
    whose trip count is the same for the whole parallel iteration."""
    #pragma parallel for
    for i in range(a.shape[0]):
        k = 0
        while k < r[i]:
            out[i, :] = out[i, :] * 0.5 + a[i, :]
            k += 1
            if out[i, 0] > 1.5:
                break


def clamp_index(v, n):
    if v < 0:
        return 0
    elif v >= n:
        return n - 1
    else:
        return v


# test: a:f64[n]@-3..3 k:i64[n]@-5..40 out:f64[n] | n=1,7,300
@appy.jit
def gather_clamped(a, k, out):
    """A helper whose every branch returns (no `return` after the `if`)."""
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = a[clamp_index(k[i], a.shape[0])]


def newton_sqrt(x):
    if x <= 0.0:
        return 0.0
    g = x
    while True:
        n = 0.5 * (g + x / g)
        if abs(n - g) <= 1e-12 * g:
            return n
        g = n


# test: a:f64[n]@-1..50 out:f64[n] | n=1,7,1000
@appy.jit
def newton_roots(a, out):
    """A helper whose `while True:` loop is left only by `return`."""
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = newton_sqrt(a[i])
