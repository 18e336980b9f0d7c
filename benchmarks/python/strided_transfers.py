#!/usr/bin/env python3
"""Strided transfers on the GPU (seed 002 §5.3): functions of tests/cases/strided.py
called on NumPy arrays, whose launches touch every other element, two of every three,
every other row, every third element written; the bytes the runtime moves each way
(read from its `APPY_LOG=appy_runtime=debug` trace of each call, which the package
hands to the Python logger `appy`) against the bytes
the touched elements hold and against the spanned box, and each result against NumPy
running the same source:

    python3 benchmarks/python/strided_transfers.py

The counts come from a child process with the strided transfers on (`APPY_STRIDED=1`).
Autotuning is off (one call, one trace line per function). Then the time of a call on
NumPy arrays (transfers included; median of 7 rounds of the mean of 5 calls) with the
strided transfers and with `APPY_STRIDED=0` (the default: the spanned boxes move), each
in a child process."""
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import timed  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "cases"))


def cases():
    """(name, function, arrays, touched bytes to the device, bytes back, spanned bytes)."""
    import strided as s
    r = np.random.default_rng(3)

    def f64(*shape):
        return r.random(shape) + 0.5

    n = 1 << 22
    out = [("every_other n=2^22", s.every_other, [f64(2 * n + 1), f64(n)], 8 * (n + n), 8 * n, 8 * ((2 * n - 1) + n))]
    a16 = r.random(16 * n, dtype=np.float64).astype(np.float32) + 0.5
    out.append(("sparse (a[16*i]) n=2^22 f32", s.sparse, [a16, np.zeros(n, np.float32) + 1], 4 * (n + n), 4 * n, 4 * ((16 * n - 15) + n)))
    out.append(("interleaved n=2^21", s.interleaved, [f64(3 * (n // 2) + 2), f64(n // 2)], 8 * (2 * (n // 2) + n // 2), 8 * (n // 2),
                8 * (3 * (n // 2) - 1 + n // 2)))
    m, k = 1025, 1031
    a = r.random((2 * m + 1, k), dtype=np.float64).astype(np.float32) + 0.5
    out.append((f"odd_rows {m}x{k} f32", s.odd_rows, [a, np.zeros((m, k), np.float32) + 1], 4 * (m * k + m * k), 4 * m * k,
                4 * ((2 * m - 1) * k + m * k)))
    out.append(("scatter_third n=2^21", s.scatter_third, [f64(n // 2), f64(3 * (n // 2) + 4)], 8 * (n // 2 + n // 2), 8 * (n // 2),
                8 * (n // 2 + 3 * (n // 2) - 2)))
    return out


def child():
    import logging

    # The runtime's trace goes to the Python logger `appy`.
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(message)s")
    for name, f, arrays, *_ in cases():
        want = [x.copy() for x in arrays]
        f.py_func(*want)
        print(f"CASE {name}", file=sys.stderr, flush=True)
        f(*arrays)
        ok = all(np.allclose(g, w, rtol=1e-6, atol=0) for g, w in zip(arrays, want))
        print(f"RESULT {name} {'ok' if ok else 'WRONG'}", flush=True)
        logging.getLogger().setLevel(logging.WARNING)
        us = timed(lambda: f(*arrays), 5, lambda: None)
        logging.getLogger().setLevel(logging.DEBUG)
        print(f"TIME {name} {us:.1f}", flush=True)


def run_child(strided):
    env = dict(os.environ, APPY_LOG="appy_runtime=debug", APPY_AUTOTUNE="0", APPY_STRIDED="1" if strided else "0")
    p = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout, p.stderr[-4000:])
        raise SystemExit("child failed")
    return p


def main():
    if "--child" in sys.argv:
        child()
        return
    p = run_child(True)
    dense = run_child(False)
    times = {}
    for label, q in (("strided", p), ("boxes", dense)):
        for line in q.stdout.splitlines():
            if line.startswith("TIME "):
                name, us = line[5:].rsplit(" ", 1)
                times[(label, name)] = float(us)
    moved, case = {}, None
    for line in re.sub(r"\x1b\[[0-9;]*m", "", p.stderr).splitlines():
        if line.startswith("CASE "):
            case = line[5:].strip()
        m = re.search(r"(\d+) launches, (\d+) bytes to the device, (\d+) bytes back", line)
        if m and case:
            moved[case] = (int(m.group(2)), int(m.group(3)))
    results = dict(line[7:].rsplit(" ", 1) for line in p.stdout.splitlines() if line.startswith("RESULT "))
    dres = dict(line[7:].rsplit(" ", 1) for line in dense.stdout.splitlines() if line.startswith("RESULT "))
    print("| function | to the device (counted) | touched elements' bytes | back (counted) | written elements' bytes | the spanned boxes' bytes | NumPy | µs per call | µs, APPY_STRIDED=0 |")
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|")
    bad = 0
    for name, _, _, htod, dtoh, span in cases():
        got = moved.get(name, (-1, -1))
        exact = got == (htod, dtoh)
        bad += (not exact) + (results.get(name) != "ok") + (dres.get(name) != "ok")
        print(f"| {name} | {got[0]} | {htod} | {got[1]} | {dtoh} | {span} | {results.get(name)}{'' if exact else ' (COUNT DIFFERS)'} | "
              f"{times.get(('strided', name), -1):.0f} | {times.get(('boxes', name), -1):.0f} |")
    print("all exact and ok" if bad == 0 else f"{bad} problems")


if __name__ == "__main__":
    main()
