"""APPy's individual-mode decorators (``@appy.shader``, ``@appy.cpu_shader``) and its
allocation module ``appy.np_shared``, as APPy's own tests use them, against NumPy."""
import numpy as np
import pytest

import appy
import appy.np_shared as nps
from conftest import sizes


@appy.shader
def gelu(x, y):
    for i in range(x.shape[0]):
        xi = x[i]
        t = np.tanh(0.79788456 * (xi + 0.044715 * xi * xi * xi))
        y[i] = 0.5 * xi * (1 + t)


@appy.cpu_shader
def grid(a, b, M, N):
    # A 2-D grid: both loops parallel; the inner `k` loop of each cell stays sequential.
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(3):
                s += a[i, j] * (k + 1)
            b[i, j] = s


@appy.shader(device="cpu")
def prefix(a, n):
    # A loop-carried dependence: as with `#pragma parallel for`, a compile error.
    for i in range(1, n):
        a[i] += a[i - 1]


@appy.jit(shader=True)
def top_level_only(a, b, n):
    if n > 0:
        for i in range(n):
            b[i] = a[i] + 1.0


@pytest.mark.parametrize("n", sizes())
def test_shader_gelu_matches_numpy(n):
    x = nps.randn(n, dtype=np.float32)
    y = nps.empty_like(x)
    gelu(x, y)
    expect = 0.5 * x * (1 + np.tanh(0.79788456 * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(y, expect, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("m,n", [(1, 1), (7, 13), (31, 257)])
def test_cpu_shader_grid_matches_numpy(m, n):
    a = np.random.default_rng(m * n).random((m, n))
    b = nps.zeros((m, n))
    grid(a, b, m, n)
    np.testing.assert_allclose(b, 6 * a, rtol=1e-14)


def test_shader_loops_that_race_are_refused():
    a = np.random.default_rng(1).random(17)
    with pytest.raises(appy.CompileError) as e:
        prefix(a, 17)
    assert "loop-carried dependence on `a` in a parallel loop" in str(e.value), str(e.value)


def test_shader_looks_through_if():
    a = np.random.default_rng(2).random(31)
    b = np.zeros(31)
    top_level_only(a, b, 31)
    np.testing.assert_allclose(b, a + 1.0)
    assert "shader" in appy.jit.options


def test_np_shared_host_helpers():
    x = nps.randn(3, 4, dtype=np.float32)
    assert x.shape == (3, 4) and x.dtype == np.float32 and x.flags.c_contiguous
    y = nps.copy(x)
    assert y is not x and np.array_equal(x, y)
    z = nps.zeros((5,), dtype=np.int32)
    assert z.dtype == np.int32 and not z.any()
    assert nps.empty((2, 3)).shape == (2, 3) and nps.empty((2,)).dtype == np.float64
    assert nps.empty_like(x, dtype=np.float64).dtype == np.float64
    assert not nps.has_device_buffer(x)
    with pytest.raises(KeyError):
        nps.get_device_buffer(x)


@appy.jit
def smooth(a, n):
    b = nps.zeros(n)
    c = nps.copy(a)
    #pragma parallel for
    for i in range(1, n - 1):
        b[i] = (c[i - 1] + c[i] + c[i + 1]) / 3.0
    d = nps.empty_like(a)
    #pragma parallel for
    for i in range(n):
        d[i] = b[i]
    return d


@pytest.mark.parametrize("n", [3, 7, 1009])
def test_np_shared_inside_a_jitted_function(n):
    a = np.random.default_rng(n).random(n)
    d = smooth(a, n)
    expect = np.zeros(n)
    expect[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
    np.testing.assert_allclose(d, expect, rtol=1e-14)


@appy.jit
def describe(a):
    # Nothing for APPy to compile (no parallel loop), and a dict appy does not compile.
    d = {"n": a.shape[0], "total": float(a.sum())}
    return d["n"], d["total"]


@appy.jit(device="cpu")
def describe_parallel(a, b):
    d = {"n": a.shape[0]}
    #pragma parallel for
    for i in range(d["n"]):
        b[i] = a[i]


@appy.jit
def sequential_sum(a, n):
    # No parallel loop, but compilable: compiled as usual.
    s = 0.0
    for i in range(n):
        s += a[i]
    return s


def test_nothing_to_compile_runs_as_python():
    a = np.random.default_rng(4).random(11)
    with pytest.warns(RuntimeWarning, match="has no parallel loop and appy cannot compile it"):
        assert describe(a) == (11, float(a.sum()))
    # Later calls run the Python function without a new warning.
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert describe(a[:3]) == (3, float(a[:3].sum()))
    # A function with a parallel loop is APPy's to compile: its error is raised.
    with pytest.raises(appy.CompileError):
        describe_parallel(a, np.zeros(11))
    # A compilable function without parallel loops is compiled.
    assert sequential_sum(a, 11) == pytest.approx(a.sum())
    assert sequential_sum.signatures()


def test_nothing_to_compile_takes_python_arguments():
    # As APPy's tests/unit/general/pragma/test_no_pragma.py writes it.
    @appy.jit
    def foo(x):
        return x

    with pytest.warns(RuntimeWarning, match="a `list` argument"):
        assert foo([1, 2, 3]) == [1, 2, 3]
    a = np.random.default_rng(6).random(5)
    assert foo(a) is not None and np.array_equal(foo(a), a)
