#!/usr/bin/env python3
"""The compile side of a first GPU call, per NPBench kernel, without a GPU: the first
candidate alone (what the first call waits for), the other autotuning candidates on the
background compilers, all candidates one after another (what a first call waited for
before), and a later process's load of the whole bundle from the cache.

    cargo build --release -p appy-runtime --example first_call
    python3 benchmarks/npbench/first_call.py [KERNEL ...]"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import adapters  # noqa: E402

exe = os.path.join(ROOT, "target", "release", "examples", "first_call")
ks = sys.argv[1:] or list(adapters.KERNELS)
print(f"{'kernel':<15} {'first ms':>9} {'rest ms':>9} {'serial ms':>10} {'cache hit ms':>13}")
firsts = []
for k in ks:
    p = subprocess.run([exe, os.path.join(HERE, "kernels.py"), k, adapters.signature(k)], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{k} failed:\n{p.stderr}")
    f = dict(x.split("=") for x in p.stdout.split() if "=" in x)
    firsts.append(float(f["first"]))
    print(f"{k:<15} {f['first']:>9} {f['rest']:>9} {f['tuned_serial']:>10} {f['cache_hit']:>13}")
firsts.sort()
print(f"median first: {firsts[len(firsts) // 2]:.1f} ms over {len(firsts)} kernels")
