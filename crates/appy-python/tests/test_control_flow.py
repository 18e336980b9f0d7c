"""Control flow and helpers as Numba's and APPy's users write them, through the
package: `while`, `break`, `continue`, early `return`, plain helper functions and other
jitted functions of the module, constant lists. Each runs against the same function
under CPython + NumPy."""
import numpy as np
import pytest

import appy
from conftest import sizes


def sq(x):
    return x * x


def is_prime(v):
    if v < 2:
        return False
    k = 2
    while k * k <= v:
        if v % k == 0:
            return False
        k += 1
    return True


@appy.jit
def norm2(a, i):
    s = 0.0
    for j in range(a.shape[1]):
        s += sq(a[i, j])
    return s


@appy.jit
def row_norms(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = np.sqrt(norm2(a, i))


@appy.jit
def count_primes(a):
    n = 0
    #pragma parallel for shared(n)
    for i in range(a.shape[0]):
        if is_prime(a[i]):
            n += 1
    return n


@appy.jit
def mandelbrot(cr, ci, out, max_iter):
    #pragma parallel for
    for i in range(cr.shape[0]):
        zr = 0.0
        zi = 0.0
        it = 0
        while zr * zr + zi * zi <= 4.0 and it < max_iter:
            t = zr * zr - zi * zi + cr[i]
            zi = 2.0 * zr * zi + ci[i]
            zr = t
            it += 1
        out[i] = it


@appy.jit
def first_index(a, t):
    for i in range(a.shape[0]):
        if a[i] > t:
            return i
    return -1


@appy.jit
def weighted(a, b):
    w = [0.25, 0.5, 0.25]
    #pragma parallel for
    for i in range(1, a.shape[0] - 1):
        s = 0.0
        for k in range(len(w)):
            s += w[k] * a[i + k - 1]
        b[i] = s


@pytest.mark.parametrize("n", sizes())
def test_helpers_through_the_package(n):
    rng = np.random.default_rng(n)
    a = rng.uniform(-1, 1, (n, 5))
    out = np.empty(n)
    want = np.empty(n)
    row_norms(a, out)
    row_norms.py_func(a, want)
    np.testing.assert_allclose(out, want, rtol=1e-12)
    v = rng.integers(0, 2000, n)
    assert count_primes(v) == sum(is_prime(int(x)) for x in v)


@pytest.mark.parametrize("n", sizes())
def test_while_break_return(n):
    rng = np.random.default_rng(n + 1)
    cr, ci = rng.uniform(-2, 1, n), rng.uniform(-1.2, 1.2, n)
    out, want = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    mandelbrot(cr, ci, out, 50)
    mandelbrot.py_func(cr, ci, want, 50)
    np.testing.assert_array_equal(out, want)
    a = rng.uniform(-1, 1, n)
    for t in (-2.0, 0.3, 0.99, 2.0):
        assert first_index(a, t) == first_index.py_func(a, t)


@pytest.mark.parametrize("n", [3, 7, 257])
def test_constant_list(n):
    a = np.random.default_rng(n).uniform(-1, 1, n)
    b, want = np.zeros(n), np.zeros(n)
    weighted(a, b)
    weighted.py_func(a, want)
    np.testing.assert_allclose(b, want, rtol=1e-14)


@appy.jit
def row_search(a, xp, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i, 0] = np.argmax(a[i, :])
        out[i, 1] = np.argmin(a[i, :])
        out[i, 2] = np.searchsorted(xp, a[i, 0])
        out[i, 3] = np.all(a[i, 1:])


@pytest.mark.parametrize("n", sizes())
def test_numpy_search_in_kernels(n):
    rng = np.random.default_rng(n + 2)
    a = rng.uniform(-1, 1, (n, 9))
    xp = np.sort(rng.uniform(-1, 1, 11))
    out, want = np.zeros((n, 4), dtype=np.int64), np.zeros((n, 4), dtype=np.int64)
    row_search(a, xp, out)
    row_search.py_func(a, xp, want)
    np.testing.assert_array_equal(out, want)
