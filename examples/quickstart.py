"""Quick start: an APPy kernel called on NumPy arrays, on the GPU when there is one,
else on the CPU, checked against NumPy.

    pip install ./crates/appy-python
    python examples/quickstart.py
"""
import time

import numpy as np

import appy


@appy.jit
def softmax(a, b, M, N):
    #pragma parallel for
    for i in range(M):
        m = float('-inf')
        #pragma simd
        for j in range(N):
            m = np.maximum(m, a[i, j])
        s = 0.0
        #pragma simd
        for j in range(N):
            s += np.exp(a[i, j] - m)
        #pragma simd
        for j in range(N):
            b[i, j] = np.exp(a[i, j] - m) / s


if __name__ == "__main__":
    rng = np.random.default_rng(7)
    M, N = 1000, 777
    a = rng.random((M, N), dtype=np.float32) * 8 - 4
    b = np.zeros_like(a)
    t0 = time.perf_counter()
    softmax(a, b, M, N)  # compiles for (float32[:,:], float32[:,:], int, int), then runs
    t1 = time.perf_counter()
    softmax(a, b, M, N)  # compiled already
    t2 = time.perf_counter()
    e = np.exp(a - a.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    err = float(np.abs(b - want).max())
    dev = appy.device()  # 'auto' (the default, or $APPY_DEVICE), 'cpu' or 'gpu'
    where = "GPU" if dev == "gpu" or (dev == "auto" and appy.gpu_available()) else "CPU"
    print(f"softmax {M}x{N} float32 on the {where}: first call {1e3 * (t1 - t0):.0f} ms "
          f"(compile + run), second {1e3 * (t2 - t1):.2f} ms; max |appy - numpy| = {err:.2e}")
    raise SystemExit(0 if err < 1e-5 else 1)
