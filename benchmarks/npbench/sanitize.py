#!/usr/bin/env python3
"""compute-sanitizer (memcheck, racecheck) over the NPBench kernels, on the GPU machine,
at the harness's small (`tiny`) sizes, with bundles compiled at the default vector length:

    python3 benchmarks/npbench/compile.py --out .dev/npbench_s --single   # build machine
    python3 benchmarks/npbench/sanitize.py --peers PEERS_DIR --dir .dev/npbench_s --runner .dev/gpu/appy-runner"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import adapters  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--peers", required=True)
ap.add_argument("--dir", required=True)
ap.add_argument("--runner", required=True)
a = ap.parse_args()
spec = importlib.util.spec_from_file_location("peers_bench", os.path.join(a.peers, "bench.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
bad = 0
for k in adapters.KERNELS:
    names, args = adapters.runner_args(bench, k, dict(bench.SPECS[k]["tiny"]))
    for tool in ["memcheck", "racecheck"]:
        with tempfile.TemporaryDirectory() as d:
            cmd = ["compute-sanitizer", "--tool", tool, "--error-exitcode", "3", a.runner, "exec", os.path.join(a.dir, k + ".json"), "--out", d]
            cmd += adapters.cli_args(names, args, d)
            p = subprocess.run(cmd, capture_output=True, text=True)
            summary = [l for l in p.stdout.splitlines() if "ERROR SUMMARY" in l or "RACECHECK SUMMARY" in l]
            ok = p.returncode == 0
            bad += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {tool:<9} {k:<15} {' '.join(summary).replace('=========', '').strip()}")
            if not ok:
                print(p.stdout[-1500:], p.stderr[-1500:])
print(f"sanitizer: {bad} failing runs")
sys.exit(1 if bad else 0)
