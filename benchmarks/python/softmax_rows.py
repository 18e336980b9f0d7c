#!/usr/bin/env python3
"""Softmax keeping a row in registers across its three statements (seed 002's code
generation with `appy-gpu-one-strip`: where a row is one strip of the vector length,
the row is loaded once for the maximum and reused by the sum and the output) against
the code that reads the row in each statement, torch and torch.compile, on
device-resident torch tensors:

    python3 benchmarks/python/softmax_rows.py [--reps 20]

appy runs in four child processes (the options are read when a function compiles),
each checking its results against torch's first:
* `plain`: the default code at the default vector length (APPY_AUTOTUNE=0);
* `tuned`: the autotuned default (its candidates include seed 002's code at the default
  vector length only);
* `vector`: seed 002's code forced at the default vector length (1024), APPY_AUTOTUNE=0:
  rows of 1024 are one strip there;
* `vector tuned`: seed 002's code in every autotuning candidate (APPY_GPU_VECTOR=1), so
  that rows of 512 find their strip at vector length 512.
Each figure is the median over 7 rounds of the mean time of `reps` calls, the device
synchronized after each call."""
import argparse
import json
import os
import sys

import numpy as np
import torch

import appy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import run_modes, timed  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "npbench"))
import kernels as npbench_kernels  # noqa: E402


# NPBench's softmax (rows of the last axis; benchmarks/npbench/kernels.py).
softmax4 = npbench_kernels.softmax


@appy.jit
def softmax2(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        m = np.max(x[i, :])
        s = np.sum(np.exp(x[i, :] - m))
        out[i, :] = np.exp(x[i, :] - m) / s


def ref(x):
    m = x.amax(dim=-1, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=-1, keepdim=True)


def cases(dev):
    """(name, appy function, args, torch reference, output index, bytes moved, peer)."""
    g = torch.Generator(device=dev).manual_seed(0)
    out = []
    x = torch.rand(64, 16, 512, 512, device=dev, generator=g) * 4 - 2
    out.append(("softmax 64×16×512×512 f32 (NPBench)", softmax4, [x, torch.zeros_like(x)], lambda: ref(x), 1, 8 * x.numel(),
                lambda: torch.softmax(x, dim=-1)))
    y = torch.rand(262144, 1024, device=dev, generator=g) * 4 - 2
    out.append(("softmax 262144×1024 f32", softmax2, [y, torch.zeros_like(y)], lambda: ref(y), 1, 8 * y.numel(),
                lambda: torch.softmax(y, dim=-1)))
    z = torch.rand(65536, 777, device=dev, generator=g) * 4 - 2
    out.append(("softmax 65536×777 f32", softmax2, [z, torch.zeros_like(z)], lambda: ref(z), 1, 8 * z.numel(),
                lambda: torch.softmax(z, dim=-1)))
    return out


def child(reps):
    dev = torch.device("cuda")
    res = {}
    for name, f, args, want, k, nbytes, _ in cases(dev):
        f(*args)
        torch.cuda.synchronize()
        w = want()
        err = ((args[k] - w).abs().max() / w.abs().max()).item()
        us = timed(lambda: f(*args), reps, torch.cuda.synchronize)
        res[name] = {"us": us, "gbs": nbytes / us / 1e3, "ok": err < 1e-5, "err": err}
        del w
    print(json.dumps(res))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child:
        child(a.reps)
        return
    envs = {
        "plain": {"APPY_AUTOTUNE": "0", "APPY_GPU_VECTOR": "0"},
        "tuned": {"APPY_AUTOTUNE": "1", "APPY_GPU_VECTOR": "0", "APPY_PRINT_AUTOTUNING": "1"},
        "vector": {"APPY_AUTOTUNE": "0", "APPY_GPU_VECTOR": "1"},
        "vector tuned": {"APPY_AUTOTUNE": "1", "APPY_GPU_VECTOR": "1", "APPY_PRINT_AUTOTUNING": "1"},
    }
    modes = run_modes(__file__, envs, a.reps)
    dev = torch.device("cuda")
    print(f"# {torch.cuda.get_device_name()}, {a.reps} calls per round")
    print("| kernel | plain µs | tuned µs | vector µs | vector tuned µs | torch µs | torch.compile µs | best appy GB/s | plain / best vector | torch.compile / best appy | check |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    cs = cases(dev)
    args_of = {c[0]: c[2][0] for c in cs}
    for name, _, _, _, _, nbytes, peer in cs:
        sync = torch.cuda.synchronize
        t_torch = timed(peer, a.reps, sync)
        xs = args_of[name]
        comp = torch.compile(ref)
        t_comp = timed(lambda: comp(xs), a.reps, sync)
        us = {m: modes[m][name]["us"] for m in modes}
        best = min(us.values())
        bestv = min(us["vector"], us["vector tuned"])
        bad = [f"{m} {modes[m][name]['err']:.1e}" for m in modes if not modes[m][name]["ok"]]
        ok = "ok" if not bad else "WRONG " + ", ".join(bad)
        print(f"| {name} | {us['plain']:.1f} | {us['tuned']:.1f} | {us['vector']:.1f} | {us['vector tuned']:.1f} | {t_torch:.1f} | {t_comp:.1f} | "
              f"{nbytes / best / 1e3:.0f} | {us['plain'] / bestv:.2f} | {t_comp / best:.2f} | {ok} |")


if __name__ == "__main__":
    main()
