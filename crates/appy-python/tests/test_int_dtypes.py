"""The small and unsigned integer dtypes through the package: NumPy arrays and NumPy
integer scalars of int8 ... uint64 as arguments and results, APPy's own dtype tests
(`tests/unit/metal/test_store.py`, `test_div.py`) written as its users write them, and
torch tensors of those dtypes. Each runs against the same function under CPython +
NumPy."""
import numpy as np
import pytest

import appy
import appy.np_shared as nps
from conftest import sizes

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@appy.jit
def store_scalar(out, alpha):
    #pragma parallel for
    for i in range(out.shape[0]):
        out[i] = alpha


@appy.jit
def div_kernel(out, alpha, beta):
    #pragma parallel for
    for i in range(out.shape[0]):
        out[i] = alpha / beta


@appy.jit
def blend(a, b, out, k):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = a[i] * k + (b[i] >> 1) - a[i] // (b[i] | 1) + (a[i] > b[i])


@appy.jit
def stats(a):
    return np.sum(a), np.max(a), np.min(a), a[0] + a[a.shape[0] - 1]


@pytest.mark.parametrize("dt", INTS + [np.float32, np.bool_])
def test_store_numpy_scalar(dt):
    out = nps.empty((10,), dtype=dt)
    v = dt(10) if dt is not np.bool_ else np.bool_(True)
    store_scalar(out, v)
    assert out.dtype == dt and np.all(out == v)


def test_uint8_div_uint8():
    out = nps.empty((10,), dtype=np.float32)
    div_kernel(out, np.uint8(1), np.uint8(2))
    assert np.allclose(out, 0.5)


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("n", sizes()[:5])
def test_arithmetic_wraps_as_numpy(dt, n):
    rng = np.random.default_rng(n)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -10**6), min(info.max, 10**6)
    a = rng.integers(lo, hi, n, dtype=dt, endpoint=True)
    b = rng.integers(lo, hi, n, dtype=dt, endpoint=True)
    k = dt(3)
    out, want = np.zeros(n, dtype=dt), np.zeros(n, dtype=dt)
    with np.errstate(all="ignore"):
        blend(a, b, out, k)
        blend.py_func(a, b, want, k)
    np.testing.assert_array_equal(out, want)
    got = stats(a)
    with np.errstate(all="ignore"):
        exp = stats.py_func(a)
    for g, w in zip(got, exp):
        assert type(g) is type(w) and g == w, (g, w)


def test_uint64_beyond_int64():
    a = np.array([2**64 - 1, 2**63, 5], dtype=np.uint64)
    got = stats(a)
    with np.errstate(all="ignore"):
        want = stats.py_func(a)
    assert [type(x) for x in got] == [type(x) for x in want] and list(got) == list(want)
    out = np.zeros(1, dtype=np.uint64)
    store_scalar(out, np.uint64(2**64 - 2))
    assert out[0] == 2**64 - 2


@pytest.mark.parametrize("name", ["int8", "int16", "uint8", "int32", "int64"])
def test_torch_tensors(name):
    torch = pytest.importorskip("torch")
    dt = getattr(torch, name)
    n = 257
    a = torch.randint(0, 100, (n,), dtype=dt)
    b = torch.randint(0, 100, (n,), dtype=dt)
    out = torch.zeros(n, dtype=dt)
    blend(a, b, out, getattr(np, name)(3))
    want = np.zeros(n, dtype=getattr(np, name))
    with np.errstate(all="ignore"):
        blend.py_func(a.numpy(), b.numpy(), want, getattr(np, name)(3))
    np.testing.assert_array_equal(out.numpy(), want)
