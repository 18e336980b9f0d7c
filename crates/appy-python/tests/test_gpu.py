"""GPU runs (item 3 with torch and CuPy arrays, returned device arrays, Ctrl-C in a host
loop). Skipped where there is no GPU; run on a GPU machine with
`python3 -m pytest crates/appy-python/tests/test_gpu.py`."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import appy
import kernels as K
from conftest import pythonpath

pytestmark = pytest.mark.skipif(not appy.gpu_available(), reason="no GPU")
rng = np.random.default_rng(5)
SIZES = [1, 7, 257, 1000, 100003]


@pytest.fixture(autouse=True)
def _gpu_device():
    appy.device("auto")
    yield
    appy.device("cpu")


@pytest.mark.parametrize("n", SIZES)
def test_numpy_arrays_on_the_gpu(n):
    x = rng.standard_normal(n)
    y = rng.standard_normal(n)
    want = y + 1.5 * x
    K.axpy(1.5, x, y, n)
    np.testing.assert_allclose(y, want)
    # Other test files may have compiled axpy for the CPU before: any GPU signature.
    assert any(s.startswith("gpu(") for s in K.axpy.signatures())


@pytest.mark.parametrize("n", SIZES)
def test_numpy_arrays_lent_aliased_viewed_and_read_only(n):
    """Host arrays move from and back to their own memory (no copy of their own); an
    argument sharing memory with an earlier one, a strided view and a read-only array
    go through copies, and the results are NumPy's."""
    x = rng.standard_normal(n)
    want = 2.5 * x
    K.axpy(1.5, x, x, n)  # y is x: y[i] += 1.5 * y[i]
    np.testing.assert_allclose(x, want)
    # The written argument first, the one only read second: the read one's copy must
    # not undo the writes.
    want = 2.0 * x
    K.double_into(x, x)
    np.testing.assert_allclose(x, want)
    # Partly overlapping views of one array.
    z = rng.standard_normal(n + 1)
    want = z.copy()
    want[:n] = 2.0 * want[1:]
    K.double_into(z[:n], z[1:])
    np.testing.assert_allclose(z, want)
    big = rng.standard_normal(2 * n + 1)
    y = rng.standard_normal(n)
    keep = big.copy()
    want = y + 1.5 * big[::2][:n]
    K.axpy(1.5, big[::2][:n], y, n)
    np.testing.assert_allclose(y, want)
    np.testing.assert_array_equal(big, keep)
    ro = rng.standard_normal(n)
    ro.setflags(write=False)
    keep = ro.copy()
    c = rng.standard_normal(2 * n)
    rest = c[1::2].copy()
    K.add3(ro, ro, c[::2], 2.0, -0.5)
    np.testing.assert_allclose(c[::2], 1.5 * keep)
    np.testing.assert_array_equal(c[1::2], rest)
    np.testing.assert_array_equal(ro, keep)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_torch_tensors_in_place(n, dt):
    torch = pytest.importorskip("torch")
    x = torch.randn(n, device="cuda", dtype=getattr(torch, dt))
    y = torch.randn(n, device="cuda", dtype=getattr(torch, dt))
    want = y + 1.5 * x
    ptr = y.data_ptr()
    K.axpy(1.5, x, y, n)
    assert y.data_ptr() == ptr
    torch.testing.assert_close(y, want)
    s = K.total(y)
    assert isinstance(s, float) and s == pytest.approx(float(y.double().sum()), rel=1e-4, abs=1e-3)


def test_torch_results_are_torch_tensors_on_the_gpu():
    torch = pytest.importorskip("torch")
    a = torch.randn(1001, device="cuda", dtype=torch.float64)
    r = K.new_exp(a)
    assert isinstance(r, torch.Tensor) and r.is_cuda and r.dtype == torch.float64
    torch.testing.assert_close(r, torch.exp(a) + torch.sqrt(torch.abs(a)))
    assert K.same(a) is a
    # A non-contiguous view is written back.
    M = torch.randn(40, 30, device="cuda", dtype=torch.float64)
    v = torch.randn(30, device="cuda", dtype=torch.float64)
    want = M.T * v[:, None]
    K.scale_rows(M.T, v)
    torch.testing.assert_close(M.T, want)


class _CudaOnly:
    """A GPU array known only through __cuda_array_interface__ (as Numba's)."""

    def __init__(self, t):
        self.t = t
        self.__cuda_array_interface__ = t.__cuda_array_interface__


def test_device_array_dlpack_and_cai_without_copies():
    torch = pytest.importorskip("torch")
    a = torch.randn(64, device="cuda", dtype=torch.float32)
    d = K.new_exp(_CudaOnly(a))
    assert isinstance(d, appy.DeviceArray) and d.shape == (64,) and d.dtype == "float32"
    t = torch.from_dlpack(d)
    assert t.is_cuda and t.data_ptr() == d.ptr
    torch.testing.assert_close(t, torch.exp(a) + torch.sqrt(torch.abs(a)))
    del d  # the tensor keeps the memory alive
    torch.testing.assert_close(t, torch.exp(a) + torch.sqrt(torch.abs(a)))
    cp = pytest.importorskip("cupy")
    d2 = K.new_exp(_CudaOnly(a))
    c = cp.asarray(d2)
    assert c.data.ptr == d2.ptr
    ca = cp.asarray(a.cpu().numpy())
    cr = K.new_exp(ca)
    assert isinstance(cr, cp.ndarray)
    cp.testing.assert_allclose(cr, cp.exp(ca) + cp.sqrt(cp.abs(ca)), rtol=1e-6)


@pytest.mark.parametrize("n", SIZES)
def test_cupy_arrays_in_place(n):
    cp = pytest.importorskip("cupy")
    a, b = cp.random.standard_normal(n), cp.random.standard_normal(n)
    c = cp.zeros(n)
    K.add3(a, b, c, 2.0, -0.5)
    cp.testing.assert_allclose(c, 2.0 * a - 0.5 * b)
    C = cp.zeros(n)
    K.blend(a, b, C, n)
    cp.testing.assert_allclose(C, cp.where(a > 0, a, 0.5 * b))


def test_cupy_views_and_dtypes():
    """CuPy arrays are read through their own attributes; a strided view goes through a
    contiguous copy that is written back."""
    cp = pytest.importorskip("cupy")
    a, b = cp.random.standard_normal(2001), cp.random.standard_normal(2001)
    c = cp.random.standard_normal(2001)
    keep = c[1::2].copy()
    K.add3(a[::2], b[::2], c[::2], 2.0, -0.5)
    cp.testing.assert_allclose(c[::2], 2.0 * a[::2] - 0.5 * b[::2])
    cp.testing.assert_array_equal(c[1::2], keep)
    c32 = cp.zeros(7, dtype=cp.float32)
    K.add3(a[:7].astype(cp.float32), b[:7].astype(cp.float32), c32, 2.0, -0.5)
    cp.testing.assert_allclose(c32, (2.0 * a[:7] - 0.5 * b[:7]).astype(cp.float32), rtol=1e-6)


def test_ctrl_c_in_a_host_loop(tmp_path):
    src = textwrap.dedent('''
        import numpy as np, appy

        @appy.jit
        def many(a, T):
            for t in range(T):
                #pragma parallel for simd
                for i in range(a.shape[0]):
                    a[i] = a[i] * 0.5 + 1.0
    ''')
    (tmp_path / "hl.py").write_text(src)
    child = textwrap.dedent('''
        import time, torch, appy
        from hl import many
        a = torch.ones(1000, device="cuda")
        many(a, 2)
        print("calling", flush=True)
        t0 = time.perf_counter()
        try:
            many(a, 10**8)
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted", time.perf_counter() - t0, flush=True)
        many(a, 2)
        print("again ok", flush=True)
    ''')
    env = dict(os.environ, PYTHONPATH=pythonpath(tmp_path))
    p = subprocess.Popen([sys.executable, "-c", child], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "calling"
    time.sleep(1.0)
    t = time.perf_counter()
    p.send_signal(signal.SIGINT)
    line = p.stdout.readline().split()
    reaction = time.perf_counter() - t
    out, err = p.communicate(timeout=60)
    assert line and line[0] == "interrupted", (line, out, err)
    assert reaction < 1.0
    assert "again ok" in out, err


def test_device_gpu_and_cpu_choice():
    x = np.ones(4)
    appy.device("cpu")
    K.increment_by_1(x)
    appy.device("gpu")
    K.increment_by_1(x)
    assert x.tolist() == [3.0] * 4
    assert any(s.startswith("cpu(") for s in K.increment_by_1.signatures())
    assert any(s.startswith("gpu(") for s in K.increment_by_1.signatures())


def test_first_call_runs_one_candidate_then_tunes(tmp_path):
    """The first call compiles and runs the default vector length alone; the second
    takes the other candidates (compiled in the background) and tunes; a new process
    loads the whole tuned bundle and its decision from the cache and compiles nothing.
    Every call's result is NumPy's."""
    src = textwrap.dedent('''
        import appy

        @appy.jit
        def scaled(a, b, s):
            #pragma parallel for simd
            for i in range(a.shape[0]):
                b[i] = s * a[i] + b[i]
    ''')
    (tmp_path / "sc.py").write_text(src)
    child = textwrap.dedent('''
        import logging, sys
        import numpy as np, appy
        from sc import scaled
        logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="LOG %(message)s")
        rng = np.random.default_rng(3)
        for n in (257, 257, 257, 100003):
            a, b = rng.standard_normal(n), rng.standard_normal(n)
            want = 1.5 * a + b
            scaled(a, b, 1.5)
            assert np.allclose(b, want), n
            print("call ok", n, flush=True)
    ''')
    env = dict(os.environ, PYTHONPATH=pythonpath(tmp_path), APPY_CACHE_DIR=str(tmp_path / "cache"),
               APPY_PRINT_AUTOTUNING="1", APPY_AUTOTUNE="1")
    first = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("call ok") == 4
    log = first.stdout + first.stderr
    assert "compiled scaled(" in log, log
    assert "autotuning candidates ready" in log, log
    # Tuned at the second call, and again for the new size's bucket.
    assert log.count("chose") == 2, log
    second = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    log = second.stdout + second.stderr
    assert "loaded from the cache" in log and "compiled scaled(" not in log, log
    assert "candidates ready" not in log and "chose" not in log and "(cached)" in log, log


def test_a_single_call_exits_cleanly(tmp_path):
    """A process whose only call returns while the other candidates are still being
    compiled in the background exits cleanly and at once (the compilers stop at exit),
    with NumPy's result."""
    (tmp_path / "one.py").write_text(textwrap.dedent('''
        import appy

        @appy.jit
        def twice(a, b):
            #pragma parallel for simd
            for i in range(a.shape[0]):
                b[i] = 2.0 * a[i] + b[i]
    '''))
    child = textwrap.dedent('''
        import numpy as np
        from one import twice
        a, b = np.arange(1009.0), np.ones(1009)
        twice(a, b)
        assert np.array_equal(b, 2.0 * np.arange(1009.0) + 1.0)
        print("ok", flush=True)
    ''')
    env = dict(os.environ, PYTHONPATH=pythonpath(tmp_path), APPY_CACHE_DIR=str(tmp_path / "cache"), APPY_AUTOTUNE="1")
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", (p.returncode, p.stdout, p.stderr)
    assert "candidates failed" not in p.stderr, p.stderr
    assert time.perf_counter() - t0 < 60
