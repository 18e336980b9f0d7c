#!/usr/bin/env python3
"""Compiles every kernel of kernels.py for the GPU, with autotuning candidates
(`appy compile --tune`), into bundles in DIR (default .dev/npbench), and records the
compile times (the harness, run_gpu.py, compiles in-process at the first call instead;
the bundles serve `appy exec`, sanitize.py and ncu_profile.py).

    python3 benchmarks/npbench/compile.py [--appy target/release/appy] [--out DIR]"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import adapters  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--appy", default=os.path.join(ROOT, "target", "release", "appy"))
ap.add_argument("--out", default=os.path.join(ROOT, ".dev", "npbench"))
ap.add_argument("--single", action="store_true", help="one vector length only (no tuning candidates)")
ap.add_argument("--repeat", type=int, default=5, help="compiles at one vector length timed per kernel (median and min reported)")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
times = {}
for k in adapters.KERNELS:
    out = os.path.join(a.out, k + ".json")
    cmd = [a.appy, "compile", os.path.join(HERE, "kernels.py"), "--func", k, "--signature", adapters.signature(k), "--tune", "-o", out]
    if a.single:
        cmd.remove("--tune")
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"compile {k} failed:\n{p.stderr}")
    ms = float(p.stderr.split(" in ")[-1].split(" ms")[0])
    # One vector length alone (what a call compiles without tuning), several times: the
    # build machine has two cores, and single runs vary by tens of percent.
    ones = []
    for _ in range(max(1, a.repeat)):
        p1 = subprocess.run([c for c in cmd[:-2] if c != "--tune"] + ["-o", out + ".single"], capture_output=True, text=True)
        ones.append(float(p1.stderr.split(" in ")[-1].split(" ms")[0]))
    os.remove(out + ".single")
    ones.sort()
    ms1, ms1_min = ones[len(ones) // 2], ones[0]
    nk = len(json.load(open(out))["kernels"])
    times[k] = {"all_candidates_ms": ms, "single_ms": ms1, "single_min_ms": ms1_min, "kernels": nk}
    print(f"{k:<15} {ms1:6.1f} ms median, {ms1_min:6.1f} min (one vector length, {nk} kernel(s)), {ms:7.1f} ms (all candidates)")
json.dump(times, open(os.path.join(a.out, "compile_times.json"), "w"), indent=1)
rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
open(os.path.join(a.out, "VERSION"), "w").write(f"appy {rev}")
