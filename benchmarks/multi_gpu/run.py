"""Launches split between GPUs, on a GPU machine: checks `appy exec --devices N` against
NumPy running the same source (sizes that do not divide evenly, sizes smaller than the
number of GPUs), then times each kernel on 1..N GPUs with the data resident.

    python3 run.py --runner PATH/appy --bundles DIR [--gpus 2] [--out DIR]

Times are `appy exec --bench` medians (wall clock of whole calls until every GPU has
finished; the first call, which moves the data to the GPUs, is not timed)."""
import argparse, json, os, subprocess, sys, tempfile, types
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def reference(func, args):
    """Runs kernels.py's `func` with NumPy (the `appy` decorator as the identity)."""
    stub = types.ModuleType("appy")
    stub.jit = lambda f=None, **k: f if f is not None else (lambda g: g)
    sys.modules["appy"] = stub
    ns = {}
    exec(compile(open(os.path.join(HERE, "kernels.py")).read(), "kernels.py", "exec"), ns)
    return ns[func](*args)


def arg_flags(d, names, args):
    """`--arg` flags for `args`, arrays saved as .npy files in directory `d`."""
    cli = []
    for n, a in zip(names, args):
        if isinstance(a, np.ndarray):
            np.save(os.path.join(d, n + ".npy"), a)
            cli += ["--arg", f"{n}=@{os.path.join(d, n + '.npy')}"]
        else:
            cli += ["--arg", f"{n}={a}"]
    return cli


def exec_appy(runner, bundle, names, args, devices, extra=()):
    with tempfile.TemporaryDirectory() as d:
        cli = arg_flags(d, names, args)
        out = os.path.join(d, "out")
        r = subprocess.run([runner, "exec", bundle, *cli, "--devices", str(devices), "--out", out, "--stats", *extra],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"appy exec failed: {r.stderr}")
        got = [np.load(os.path.join(out, n + ".npy")) if isinstance(a, np.ndarray) else a for n, a in zip(names, args)]
        ret = os.path.join(out, "return.npy")
        if os.path.exists(ret):
            got.append(np.load(ret))
        return got, r.stdout


CASES = {
    "jacobi_2d": (["A", "B", "T"], lambda n, rng: [rng.random((n, 37)), rng.random((n, 37)), 5],
                  [1, 2, 3, 5, 8, 101]),
    "triad": (["a", "b", "c", "s"], lambda n, rng: [rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32),
                                                     rng.random(n, dtype=np.float32), 1.5], [1, 2, 3, 1023, 1025, 100003]),
    "matmul_loops": (["A", "B", "C"], lambda n, rng: [rng.random((n, 19), dtype=np.float32), rng.random((19, 23), dtype=np.float32),
                                                      rng.random((n, 23), dtype=np.float32)], [1, 2, 3, 31, 257]),
    # Reductions: a shared scalar and atomics into an array, accumulated per GPU and
    # combined (within reassociation).
    "dot_hist": (["a", "b", "h"], lambda n, rng: [rng.random(n), rng.random(n), rng.random(16)], [1, 2, 1025, 3000017]),
}

BIG = {
    # 16384^2 float64 Jacobi-2d, 20 steps (2 arrays of 2 GiB), as JAX's peer runs it.
    "jacobi_2d": (lambda rng: [rng.random((16384, 16384)), rng.random((16384, 16384)), 20], 5),
    # 2^29 float32 triad (3 arrays of 2 GiB).
    "triad": (lambda rng: [rng.random(1 << 29, dtype=np.float32), rng.random(1 << 29, dtype=np.float32),
                           rng.random(1 << 29, dtype=np.float32), 1.5], 20),
    # 8192^2 float32 matrix product written as loops (compute-bound).
    "matmul_loops": (lambda rng: [rng.random((8192, 8192), dtype=np.float32), rng.random((8192, 8192), dtype=np.float32),
                                  np.zeros((8192, 8192), np.float32)], 5),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    ap.add_argument("--bundles", required=True)
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--out", default=".")
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--split-on", help="check the split on these GPUs too, e.g. `0,0` (two ranges on GPU 0)")
    a = ap.parse_args()
    rng = np.random.default_rng(7)
    res = {"checks": [], "times_ms": {}}
    bad = 0
    for func, (names, make, sizes) in CASES.items():
        bundle = os.path.join(a.bundles, func + ".json")
        for n in sizes:
            args = make(n, rng)
            want = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
            r = reference(func, want)
            if r is not None:
                want.append(np.asarray(r))
            for devices in list(range(1, a.gpus + 1)) + ([a.split_on] if a.split_on else []):
                got, out = exec_appy(a.runner, bundle, names, args, devices)
                if len(got) != len(want):
                    raise RuntimeError(f"{func}: {len(got)} results, NumPy gives {len(want)}")
                # Relative to the magnitude (reductions of millions of terms reassociate).
                err = max(float(np.max(np.abs(g - w) / np.maximum(1.0, np.abs(w)))) if isinstance(g, np.ndarray) and g.size else 0.0
                          for g, w in zip(got, want))
                tol = 1e-4 if any(isinstance(x, np.ndarray) and x.dtype == np.float32 for x in args) else 1e-12
                if func == "dot_hist":
                    tol = 1e-9  # sums of up to 3M terms in another order than NumPy's
                ok = err <= tol
                bad += not ok
                stats = out.strip().splitlines()[0] if out.strip() else ""
                res["checks"].append({"func": func, "n": n, "devices": devices, "max_rel_err": err, "ok": ok, "stats": stats})
                print(f"check {func} n={n} devices={devices}: max rel err {err:.3g} {'ok' if ok else 'WRONG'} | {stats}", flush=True)
    if not a.skip_big:
        for func, (make, reps) in BIG.items():
            names = CASES[func][0]
            args = make(rng)
            with tempfile.TemporaryDirectory() as d:
                cli = arg_flags(d, names, args)
                for devices in range(1, a.gpus + 1):
                    r = subprocess.run([a.runner, "exec", os.path.join(a.bundles, func + ".json"), *cli, "--devices", str(devices),
                                        "--bench", str(reps), "--stats"], capture_output=True, text=True)
                    line = [l for l in r.stdout.splitlines() if l.startswith("bench:")]
                    if r.returncode != 0 or not line:
                        print(f"bench {func} devices={devices} failed: {r.stderr[-2000:]}", flush=True)
                        bad += 1
                        continue
                    med = float(line[0].split()[2])
                    res["times_ms"][f"{func}_{devices}gpu"] = med
                    print(f"bench {func} on {devices} GPU(s): median {med:.3f} ms | {[l for l in r.stdout.splitlines() if l.startswith('stats:')]}", flush=True)
            del args
        for func in BIG:
            one = res["times_ms"].get(f"{func}_1gpu")
            for devices in range(2, a.gpus + 1):
                many = res["times_ms"].get(f"{func}_{devices}gpu")
                if one and many:
                    res["times_ms"][f"{func}_speedup_{devices}gpu"] = one / many
    print(json.dumps(res["times_ms"], indent=1))
    json.dump(res, open(os.path.join(a.out, "appy_xn.json"), "w"), indent=1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
