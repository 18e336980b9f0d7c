#!/usr/bin/env python3
"""Checks the appy kernels of hdiff_tile.py on the CPU (NumPy arrays, no GPU, no torch)
against NPBench's NumPy hdiff, at small odd shapes and NPBench's paper size:

    python3 benchmarks/python/hdiff_tile_check.py [--no-paper]

(On the CPU `prefetch` is checked and dropped, and `appy.buffer` is a stack array, so
this checks the sources' meaning; the GPU script checks the GPU code again.)"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hdiff_tile import KMAX, reference, variants  # noqa: E402

SHAPES = [(1, 1, 1), (1, 1, 160), (3, 5, 7), (2, 9, 160), (17, 17, 160), (13, 6, 33)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-paper", action="store_true", help="skip I = J = 256, K = 160")
    o = ap.parse_args()
    shapes = SHAPES + ([] if o.no_paper else [(256, 256, KMAX)])
    rng = np.random.default_rng(0)
    bad = 0
    for I, J, K in shapes:
        # Values in [0.5, 1.5): never zero, and the differences take both signs, so the
        # flux limiter takes both branches.
        in_field = rng.random((I + 4, J + 4, K)) + 0.5
        coeff = rng.random((I, J, K)) + 0.5
        lap = np.full((I + 2, J + 2, K), np.nan)
        want = reference(np, in_field, coeff)
        for name, fn, args in variants(in_field, coeff, lap):
            out = np.full((I, J, K), np.nan)
            t0 = time.perf_counter()
            fn(*args(out))
            dt = time.perf_counter() - t0
            err = np.nanmax(np.abs(out - want)) if not np.isnan(out).all() else np.nan
            ok = np.allclose(out, want, rtol=1e-12, atol=1e-13)
            bad += not ok
            print(f"I={I:3} J={J:3} K={K:3}  {name:42} {'ok' if ok else 'WRONG'}  max|err| {err:.1e}  ({dt:.2f} s)")
    print("all ok" if bad == 0 else f"{bad} WRONG")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
