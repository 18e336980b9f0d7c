"""APPy's own programs (its README blocks and examples/ folder, copied unchanged into this
folder) compile with appy and, called through `appy run` on NumPy versions of the
example's inputs, match the example's own reference (kernel_lib / the README's formula).

The `appy` command is `target/debug/appy` (or `$APPY_BIN`); `$APPY_TEST_DEVICE` picks
the device (`cpu` by default; `gpu` on a GPU machine)."""
import os
import subprocess
import tempfile

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
APPY = os.environ.get("APPY_BIN", os.path.join(ROOT, "target", "debug", "appy"))
DEVICE = os.environ.get("APPY_TEST_DEVICE", "cpu")


def csr(rng, M, N, density, dtype):
    """A sparse matrix as the examples make it (`torch.randn(M, N).to_sparse_csr()` of a
    masked matrix): dense copy, values, row pointers and column indices (int64)."""
    D = (rng.standard_normal((M, N)) * (rng.random((M, N)) < density)).astype(dtype)
    indptr = np.r_[0, np.cumsum((D != 0).sum(1))].astype(np.int64)
    indices = np.nonzero(D)[1].astype(np.int64)
    return D, D[D != 0], indptr, indices


def run(file, func, args):
    """Runs `func` of `file` with `args` (name -> array or scalar) through `appy run`;
    returns the final arguments and the return values."""
    with tempfile.TemporaryDirectory() as d:
        cmd = [APPY, "run", os.path.join(HERE, file), "--func", func, "--device", DEVICE, "--out", os.path.join(d, "out")]
        for name, v in args.items():
            if isinstance(v, np.ndarray):
                p = os.path.join(d, name + ".npy")
                np.save(p, v)
                cmd += ["--arg", f"{name}=@{p}"]
            else:
                cmd += ["--arg", f"{name}={v!r}"]
        p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, APPY_CACHE_DIR=""))
        assert p.returncode == 0, p.stderr
        outd = os.path.join(d, "out")
        final = {n: np.load(os.path.join(outd, n + ".npy")) for n, v in args.items() if isinstance(v, np.ndarray)}
        rets = []
        if os.path.exists(os.path.join(outd, "return.npy")):
            rets = [np.load(os.path.join(outd, "return.npy"))]
        return final, rets


@pytest.mark.parametrize("n", [1, 7, 1000, 10007])
def test_01_vec_add(n):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    _, [c] = run("01-vec_add.py", "kernel_appy", dict(a=a, b=b))
    assert c.dtype == np.float32
    np.testing.assert_allclose(c, a + b, rtol=1e-5, atol=1e-6)  # kernel_lib: a + b


@pytest.mark.parametrize("n", [1, 7, 1000, 100003])
def test_02_vec_sum(n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    _, [s] = run("02-vec_sum.py", "kernel_appy", dict(a=a))
    # kernel_lib: a.sum(); `b = 0.0; b += a[i]` is a float32 sum, as in NumPy 2.
    assert s.dtype == np.float32
    np.testing.assert_allclose(s, a.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("m,n", [(1, 1), (7, 13), (501, 499)])
def test_03_spmv(m, n):
    rng = np.random.default_rng(m)
    D, data, indptr, indices = csr(rng, m, n, 0.1, np.float64)
    x = rng.standard_normal(n)
    _, [y] = run("03-spmv.py", "kernel_appy", dict(A_data=data, A_indptr=indptr, A_indices=indices, x=x, M=m, N=n))
    np.testing.assert_allclose(y, D @ x, rtol=1e-6, atol=1e-6)  # kernel_lib: A @ x


@pytest.mark.parametrize("func", ["kernel_appy1", "kernel_appy2"])
@pytest.mark.parametrize("n", [1, 7, 10007])
def test_04_masked_sum(func, n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n)
    mask = rng.random(n) > 0.5
    _, [s] = run("04-masked_sum.py", func, dict(a=a, mask=mask))
    np.testing.assert_allclose(s, a[mask].sum(), rtol=1e-6, atol=1e-6)  # kernel_lib: a[mask].sum()


@pytest.mark.parametrize("m,n", [(1, 1), (7, 13), (257, 263)])
def test_05_gemv(m, n):
    rng = np.random.default_rng(m)
    A, x = rng.standard_normal((m, n)), rng.standard_normal(n)
    _, [y] = run("05-gemv.py", "kernel_appy", dict(alpha=1.5, A=A, x=x))
    np.testing.assert_allclose(y, 1.5 * (A @ x), rtol=1e-6, atol=1e-6)  # kernel_lib: alpha * (A @ x)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (7, 13, 5), (301, 299, 37)])
def test_06_spmm(m, n, k):
    rng = np.random.default_rng(m)
    D, data, indptr, indices = csr(rng, m, n, 0.1, np.float64)
    B = rng.standard_normal((n, k))
    y = rng.standard_normal((m, k))
    final, _ = run("06-spmm.py", "kernel_appy", dict(A_data=data, A_indptr=indptr, A_indices=indices, B=B, y=y, M=m))
    np.testing.assert_allclose(final["y"], D @ B, rtol=1e-6, atol=1e-6)  # kernel_lib: A @ B


@pytest.mark.parametrize("n", [1, 10, 1001])
def test_readme_increment_by_1(n):
    a = np.arange(n, dtype=np.int64)
    final, _ = run("readme_01_increment_by_1.py", "increment_by_1", dict(a=a))
    assert final["a"].tolist() == list(range(1, n + 1))


@pytest.mark.parametrize("n", [1, 13, 10007])
def test_readme_vector_sum(n):
    # The README's fragment computes `s` and returns nothing.
    a = np.random.default_rng(n).standard_normal(n)
    final, rets = run("readme_02_vector_sum.py", "vector_sum", dict(A=a))
    assert rets == [] and np.array_equal(final["A"], a)


@pytest.mark.parametrize("n,m", [(1, 1), (5, 7), (61, 73)])
def test_readme_syrk(n, m):
    rng = np.random.default_rng(n)
    C0, A = rng.standard_normal((n, n)), rng.standard_normal((n, m))
    final, [C] = run("readme_03_syrk.py", "syrk", dict(alpha=1.5, beta=1.2, C=C0.copy(), A=A))
    want = np.tril(1.5 * A @ A.T + 1.2 * C0) + np.triu(C0, 1)
    np.testing.assert_allclose(final["C"], want, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(C, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n", [1, 10, 999])
def test_docs_add_one(n):
    a = np.random.default_rng(n).standard_normal(n)
    final, _ = run("docs/docs_01_add_one.py", "add_one", dict(a=a))
    np.testing.assert_allclose(final["a"], a + 1)


@pytest.mark.parametrize("n", [1, 10, 999])
def test_docs_sum_vector(n):
    a = np.random.default_rng(n).standard_normal(n)
    _, [s] = run("docs/docs_02_sum_vector.py", "sum_vector", dict(a=a, N=n))
    np.testing.assert_allclose(s, a.sum(), rtol=1e-10)
