"""Calls (item 3 on the CPU): NumPy arrays in place and views of any layout, scalars,
return values, specialisation per signature."""
import numpy as np
import pytest

import appy
import kernels as K
from conftest import sizes

rng = np.random.default_rng(1234)


def oracle(f, *args):
    """The sequential meaning: the same function as plain Python on copies."""
    cp = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    r = f.py_func(*cp)
    return r, cp


@pytest.mark.parametrize("n", sizes())
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_axpy_in_place(n, dt):
    x = rng.standard_normal(n).astype(dt)
    y = rng.standard_normal(n).astype(dt)
    _, (_, _, want, _) = oracle(K.axpy, 1.5, x, y, n)
    assert K.axpy(1.5, x, y, n) is None
    np.testing.assert_allclose(y, want, rtol=1e-6)


@pytest.mark.parametrize("n", [1, 13, 1000])
def test_three_arrays_two_scalars(n):
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    c = np.zeros(n)
    K.add3(a, b, c, 2.0, np.float64(-0.5))
    np.testing.assert_allclose(c, 2.0 * a - 0.5 * b)


def test_strided_and_transposed_views_are_written_back():
    base = rng.standard_normal((9, 14))
    A = base.T  # (14, 9), not C-contiguous
    v = rng.standard_normal(14)
    want = A * v[:, None]
    keep = base.copy()
    K.scale_rows(A, v)
    np.testing.assert_allclose(A, want)
    np.testing.assert_allclose(base, want.T)
    # A strided 1-D view: only its elements change.
    y = rng.standard_normal(21)
    y0 = y.copy()
    x = rng.standard_normal(11)
    K.axpy(2.0, x, y[::2], 11)
    want = y0.copy()
    want[::2] += 2.0 * x
    np.testing.assert_allclose(y, want)
    assert keep.shape == base.shape


def test_readonly_array_is_read():
    a = rng.standard_normal(50)
    a.flags.writeable = False
    assert K.total(a) == pytest.approx(a.sum())


@pytest.mark.parametrize("n", sizes())
def test_reductions_and_return_types(n):
    a = rng.standard_normal(n)
    r = K.total(a)
    want, _ = oracle(K.total, a)
    # NumPy gives np.float64 (`s = 0.0; s += a[i]`); the compiler types a `shared`
    # reduction as a Python float: the same value either way.
    assert isinstance(r, float) and isinstance(want, np.float64)
    assert r == pytest.approx(float(want))
    r = K.psum(a, n)
    assert isinstance(r, float)
    assert r == pytest.approx(a.sum())
    a32 = rng.standard_normal(n).astype(np.float32)
    assert K.total(a32) == pytest.approx(float(a32.sum(dtype=np.float64)), rel=1e-5, abs=1e-5)


def test_int_arrays_and_python_scalars():
    a = np.arange(10)
    K.increment_by_1(a)
    assert a.tolist() == list(range(1, 11))
    b = np.arange(7, dtype=np.int32)
    K.increment_by_1(b)
    assert b.dtype == np.int32 and b.tolist() == list(range(1, 8))


def test_new_array_result_and_math_names():
    a = rng.standard_normal(101)
    r = K.new_exp(a)
    assert isinstance(r, np.ndarray) and r.dtype == np.float64 and r.shape == a.shape
    np.testing.assert_allclose(r, np.exp(a) + np.sqrt(np.abs(a)))


def test_returning_an_argument_returns_the_same_object():
    a = rng.standard_normal(33)
    want = a * 2.0
    r = K.same(a)
    assert r is a
    np.testing.assert_allclose(a, want)
    s, r = K.pair(a, a)
    assert r is a
    assert s == pytest.approx(float(a @ a))


@pytest.mark.parametrize("n", [1, 5, 255, 256, 257, 1000])
def test_vidx_where(n):
    A, B = rng.standard_normal(n), rng.standard_normal(n)
    C = np.zeros(n)
    K.blend(A, B, C, n)
    np.testing.assert_allclose(C, np.where(A > 0, A, 0.5 * B))


def test_atomic_add():
    idx = rng.integers(0, 10, 1000)
    h = np.zeros(10)
    K.histogram(idx, h)
    np.testing.assert_allclose(h, np.bincount(idx, minlength=10))


@pytest.mark.parametrize("M,N", [(1, 1), (7, 13), (64, 33)])
def test_auto_simd_tensor_statement(M, N):
    A, B = rng.standard_normal((M, N)), rng.standard_normal((M, N))
    x = rng.standard_normal(N)
    y = np.zeros(M)
    K.gesummv(1.5, 0.5, A, B, x, y, M, N)
    np.testing.assert_allclose(y, 1.5 * A @ x + 0.5 * B @ x, rtol=1e-10)


def test_one_specialisation_per_signature():
    @appy.jit
    def fill(a, v):
        #pragma parallel for simd
        for i in range(a.shape[0]):
            a[i] = v

    a = np.zeros(5)
    fill(a, 1.0)
    fill(a, 2.0)
    assert fill.signatures() == ["cpu(float64[:], float)"]
    fill(np.zeros(5, np.float32), 1.0)
    fill(a, np.float32(3.0))
    assert len(fill.signatures()) == 3
    assert a.tolist() == [3.0] * 5


def test_keyword_arguments_and_defaults():
    @appy.jit
    def fill(a, v=7.0):
        #pragma parallel for simd
        for i in range(a.shape[0]):
            a[i] = v

    a = np.zeros(3)
    fill(a)
    assert a.tolist() == [7.0] * 3
    fill(v=2.0, a=a)
    assert a.tolist() == [2.0] * 3
    with pytest.raises(TypeError, match="fill"):
        fill()


class _DLPackOnly:
    """An array known only through DLPack (the protocol JAX and PyTorch export)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_host_arrays_are_used_in_place():
    x = rng.standard_normal(40)
    y = rng.standard_normal(40)
    want = y + 3.0 * x
    K.axpy(3.0, _DLPackOnly(x), _DLPackOnly(y), 40)
    np.testing.assert_allclose(y, want)


def test_functools_wraps_like():
    f = K.axpy
    assert f.__name__ == "axpy"
    assert f.__doc__ == "y += alpha * x"
    assert f.__module__ == "kernels"
    assert f.__wrapped__ is f.py_func
    assert callable(f) and "axpy" in repr(f)
    import inspect
    assert list(inspect.signature(f).parameters) == ["alpha", "x", "y", "N"]


@pytest.mark.parametrize("dt,tol", [(np.float32, 1e-4), (np.float64, 1e-12)])
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (37, 29, 64), (130, 97, 211)])
def test_matrix_products(dt, tol, m, n, k):
    # Matrix products (BLAS on the CPU when NumPy's OpenBLAS is found), contiguous
    # arrays and a transposed view (a strided parameter: loop nests).
    A = rng.standard_normal((m, k)).astype(dt)
    B = rng.standard_normal((k, n)).astype(dt)
    C = rng.standard_normal((m, n)).astype(dt)
    prod = 1.5 * A.astype(np.float64) @ B
    want = (prod + C).astype(dt)
    K.matmul_update(C, A, B, 1.5)
    np.testing.assert_allclose(C, want, rtol=tol, atol=tol * k)
    At = np.ascontiguousarray(A.T).T  # A's values, Fortran order
    C2 = np.zeros((m, n), dt)
    K.matmul_update(C2, At, B, 1.5)
    np.testing.assert_allclose(C2, prod, rtol=tol, atol=tol * k)
    x = rng.standard_normal(m).astype(dt)
    y = np.zeros(k, dt)
    K.matvec_t(A, x, y)
    np.testing.assert_allclose(y, x.astype(np.float64) @ A, rtol=tol, atol=tol * m)
