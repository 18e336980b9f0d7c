"""float16 and bfloat16 through the package: NumPy float16 arrays and scalars, torch
float16 and bfloat16 tensors. Each operation is computed in float32 and rounded back,
as NumPy (float16) and torch (bfloat16) compute it, so element-wise arithmetic equals
theirs exactly; math functions are within one 16-bit ulp."""
import numpy as np
import pytest

import appy
from conftest import sizes


@appy.jit
def axpby(a, b, out, s):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = s * a[i] + b[i] * b[i] - a[i] / 3.0


@appy.jit
def soft(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i] = np.exp(a[i]) / (1.0 + np.exp(a[i]))


@appy.jit
def total(a):
    return np.sum(a), np.max(a), a[0] * a[a.shape[0] - 1]


@pytest.mark.parametrize("n", sizes())
def test_float16_numpy(n):
    rng = np.random.default_rng(n)
    a = rng.uniform(-4, 4, n).astype(np.float16)
    b = rng.uniform(-4, 4, n).astype(np.float16)
    s = np.float16(0.7)
    out, want = np.zeros(n, np.float16), np.zeros(n, np.float16)
    axpby(a, b, out, s)
    axpby.py_func(a, b, want, s)
    np.testing.assert_array_equal(out, want)
    soft(a, out)
    soft.py_func(a, want)
    np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=1e-3, atol=1e-4)
    got, exp = total(a), total.py_func(a)
    assert [type(x) for x in got] == [type(x) for x in exp]
    np.testing.assert_allclose(float(got[0]), float(exp[0]), rtol=2e-3, atol=2e-3)
    assert got[1] == exp[1] and got[2] == exp[2]


@appy.jit
def make_half(n):
    out = np.empty(n, dtype=np.float16)
    #pragma parallel for
    for i in range(n):
        out[i] = i * 0.1
    return out


def test_float16_results_are_numpy_float16():
    out = make_half(37)
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, make_half.py_func(37))


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [1, 7, 257, 4099])
def test_torch_half_tensors(name, n):
    torch = pytest.importorskip("torch")
    dev = "cuda" if appy.device() == "gpu" else "cpu"
    dt = getattr(torch, name)
    g = torch.Generator().manual_seed(n)
    a = (torch.rand(n, generator=g) * 8 - 4).to(dt).to(dev)
    b = (torch.rand(n, generator=g) * 8 - 4).to(dt).to(dev)
    s = 0.7
    out = torch.zeros(n, dtype=dt, device=dev)
    axpby(a, b, out, s)
    # appy converts a Python float to the 16-bit type first, as NumPy does (NEP 50);
    # torch multiplies by it in float32. With the scalar converted, torch's per-op
    # results are appy's exactly.
    st = torch.tensor(s, dtype=dt, device=dev)
    want = st * a + b * b - a / 3.0
    assert torch.equal(out, want), (out - want).abs().max()
    soft(a, out)
    want = torch.exp(a) / (1.0 + torch.exp(a))
    torch.testing.assert_close(out.float(), want.float(), rtol=1e-2, atol=1e-3)
