#!/usr/bin/env python3
"""Turns the harness's anchors.json files into the NPBench table of BENCHMARKS.md and a
roofline plot.

    python3 benchmarks/npbench/report.py RUN.json [RUN.json ...] [--plot out.png]

Later files override earlier ones kernel by kernel (each run measures all its
frameworks in one process on one GPU). Peers: torch, torch_compile, jax, cupy. A second
table lists every framework's first call (`first_run_ms`: for appy, compile +
autotuning + one run, from an empty compile cache)."""
import argparse
import json
import math

PEERS = ["torch", "torch_compile", "jax", "cupy"]
ORDER = ["azimint_naive", "cholesky", "covariance", "fdtd_2d", "floyd_warshall", "gemm", "gemver", "gesummv", "go_fast",
         "gramschmidt", "hdiff", "heat_3d", "jacobi_2d", "softmax", "spmv", "symm", "syr2k", "syrk", "trisolv", "trmm"]
MEMORY_BOUND = ["gesummv", "gemver", "go_fast", "jacobi_2d", "heat_3d", "hdiff", "fdtd_2d", "softmax", "spmv"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--plot")
    a = ap.parse_args()
    kernels, ceilings, source = {}, {}, {}
    for path in a.runs:
        d = json.load(open(path))
        for k, v in d["kernels"].items():
            kernels[k] = v
            ceilings[k] = d["ceilings"]
            source[k] = path.split("/")[-1]
    print("| kernel | preset | appy ms | torch ms | torch.compile ms | JAX ms | CuPy ms | best peer | best peer / appy | appy roofline |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ratios, points = [], []
    for k in ORDER:
        if k not in kernels:
            print(f"| {k} | | not run | | | | | | | |")
            continue
        v = kernels[k]
        fw = v["frameworks"]

        def cell(f):
            x = fw.get(f, {})
            if x.get("status") != "ok":
                return {"timeout": "TO", "error": "ERR"}.get(x.get("status"), x.get("status", "–") or "–")
            mark = "" if x.get("correct") else " BAD"
            star = "*" if x.get("n_runs", 10) < 10 else ""
            return f"{x['median_ms']:.4g}{star}{mark}"

        ok = lambda f: fw.get(f, {}).get("status") == "ok" and fw[f].get("correct")
        best = min((f for f in PEERS if ok(f)), key=lambda f: fw[f]["median_ms"], default=None)
        appy = fw.get("appy_rs", {})
        ratio = ""
        roof = ""
        if ok("appy_rs") and best:
            r = fw[best]["median_ms"] / appy["median_ms"]
            ratios.append(r)
            ratio = f"{r:.2f}"
            t = appy["median_ms"] / 1e3
            c = ceilings[k]
            if v.get("bytes"):
                frac = v["bytes"] / t / (c["d2d_copy_GBps"] * 1e9)
                roof = f"{v['bytes'] / t / 1e9:.0f} GB/s = {100 * frac:.0f}% of copy"
                points.append((k, "mem", frac))
            elif v.get("flops"):
                frac = v["flops"] / t / (c["fp64_matmul_TFLOPs"] * 1e12)
                roof = f"{v['flops'] / t / 1e9:.0f} GFLOP/s = {100 * frac:.1f}% of fp64 matmul"
                points.append((k, "flop", frac))
        elif not ok("appy_rs"):
            ratio = "—"
        print(f"| {k} | {v['preset']} | {cell('appy_rs')} | {cell('torch')} | {cell('torch_compile')} | {cell('jax')} | {cell('cupy')} | "
              f"{best or '—'} | {ratio} | {roof} |")
    if ratios:
        g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"\ngeomean(best peer time / appy time) over {len(ratios)} kernels: {g:.2f}")
        slow = [k for k in ORDER if k in kernels and kernels[k]['frameworks'].get('appy_rs', {}).get('status') == 'ok'
                and any(kernels[k]['frameworks'].get(f, {}).get('status') == 'ok' and kernels[k]['frameworks'][f].get('correct')
                        and kernels[k]['frameworks'][f]['median_ms'] * 2 < kernels[k]['frameworks']['appy_rs']['median_ms'] for f in PEERS)]
        print(f"more than 2x slower than the best peer: {', '.join(slow) or 'none'}")
    # First calls: compile (+ autotune for appy) + one run, per framework.
    print("\n| kernel | appy first call ms | torch.compile | JAX | CuPy | torch (eager) |")
    print("|---|---|---|---|---|---|")
    for k in ORDER:
        if k not in kernels:
            continue
        fw = kernels[k]["frameworks"]

        def first(f):
            x = fw.get(f, {})
            return f"{x['first_run_ms']:.4g}" if x.get("status") == "ok" and "first_run_ms" in x else "–"

        print(f"| {k} | {first('appy_rs')} | {first('torch_compile')} | {first('jax')} | {first('cupy')} | {first('torch')} |")
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(9, 4))
        names = [p[0] for p in points]
        vals = [100 * p[2] for p in points]
        colors = ["tab:blue" if p[1] == "mem" else "tab:orange" for p in points]
        ax.bar(names, vals, color=colors)
        ax.axhline(100, color="gray", lw=0.8)
        ax.axhline(85, color="tab:blue", lw=0.8, ls="--")
        ax.set_ylabel("% of roofline (copy BW / fp64 matmul)")
        ax.set_title("appy on NPBench (H200): blue = memory-bound (% of d2d copy BW), orange = % of fp64 matmul")
        plt.xticks(rotation=60, ha="right")
        plt.tight_layout()
        plt.savefig(a.plot, dpi=110)


if __name__ == "__main__":
    main()
