"""GPU math functions through the installed package with libdevice found on its own
(no APPY_LIBDEVICE): prints where it was found (`python -m appy doctor`'s line), then
compiles and runs a kernel of `exp`, `tanh`, `log`, `sin` and `arctan2` on the GPU and compares
them with NumPy on random inputs of sizes 1, a prime and a non-multiple of the vector
length.

    python3 scripts/libdevice_check.py
"""
import os
import sys

import numpy as np

import appy


@appy.jit
def math_kernel(a, b, c, n):
    #pragma parallel for
    for i in range(n):
        b[i] = np.exp(a[i]) * np.tanh(a[i]) + np.log(1.0 + a[i] * a[i])
        c[i] = np.sin(a[i]) ** 2 + np.arctan2(a[i], 2.0)


def main():
    assert "APPY_LIBDEVICE" not in os.environ, "unset APPY_LIBDEVICE to test the search"
    rows = dict(appy._native.doctor())
    print("GPU      ", rows["GPU"])
    print("libdevice", rows["libdevice"])
    if not appy.gpu_available():
        print("no GPU: nothing to run")
        return 1
    rng = np.random.default_rng(7)
    ok = True
    for n in (1, 1009, 1000003):
        for dt in (np.float64, np.float32):
            a = rng.uniform(-3, 3, n).astype(dt)
            b = np.empty_like(a)
            c = np.empty_like(a)
            math_kernel(a, b, c, n)
            wb = np.exp(a) * np.tanh(a) + np.log(1 + a * a)
            wc = np.sin(a) ** 2 + np.arctan2(a, dt(2.0))
            tol = 1e-12 if dt == np.float64 else 2e-5
            good = np.allclose(b, wb, rtol=tol, atol=tol) and np.allclose(c, wc, rtol=tol, atol=tol)
            ok &= good
            print(f"n={n} {np.dtype(dt).name}: {'ok' if good else 'MISMATCH'}")
    print("ALL OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
