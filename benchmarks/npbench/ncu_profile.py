#!/usr/bin/env python3
"""Nsight Compute counters for the appy kernels of some NPBench kernels, on the GPU
machine, at the benchmark's sizes (the harness's preset), with the tuned bundles:

    python3 benchmarks/npbench/ncu_profile.py --peers PEERS_DIR --dir .dev/npbench \\
        --runner .dev/gpu/appy-runner softmax go_fast ...

Each kernel runs once without the profiler (autotuning; the choice goes to
APPY_CACHE_DIR), then under `ncu` with the cached choice: per launch, the duration,
DRAM bytes and throughput, achieved occupancy, registers and the launch shape."""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import adapters  # noqa: E402

METRICS = ",".join([
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread",
    "launch__block_size",
    "launch__grid_size",
    "smsp__inst_executed.sum",
])

ap = argparse.ArgumentParser()
ap.add_argument("--peers", required=True)
ap.add_argument("--dir", required=True)
ap.add_argument("--runner", required=True)
ap.add_argument("--launches", type=int, default=4, help="launches profiled per kernel")
ap.add_argument("kernels", nargs="+")
a = ap.parse_args()
spec = importlib.util.spec_from_file_location("peers_bench", os.path.join(a.peers, "bench.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
os.environ.setdefault("APPY_CACHE_DIR", tempfile.mkdtemp())
for k in a.kernels:
    params = dict(bench.load_info(k)["parameters"][bench.SPECS[k]["preset"]])
    names, args = adapters.runner_args(bench, k, params)
    with tempfile.TemporaryDirectory() as d:
        base = [a.runner, "exec", os.path.join(a.dir, k + ".json"), "--out", d] + adapters.cli_args(names, args, d)
        p = subprocess.run(base, capture_output=True, text=True, env={**os.environ, "APPY_PRINT_AUTOTUNING": "1"})
        print(f"== {k} {params}: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ''}")
        cmd = ["ncu", "--kernel-name", "regex:_appy_", "--launch-count", str(a.launches), "--metrics", METRICS, "--csv", "--page", "raw"] + base
        p = subprocess.run(cmd, capture_output=True, text=True)
        rows = [l for l in p.stdout.splitlines() if l.startswith('"')]
        if len(rows) < 2:
            print(p.stdout[-2000:], p.stderr[-2000:])
            continue
        import csv
        r = list(csv.reader(rows))
        head = r[0]
        col = {h: i for i, h in enumerate(head)}
        for row in r[2:] if r[1][0] == "" else r[1:]:
            g = lambda m: row[col[m]] if m in col else "?"
            print(f"  {g('Kernel Name')[:28]:<28} {g('gpu__time_duration.sum'):>10} ns  read {g('dram__bytes_read.sum'):>12}  write {g('dram__bytes_write.sum'):>12}"
                  f"  dram {g('dram__throughput.avg.pct_of_peak_sustained_elapsed'):>6}%  warps {g('sm__warps_active.avg.pct_of_peak_sustained_active'):>6}%"
                  f"  regs {g('launch__registers_per_thread')}  block {g('launch__block_size')}  grid {g('launch__grid_size')}  inst {g('smsp__inst_executed.sum')}")
