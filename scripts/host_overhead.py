#!/usr/bin/env python3
"""The GPU runner's host overhead: per-call and per-launch times of host-loop-heavy
kernels on small sizes, where the work is mostly the host program's (interpretation,
residency bookkeeping, argument marshalling) and the launches themselves.

NPBench's time-stepped kernels jacobi_2d, heat_3d and fdtd_2d run hundreds of host-loop
iterations with two to four launches each; jacobi_1d (examples/jacobi_1d.py) launches
two 1-block kernels per step. Two steps, because the GPU machine has no compiler:

  python3 scripts/host_overhead.py compile [--appy target/release/appy] --out DIR
      compiles the kernels to bundles with `appy compile` (default vector length);
  python3 scripts/host_overhead.py run --runner RUNNER --dir DIR [--steps 500] [--reps 50]
      on the GPU machine: runs each bundle with `RUNNER exec --bench REPS --stats` on
      random inputs (data resident on the device, CUDA events around each call) and
      prints the best and median time per call, the launches per call and the time per
      launch; `--json FILE` writes them.

To compare two versions of the runner, compile with each version's `appy` into its own
directory (bundles are versioned) and run each directory with its own runner; the PTX of
the kernels is the same (scripts/bundles.py compare), so the difference is host time."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NPBENCH = os.path.join(ROOT, "benchmarks", "npbench", "kernels.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import gpu_cases  # noqa: E402

# name: (file, function, signature, inputs(rng, steps) -> [(param, value)])
CASES = {
    "jacobi_2d": (NPBENCH, "jacobi_2d", "int,f64[:,:],f64[:,:]",
                  lambda rng, t: [t, rng.random((16, 16)), rng.random((16, 16))]),
    "heat_3d": (NPBENCH, "heat_3d", "int,f64[:,:,:],f64[:,:,:]",
                lambda rng, t: [t, rng.random((8, 8, 8)), rng.random((8, 8, 8))]),
    "fdtd_2d": (NPBENCH, "fdtd_2d", "int,f64[:,:],f64[:,:],f64[:,:],f64[:]",
                lambda rng, t: [t, rng.random((16, 20)), rng.random((16, 20)), rng.random((16, 20)), rng.random(t)]),
    "jacobi_1d": (os.path.join(ROOT, "examples", "jacobi_1d.py"), "jacobi_1d", "f64[:],f64[:],int,int",
                  lambda rng, t: [rng.random(64), rng.random(64), 64, t]),
}


def compile_all(a):
    os.makedirs(a.out, exist_ok=True)
    for name, (f, func, sig, _) in CASES.items():
        out = os.path.join(a.out, name + ".json")
        p = subprocess.run([a.appy, "compile", f, "--func", func, "--signature", sig, "-o", out], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"compile {name} failed: {p.stderr}")
        print(f"compiled {name} -> {out}")


def run_all(a):
    import numpy as np
    rng = np.random.default_rng(0)
    res = {}
    print(f"{'kernel':<10} {'best ms':>9} {'median ms':>10} {'launches':>9} {'us/launch':>10}")
    for name, (_, _, _, gen) in CASES.items():
        bundle = os.path.join(a.dir, name + ".json")
        params = json.load(open(bundle))["params"]
        vals = gen(rng, a.steps)
        with tempfile.TemporaryDirectory() as d:
            p = gpu_cases.run_bundle(a.runner, bundle, params, vals, d, extra=("--bench", str(a.reps), "--stats"))
        if p.returncode != 0:
            print(f"FAIL {name}: {p.stderr.strip()}")
            continue
        lines = p.stdout.splitlines()
        stats = [l for l in lines if l.startswith("stats:")][0]
        launches = int(stats.split("launches=")[1].split()[0])
        best, med, _ = map(float, [l for l in lines if l.startswith("bench:")][0].split()[1:])
        per = best * 1e3 / max(launches, 1)
        res[name] = {"best_ms": best, "median_ms": med, "launches": launches, "us_per_launch": per, "steps": a.steps}
        print(f"{name:<10} {best:9.3f} {med:10.3f} {launches:9d} {per:10.2f}")
    if a.json:
        json.dump(res, open(a.json, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("compile")
    c.add_argument("--appy", default=os.path.join(ROOT, "target", "release", "appy"))
    c.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--runner", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--steps", type=int, default=500)
    r.add_argument("--reps", type=int, default=50)
    r.add_argument("--json")
    a = ap.parse_args()
    compile_all(a) if a.mode == "compile" else run_all(a)


if __name__ == "__main__":
    main()
