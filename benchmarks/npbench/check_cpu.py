#!/usr/bin/env python3
"""Checks every kernel of kernels.py against NPBench's NumPy version on the CPU back end
(`appy run --device cpu`), at the small sizes of the peers harness (`tiny`); with
`--preset`, at that NPBench preset (S, M, ...), and times both.

    python3 benchmarks/npbench/check_cpu.py --peers PEERS_DIR [--appy target/release/appy] [kernel ...]
    python3 benchmarks/npbench/check_cpu.py --peers PEERS_DIR --preset M [--repeat 10]

PEERS_DIR is a folder prepared by ../shared/peers/fetch_vendor.sh (NPBench's sources).
Timing: appy is `appy bench --device cpu` (median of the timed calls, each on fresh
copies of the inputs made before its clock starts, after a warm-up call); NumPy is
NPBench's NumPy implementation timed the same way in this process (median of `--repeat`
calls on fresh copies, after a warm-up call)."""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import adapters  # noqa: E402


def load_bench(peers):
    spec = importlib.util.spec_from_file_location("peers_bench", os.path.join(peers, "bench.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def appy_bench(appy, k, names, args, repeat):
    """The median time of `appy bench --device cpu`, in seconds."""
    with tempfile.TemporaryDirectory() as d:
        cmd = [appy, "bench", os.path.join(HERE, "kernels.py"), "--func", k, "--device", "cpu", "--repeat", str(repeat)]
        r = subprocess.run(cmd + adapters.cli_args(names, args, d), capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(r.stderr)
        return float(r.stdout.split("median ")[1].split(" ms")[0]) / 1e3


def time_numpy(fn, inputs, repeat):
    """The median time of NPBench's NumPy implementation on fresh copies, in seconds."""
    fresh = lambda: [v.copy() if isinstance(v, np.ndarray) else v for v in inputs]  # noqa: E731
    fn(*fresh())
    ts = []
    for _ in range(repeat):
        v = fresh()
        t0 = time.perf_counter()
        fn(*v)
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peers", required=True)
    ap.add_argument("--appy", default=os.path.join(ROOT, "target", "release", "appy"))
    ap.add_argument("--preset", help="an NPBench preset (S, M, L, paper): check and time at its sizes")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("kernels", nargs="*")
    a = ap.parse_args()
    bench = load_bench(a.peers)
    bad = 0
    rows = []
    for k in a.kernels or list(adapters.KERNELS):
        info = bench.load_info(k)
        spec = bench.SPECS[k]
        params = dict(info["parameters"][a.preset]) if a.preset else dict(spec["tiny"])
        try:
            ns = bench.make_inputs(k, info, params)
        except ImportError as e:
            print(f"skip {k}: {e}")
            continue
        ref_ns = {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in ns.items()}
        fn, _ = bench.NumpyFW().impl(k, info, spec)
        inputs = [ns[n] for n in info["input_args"]]
        ret = fn(*[ref_ns[n] for n in info["input_args"]])
        ref = bench.np_outputs(info, spec, ref_ns, ret)
        ad = adapters.KERNELS[k]
        for n in ad.get("int64", []):
            ns[n] = ns[n].astype(np.int64)

        def new(shape, dtype, zero=False):
            return np.zeros(shape, dtype) if zero else np.full(shape, np.nan, dtype)

        args = ad["args"](ns, new)
        names = adapters.params(k)
        with tempfile.TemporaryDirectory() as d:
            cmd = [a.appy, "run", os.path.join(HERE, "kernels.py"), "--func", k, "--device", "cpu", "--out", d]
            cmd += adapters.cli_args(names, args, d)
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {k}: {r.stderr.strip()[:800]}")
                bad += 1
                continue
            got = {o: np.load(os.path.join(d, names[i] + ".npy")) for o, i in ad["outs"].items()}
        rtol, atol = spec.get("rtol", 1e-5), spec.get("atol", 1e-8)
        ok, worst, notes = bench.compare(ref, got, rtol, atol)
        print(f"{'ok  ' if ok else 'FAIL'} {k:<15} max rel err {worst:.2e} {notes}", flush=True)
        bad += not ok
        if a.preset and ok:
            t_appy = appy_bench(a.appy, k, names, args, a.repeat)
            t_np = time_numpy(fn, inputs, a.repeat)
            size = ", ".join(f"{n}={v}" for n, v in params.items())
            rows.append((k, size, t_appy, t_np))
            print(f"     {k:<15} appy {t_appy * 1e3:10.3f} ms   numpy {t_np * 1e3:10.3f} ms   numpy/appy {t_np / t_appy:6.2f}", flush=True)
    print(f"{bad} failing")
    if rows:
        print(f"\n| kernel | {a.preset} sizes | appy ms | NumPy ms | NumPy / appy |")
        print("|---|---|---:|---:|---:|")
        for k, size, ta, tn in rows:
            print(f"| {k} | {size} | {ta * 1e3:.3f} | {tn * 1e3:.3f} | {tn / ta:.2f} |")
        r = np.array([tn / ta for _, _, ta, tn in rows])
        print(f"\ngeomean NumPy/appy {np.exp(np.log(r).mean()):.2f}; appy slower than NumPy on {int((r < 1).sum())} of {len(rows)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
