"""complex64 and complex128 through the package: NumPy arrays, torch, CuPy and JAX
tensors (used in place, the parts side by side), against the same function run by
CPython + NumPy; complex scalar arguments and results are refused with a message."""
import os

import numpy as np
import pytest

import appy
from conftest import sizes


@appy.jit
def rotate(z, w, out):
    #pragma parallel for
    for i in range(z.shape[0]):
        a = z[i]
        out[i] = a * w[i] - np.conj(a) / (w[i] + 2) + np.exp(1j * a.imag) * abs(a)


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


@appy.jit
def parts_sum(z):
    s = 0j
    #pragma parallel for shared(s)
    for i in range(z.shape[0]):
        s += z[i]
    return s.real, s.imag


def rand_complex(rng, n, dtype):
    return (rng.uniform(-1, 1, n) + 1j * rng.uniform(-1, 1, n)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("n", sizes())
def test_complex_numpy(dtype, n):
    rng = np.random.default_rng(n)
    z, w = rand_complex(rng, n, dtype), rand_complex(rng, n, dtype)
    out, want = np.zeros(n, dtype), np.zeros(n, dtype)
    rotate(z, w, out)
    rotate.py_func(z, w, want)
    tol = 2e-5 if dtype == np.complex64 else 1e-12
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    got, exp = parts_sum(z), parts_sum.py_func(z)
    np.testing.assert_allclose(got, exp, rtol=tol * 10, atol=tol * 10)


def test_mandelbrot_counts():
    rng = np.random.default_rng(3)
    cs = rng.uniform(-1.5, 1, 999) + 1j * rng.uniform(-1.2, 1.2, 999)
    counts, want = np.zeros(999, np.int64), np.zeros(999, np.int64)
    mandelbrot(cs, counts)
    mandelbrot.py_func(cs, want)
    np.testing.assert_array_equal(counts, want)


@pytest.mark.parametrize("name", ["complex64", "complex128"])
def test_torch_complex(name):
    torch = pytest.importorskip("torch")
    dev = "cuda" if appy.device() == "gpu" else "cpu"
    dt = getattr(torch, name)
    g = torch.Generator().manual_seed(5)
    z = torch.randn(301, generator=g, dtype=dt).to(dev)
    w = torch.randn(301, generator=g, dtype=dt).to(dev)
    out = torch.zeros(301, dtype=dt, device=dev)
    rotate(z, w, out)
    zn, wn = z.cpu().numpy(), w.cpu().numpy()
    want = np.zeros(301, zn.dtype)
    rotate.py_func(zn, wn, want)
    tol = 2e-5 if name == "complex64" else 1e-12
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=tol, atol=tol)


def test_cupy_and_jax_complex():
    if appy.device() != "gpu":
        pytest.skip("GPU arrays need the GPU back end")
    rng = np.random.default_rng(7)
    z, w = rand_complex(rng, 129, np.complex128), rand_complex(rng, 129, np.complex128)
    want = np.zeros(129, np.complex128)
    rotate.py_func(z, w, want)
    cp = pytest.importorskip("cupy")
    out = cp.zeros(129, cp.complex128)
    rotate(cp.asarray(z), cp.asarray(w), out)
    np.testing.assert_allclose(cp.asnumpy(out), want, rtol=1e-12, atol=1e-12)
    # JAX takes most of the GPU's memory unless told otherwise.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jnp = pytest.importorskip("jax.numpy")
    z64 = z.astype(np.complex64)
    got = parts_sum(jnp.asarray(z64))
    np.testing.assert_allclose(got, parts_sum.py_func(z64), rtol=1e-4, atol=1e-4)


@appy.jit
def scale(z, c):
    for i in range(z.shape[0]):
        z[i] = z[i] * c


def test_complex_scalar_arguments_are_refused():
    z = np.ones(4, np.complex128)
    with pytest.raises(appy.RuntimeError, match="complex scalars are not supported|pass the real and imaginary parts"):
        scale(z, np.complex128(1 + 2j))
    with pytest.raises(appy.RuntimeError, match="pass the real and imaginary parts"):
        scale(z, 1 + 2j)
