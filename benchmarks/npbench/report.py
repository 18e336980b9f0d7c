#!/usr/bin/env python3
"""Turns the harness's anchors.json files into the NPBench table of BENCHMARKS.md and a
roofline plot.

    python3 benchmarks/npbench/report.py RUN.json [RUN.json ...] [--plot out.png]

Later files override earlier ones kernel by kernel (each run measures all its
frameworks in one process on one GPU). Peers: torch, torch_compile, jax, cupy. A second
table lists every framework's first call (`first_run_ms`: for appy, the compile of its
first candidate + one run, from an empty compile cache), with appy's median and the
kernels where appy's first call is not below both JAX's and torch.compile's;
`--warm RUN.json` adds appy's first calls of a second process on the same cache.

    python3 benchmarks/npbench/report.py RUN.json [--warm WARM.json] [--plot out.png]"""
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
    ap.add_argument("--warm", help="a run of appy_rs on the compile cache the first run filled")
    a = ap.parse_args()
    warm = json.load(open(a.warm))["kernels"] if a.warm else {}
    kernels, ceilings, source = {}, {}, {}
    for path in a.runs:
        d = json.load(open(path))
        for k, v in d["kernels"].items():
            kernels[k] = v
            ceilings[k] = d["ceilings"]
            source[k] = path.split("/")[-1]
    print("| kernel | preset | appy ms | torch ms | torch.compile ms | JAX ms | CuPy ms | best peer | best peer / appy | appy roofline |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ratios, points, ok_ratio = [], [], {}
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
            ok_ratio[k] = r
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
        below = [k for k in ORDER if k in kernels and ok_ratio.get(k, 1.0) < 1.0]
        print(f"below 1.0: {len(below)} ({', '.join(f'{k} {ok_ratio[k]:.2f}' for k in below) or 'none'})")
    # First calls: compile (+ autotune for appy) + one run, per framework.
    print("\n| kernel | appy first call ms | torch.compile | JAX | CuPy | torch (eager) |" + (" appy, warm cache |" if warm else ""))
    print("|---|---|---|---|---|---|" + ("---|" if warm else ""))
    firsts, warms, behind = [], [], []
    for k in ORDER:
        if k not in kernels:
            continue
        fw = kernels[k]["frameworks"]

        def ms(f, fws=fw):
            x = fws.get(f, {})
            return x["first_run_ms"] if x.get("status") == "ok" and "first_run_ms" in x else None

        def first(f, fws=fw):
            x = ms(f, fws)
            return "–" if x is None else f"{x:.4g}"

        mine = ms("appy_rs")
        if mine is not None:
            firsts.append(mine)
            if any(ms(f) is not None and ms(f) <= mine for f in ("jax", "torch_compile")):
                behind.append(k)
        w = ""
        if warm:
            w = first("appy_rs", warm.get(k, {}).get("frameworks", {}))
            if w != "–":
                warms.append(float(w))
            w = f" {w} |"
        print(f"| {k} | {first('appy_rs')} | {first('torch_compile')} | {first('jax')} | {first('cupy')} | {first('torch')} |{w}")

    def median(v):
        v = sorted(v)
        return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2

    if firsts:
        print(f"\nappy first call: median {median(firsts):.1f} ms over {len(firsts)} kernels"
              + (f"; warm cache, new process: median {median(warms):.1f} ms" if warms else ""))
        print(f"first call not below both JAX's and torch.compile's: {', '.join(behind) or 'none'}")
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
