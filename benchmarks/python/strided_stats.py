#!/usr/bin/env python3
"""Bytes moved by strided accesses, as `appy exec --stats` counts them, with and without
strided transfers (APPY_STRIDED=1), next to the bytes the kernel touches; each result
checked against NumPy. Three kernels of tests/cases/strided.py: a 1-D stride
(`every_other` reads `a[2*i]`), an interleaved pair (`interleaved` reads `a[3*i]` and
`a[3*i+1]`) and every other row of a matrix (`odd_rows` reads `a[2*i+1, :]`); each writes
all of `out`. Touched bytes read: n*8, 2*n*8 and m*k*4; written: all of `out`.

    appy compile tests/cases/strided.py --func every_other --signature 'f64[:],f64[:]' -o DIR/every_other.json
    appy compile tests/cases/strided.py --func interleaved --signature 'f64[:],f64[:]' -o DIR/interleaved.json
    appy compile tests/cases/strided.py --func odd_rows --signature 'f32[:,:],f32[:,:]' -o DIR/odd_rows.json
    python3 benchmarks/python/strided_stats.py --runner appy --dir DIR     # on the GPU machine
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "cases"))
os.environ["APPY_DISABLE_JIT"] = "1"  # the kernels below are then plain Python: the oracle


def cases(rng):
    n, m, k = 1_000_003, 3001, 1027
    a1 = rng.random(2 * n + 1) + 0.5
    a2 = rng.random(3 * n + 2) + 0.5
    a3 = (rng.random((2 * m + 1, k)) + 0.5).astype(np.float32)
    return [
        ("every_other", {"a": a1, "out": rng.random(n)}, ["out"]),
        ("interleaved", {"a": a2, "out": rng.random(n)}, ["out"]),
        ("odd_rows", {"a": a3, "out": rng.random((m, k)).astype(np.float32)}, ["out"]),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    import strided  # noqa: E402 (needs APPY_DISABLE_JIT first)
    rng = np.random.default_rng(0)
    print("| kernel | strided | htod bytes | dtoh bytes | matches NumPy |")
    print("|---|---|---:|---:|---|")
    for func, args, outs in cases(rng):
        want = {k: v.copy() for k, v in args.items()}
        getattr(strided, func)(**want)
        for mode in ("0", "1"):
            with tempfile.TemporaryDirectory() as d:
                cli = []
                for name, v in args.items():
                    np.save(os.path.join(d, name + ".npy"), v)
                    cli += ["--arg", f"{name}=@{d}/{name}.npy"]
                od = os.path.join(d, "out")
                p = subprocess.run([a.runner, "exec", os.path.join(a.dir, func + ".json"), "--stats", "--out", od] + cli,
                                   capture_output=True, text=True, env=dict(os.environ, APPY_STRIDED=mode))
                if p.returncode != 0:
                    print(f"| {func} | {mode} | failed: {p.stderr.strip()[-300:]} | | |")
                    continue
                st = re.search(r"htod_bytes=(\d+) dtoh_bytes=(\d+)", p.stdout)
                ok = all(np.allclose(np.load(os.path.join(od, o + ".npy")), want[o], rtol=1e-6, atol=0) for o in outs)
                print(f"| {func} | {'on' if mode == '1' else 'off'} | {st.group(1)} | {st.group(2)} | {'yes' if ok else 'NO'} |")


if __name__ == "__main__":
    main()
