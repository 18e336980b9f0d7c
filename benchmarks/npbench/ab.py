#!/usr/bin/env python3
"""Two builds of appy on the NPBench kernels, in one run on one GPU: each kernel's
bundles from two compilers (A = before, B = after a change), each run by its own
runner with `appy exec --bench`, at the harness's sizes, alternating A and B.

    # build machine: bundles from each compiler (compile.py --appy OLD/appy --out DIR_A, ...)
    # GPU machine:
    python3 benchmarks/npbench/ab.py --peers PEERS_DIR --a DIR_A RUNNER_A --b DIR_B RUNNER_B \
        [--rounds 3] [--bench 20] [KERNEL ...]

Prints, per kernel, the minimum over the rounds of each build's median (ms) and the
ratio B/A (above 1: B is slower), then the geomean. Each `exec` is a fresh process;
each build keeps one compile cache for the run (so its autotuning choice, made in the
first round's warm-up call, which the `--bench` figures exclude, is reused); inputs
come from the harness's initializers."""
import argparse
import importlib.util
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import adapters  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--peers", required=True)
ap.add_argument("--a", nargs=2, metavar=("DIR", "RUNNER"), required=True)
ap.add_argument("--b", nargs=2, metavar=("DIR", "RUNNER"), required=True)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--bench", type=int, default=20)
ap.add_argument("--tuning", action="store_true", help="print each build's autotuning choices (APPY_PRINT_AUTOTUNING)")
ap.add_argument("kernels", nargs="*")
a = ap.parse_args()
spec = importlib.util.spec_from_file_location("peers_bench", os.path.join(a.peers, "bench.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


CACHES = {}


def run(build, k, cli, d):
    bundle = os.path.join(build[0], k + ".json")
    if build[0] not in CACHES:
        CACHES[build[0]] = tempfile.mkdtemp(prefix="appy-ab-")
    cache = CACHES[build[0]]
    env = dict(os.environ, APPY_CACHE_DIR=cache)
    if a.tuning:
        env["APPY_PRINT_AUTOTUNING"] = "1"
    cmd = [build[1], "exec", bundle, "--out", d, "--bench", str(a.bench)] + cli
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    line = [l for l in p.stdout.splitlines() if l.startswith("bench:")]
    if a.tuning:
        for l in (p.stdout + p.stderr).splitlines():
            if not l.startswith("bench:") and l.strip():
                print(f"  {k} [{os.path.basename(build[0])}] {l}", flush=True)
    if p.returncode != 0 or not line:
        print(f"  {k}: {' '.join(cmd[:3])} failed: {p.stderr[-600:]}", flush=True)
        return None
    return float(line[0].split()[2])  # the median


ratios = []
print(f"{'kernel':<16}{'A ms':>12}{'B ms':>12}{'B/A':>8}", flush=True)
for k in a.kernels or list(adapters.KERNELS):
    info = bench.load_info(k)
    sizes = dict(info["parameters"][bench.SPECS[k]["preset"]])
    names, args = adapters.runner_args(bench, k, sizes)
    best = {"a": math.inf, "b": math.inf}
    with tempfile.TemporaryDirectory() as d:
        cli = adapters.cli_args(names, args, d)
        for _ in range(a.rounds):
            for which, build in (("a", a.a), ("b", a.b)):
                with tempfile.TemporaryDirectory() as o:
                    t = run(build, k, cli, o)
                if t is not None:
                    best[which] = min(best[which], t)
    if math.isfinite(best["a"]) and math.isfinite(best["b"]):
        r = best["b"] / best["a"]
        ratios.append(r)
        print(f"{k:<16}{best['a']:>12.4f}{best['b']:>12.4f}{r:>8.3f}", flush=True)
    else:
        print(f"{k:<16}{best['a']:>12}{best['b']:>12}  failed", flush=True)
if ratios:
    g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"geomean B/A over {len(ratios)} kernels: {g:.3f}; B slower by more than 5 %: "
          f"{sum(r > 1.05 for r in ratios)}")
