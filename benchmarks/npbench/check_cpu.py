#!/usr/bin/env python3
"""Checks every kernel of kernels.py against NPBench's NumPy version on the CPU back end
(`appy run --device cpu`), at the small sizes of the peers harness (`tiny`).

    python3 benchmarks/npbench/check_cpu.py --peers PEERS_DIR [--appy target/release/appy] [kernel ...]

PEERS_DIR is a folder prepared by ../shared/peers/fetch_vendor.sh (NPBench's sources)."""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peers", required=True)
    ap.add_argument("--appy", default=os.path.join(ROOT, "target", "release", "appy"))
    ap.add_argument("kernels", nargs="*")
    a = ap.parse_args()
    bench = load_bench(a.peers)
    bad = 0
    for k in a.kernels or list(adapters.KERNELS):
        info = bench.load_info(k)
        spec = bench.SPECS[k]
        params = dict(spec["tiny"])
        try:
            ns = bench.make_inputs(k, info, params)
        except ImportError as e:
            print(f"skip {k}: {e}")
            continue
        ref_ns = {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in ns.items()}
        fn, _ = bench.NumpyFW().impl(k, info, spec)
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
        print(f"{'ok  ' if ok else 'FAIL'} {k:<15} max rel err {worst:.2e} {notes}")
        bad += not ok
    print(f"{bad} failing")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
