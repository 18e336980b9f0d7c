#!/usr/bin/env python3
"""Differential testing on the GPU: random APPy programs (the shapes of
tests/tests/suite/diff.rs: element-wise, reductions, stencils, row-wise vector loops,
negative steps) compiled to bundles here and run on the GPU against CPython + NumPy.

  python3 scripts/gpu_diff.py compile --count 200 [--dir .dev/gpudiff]   # here
  python3 scripts/gpu_diff.py check --runner .dev/gpu/appy-runner [--dir .dev/gpudiff]   # GPU machine
"""
import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAD = "import numpy as np\nimport appy\n\n\n@appy.jit\n"


def expr(r, d):
    if d == 0 or r.random() < 0.3:
        return r.choice(["a[i]", "b[i]", "c", "float(i % 7)", f"{r.randint(-30, 30) / 10:.2f}", str(r.randint(1, 4))])
    l, rr = expr(r, d - 1), expr(r, d - 1)
    k = r.randint(0, 8)
    if k <= 1:
        return f"({l} {r.choice(['+', '-', '*'])} {rr})"
    if k == 2:
        return f"({l} / (1.5 + abs({rr})))"
    if k == 3:
        return f"{r.choice(['max', 'min'])}({l}, {rr})"
    if k == 4:
        return f"np.exp(min({l}, 3.0))"
    if k == 5:
        return f"np.sqrt(abs({l}))"
    if k == 6:
        return f"np.tanh({l})"
    if k == 7:
        return f"({l} if {rr} > 0.0 else {expr(r, d - 1)})"
    return f"(({l}) // (2.0 + abs({rr})))"


def program(r):
    kind = r.choice(["elementwise", "reduction", "stencil", "rowwise", "reverse"])
    f32 = kind in ("elementwise", "stencil", "reverse") and r.random() < 0.5
    if kind == "elementwise":
        simd = " simd" if r.random() < 0.5 else ""
        src = f"{HEAD}def k(a, b, out, c, N):\n    #pragma parallel for{simd}\n    for i in range(N):\n        out[i] = {expr(r, 3)}\n"
    elif kind == "reduction":
        op = r.choice(["+", "max", "min"])
        init, upd = {"+": ("0.0", "s += {}"), "max": ("float('-inf')", "s = max(s, {})"), "min": ("float('inf')", "s = min(s, {})")}[op]
        src = f"{HEAD}def k(a, b, out, c, N):\n    s = {init}\n    #pragma parallel for shared(s)\n    for i in range(N):\n        {upd.format(expr(r, 2))}\n    return s\n"
    elif kind == "stencil":
        w = [r.randint(-5, 4) for _ in range(3)]
        src = f"{HEAD}def k(a, b, out, c, N):\n    #pragma parallel for simd\n    for i in range(1, N - 1):\n        out[i] = {w[0]} * a[i - 1] + {w[1]} * a[i] + {w[2]} * a[i + 1] + c\n"
    elif kind == "rowwise":
        body = expr(r, 2).replace("a[i]", "m[r, i]").replace("b[i]", "m[r, (i + 1) % N]")
        op = r.choice(["+", "max"])
        init, upd = ("0.0", f"t += {body}") if op == "+" else ("float('-inf')", f"t = max(t, {body})")
        src = (f"{HEAD}def k(m, out, c, R, N):\n    #pragma parallel for\n    for r in range(R):\n        t = {init}\n"
               f"        #pragma simd\n        for i in range(N):\n            {upd}\n        out[r] = t\n")
    else:
        src = f"{HEAD}def k(a, b, out, c, N):\n    #pragma parallel for\n    for i in range(N - 1, -1, -2):\n        out[i] = {expr(r, 2)}\n"
    t = "f32" if f32 else "f64"
    sig = f"{t}[:,:],{t}[:],float,int,int" if kind == "rowwise" else f"{t}[:],{t}[:],{t}[:],float,int"
    return kind, f32, src, sig


def compile_all(a):
    os.makedirs(a.dir, exist_ok=True)
    r = random.Random(a.seed)
    meta = []
    for n in range(a.count):
        kind, f32, src, sig = program(r)
        path = os.path.join(a.dir, f"p{n}.py")
        open(path, "w").write(src)
        out = os.path.join(a.dir, f"p{n}.json")
        p = subprocess.run([a.appy, "compile", path, "--func", "k", "--signature", sig, "-o", out], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"compile failed for p{n}:\n{src}\n{p.stderr}")
            sys.exit(1)
        meta.append({"n": n, "kind": kind, "f32": f32})
    json.dump(meta, open(os.path.join(a.dir, "programs.json"), "w"))
    print(f"compiled {a.count} programs into {a.dir}")


def check_all(a):
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
    meta = json.load(open(os.path.join(a.dir, "programs.json")))
    ok = bad = 0
    for m in meta:
        n = m["n"]
        src_path = os.path.join(a.dir, f"p{n}.py")
        spec = importlib.util.spec_from_file_location(f"p{n}", src_path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        dt = np.float32 if m["f32"] else np.float64
        rng = np.random.default_rng(n)
        size = int(rng.choice([0, 1, 2, 5, 255, 257, 1000, 4099]))
        c = float(rng.uniform(-1, 1))
        if m["kind"] == "rowwise":
            rows = size % 13 + 1
            vals = [(rng.random((rows, size)) * 4 - 2).astype(dt), (rng.random(rows) * 2 - 1).astype(dt), c, rows, size]
            names = ["m", "out", "c", "R", "N"]
        else:
            vals = [(rng.random(size) * 4 - 2).astype(dt), (rng.random(size) * 4 - 2).astype(dt), (rng.random(size) * 2 - 1).astype(dt), c, size]
            names = ["a", "b", "out", "c", "N"]
        want = [v.copy() if isinstance(v, np.ndarray) else v for v in vals]
        with np.errstate(all="ignore"):
            want_ret = mod.k(*want)
        with tempfile.TemporaryDirectory() as d:
            cmd = [a.runner, "exec", os.path.join(a.dir, f"p{n}.json"), "--out", d]
            for name, v in zip(names, vals):
                if isinstance(v, np.ndarray):
                    np.save(os.path.join(d, "in_" + name + ".npy"), v)
                    cmd += ["--arg", f"{name}=@{os.path.join(d, 'in_' + name + '.npy')}"]
                else:
                    cmd += ["--arg", f"{name}={v!r}"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            msgs = []
            if p.returncode != 0:
                msgs.append(p.stderr.strip())
            else:
                tol = dict(rtol=2e-4, atol=2e-5) if m["f32"] else dict(rtol=1e-9, atol=1e-11)
                for name, v, w in zip(names, vals, want):
                    if isinstance(v, np.ndarray):
                        got = np.load(os.path.join(d, name + ".npy"))
                        if not np.allclose(got, w, equal_nan=True, **tol):
                            msgs.append(f"{name}: max |diff| {np.nanmax(np.abs(got - w)):.3e}")
                if want_ret is not None:
                    got = np.load(os.path.join(d, "return.npy"))
                    if not np.allclose(got, want_ret, rtol=1e-8, atol=1e-9, equal_nan=True):
                        msgs.append(f"return {got} vs {want_ret}")
            if msgs:
                bad += 1
                print(f"FAIL p{n} ({m['kind']}, size {size}): {'; '.join(msgs)}\n{open(src_path).read()}")
            else:
                ok += 1
    print(f"{ok} passed, {bad} failed")
    return bad == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["compile", "check"])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", default=os.path.join(ROOT, ".dev", "gpudiff"))
    ap.add_argument("--appy", default=os.path.join(ROOT, "target", "release", "appy"))
    ap.add_argument("--runner", default=os.path.join(ROOT, ".dev", "gpu", "appy-runner"))
    a = ap.parse_args()
    if a.mode == "compile":
        compile_all(a)
    else:
        sys.exit(0 if check_all(a) else 1)


if __name__ == "__main__":
    main()
