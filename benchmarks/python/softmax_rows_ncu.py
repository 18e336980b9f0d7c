#!/usr/bin/env python3
"""Nsight Compute counters of NPBench's softmax (64×16×512×512 float32, rows of 512)
for compiled appy bundles and for torch's own softmax kernel, on the GPU machine:

    APPY_GPU_VECTOR=1 appy compile benchmarks/npbench/kernels.py --func softmax \\
        --signature 'f32[:,:,:,:],f32[:,:,:,:]' --mvl 512 -o softmax_v512.json   # and so on
    python3 benchmarks/python/softmax_rows_ncu.py --runner appy softmax_v512.json ...

Each bundle runs once under `ncu` through `appy exec` (the runner needs no compiler),
then torch.softmax once; one row per kernel: duration, DRAM bytes and throughput,
registers, launch shape, warps active, instructions, L2 read sectors and the warp
stall reasons that explain a loss (barrier, long scoreboard, short scoreboard)."""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

import numpy as np

METRICS = [
    ("gpu__time_duration.sum", "µs", 1e-3),
    ("dram__bytes_read.sum", "DRAM read MB", 1e-6),
    ("dram__bytes_write.sum", "DRAM write MB", 1e-6),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM % peak", 1),
    ("launch__registers_per_thread", "regs", 1),
    ("launch__block_size", "block", 1),
    ("launch__grid_size", "grid", 1),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "warps active %", 1),
    ("smsp__inst_executed.sum", "instructions M", 1e-6),
    ("lts__t_sectors_srcunit_tex_op_read.sum", "L2 read sectors M", 1e-6),
    ("smsp__average_warp_latency_issue_stalled_barrier.ratio", "barrier stall cyc/inst", 1),
    ("smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio", "long-scoreboard cyc/inst", 1),
    ("smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio", "short-scoreboard cyc/inst", 1),
]


def profile(cmd, kernel_regex):
    full = ["ncu", "--clock-control", "none", "--kernel-name", f"regex:{kernel_regex}", "--launch-count", "1",
            "--metrics", ",".join(m for m, _, _ in METRICS), "--csv", "--page", "raw", "--print-units", "base"] + cmd
    p = subprocess.run(full, capture_output=True, text=True)
    rows = [line for line in p.stdout.splitlines() if line.startswith('"')]
    if len(rows) < 2:
        print(p.stdout[-3000:], p.stderr[-3000:], file=sys.stderr)
        return None
    r = list(csv.reader(rows))
    head, vals = r[0], r[-1]

    def get(m):
        try:
            return float(vals[head.index(m)].replace(",", ""))
        except (ValueError, IndexError):
            return float("nan")
    return {m: get(m) for m, _, _ in METRICS}, vals[head.index("Kernel Name")] if "Kernel Name" in head else "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    ap.add_argument("bundles", nargs="+")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        x = (np.random.default_rng(0).random((64, 16, 512, 512), dtype=np.float32) * 4 - 2)
        np.save(os.path.join(d, "x.npy"), x)
        np.save(os.path.join(d, "o.npy"), np.zeros_like(x))
        del x
        results = []
        for b in a.bundles:
            cmd = [a.runner, "exec", b, "--arg", f"x=@{d}/x.npy", "--arg", f"out=@{d}/o.npy"]
            results.append((os.path.basename(b), profile(cmd, "_appy_")))
        torch_cmd = [sys.executable, "-c",
                     "import torch; x = torch.rand(64, 16, 512, 512, device='cuda') * 4 - 2; "
                     "torch.softmax(x, dim=-1); torch.cuda.synchronize()"]
        results.append(("torch.softmax", profile(torch_cmd, "softmax")))
    print("| kernel | " + " | ".join(h for _, h, _ in METRICS) + " |")
    print("|---|" + "---:|" * len(METRICS))
    for name, r in results:
        if r is None:
            print(f"| {name} | (no counters) |")
            continue
        vals, kname = r
        cells = [f"{vals[m] * s:.4g}" for m, _, s in METRICS]
        print(f"| {name} ({kname[:40]}) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
