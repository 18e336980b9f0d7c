"""The `# test:` cases written above jitted functions (tests/cases/*.py, examples/*.py),
for the GPU checks of scripts/gpu_cases.py; the same format as tests/src/cases.rs (see
its documentation):

    # test: a:f64[n] b:f64[n,m]@0..1 s:float k:int=n-1 p:indptr[n]@0..6 | n=1,7 m=3 ulp=2 ref=ld
"""
import os
import re

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ["tests/cases", "examples"]
DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "bool": np.bool_,
          "f16": np.float16, "i8": np.int8, "i16": np.int16, "u8": np.uint8, "u16": np.uint16,
          "u32": np.uint32, "u64": np.uint64, "c64": np.complex64, "c128": np.complex128}
# NumPy integer scalar parameters (`alpha:u8@1..9`).
INT_SCALARS = {k: v for k, v in DTYPES.items() if np.issubdtype(v, np.integer)}


def evaluate(expr, env):
    """An integer expression of size variables (+, -, * and integers)."""
    if not re.fullmatch(r"[A-Za-z0-9_+\-* ]+", expr):
        raise ValueError(f"bad size expression {expr!r}")
    return int(eval(expr, {"__builtins__": {}}, dict(env)))


class Spec:
    def __init__(self, text):
        params, _, rest = text.partition("|")
        self.params = []
        for p in params.split():
            name, ty = p.split(":", 1)
            self.params.append((name, ty))
        self.sizes, self.ulp, self.tol, self.mvl, self.refld = [], 0, None, 256, False
        rtol = atol = None
        for s in rest.split():
            k, v = s.split("=", 1)
            if k == "ulp":
                self.ulp = int(v)
            elif k == "rtol":
                rtol = float(v)
            elif k == "atol":
                atol = float(v)
            elif k == "mvl":
                self.mvl = int(v)
            elif k == "ref" and v == "ld":
                self.refld = True
            else:
                self.sizes.append((k, [int(x) for x in v.split(",")]))
        if rtol is not None or atol is not None:
            self.tol = (rtol or 0.0, atol or 0.0)

    def cases(self):
        return max([len(v) for _, v in self.sizes] or [1])

    def env(self, k):
        return {n: v[k % len(v)] for n, v in self.sizes}

    def signature(self):
        """The `appy compile --signature` of the parameters."""
        out = []
        for _, ty in self.params:
            ty = ty.split("@")[0]
            if ty.startswith("indptr["):
                out.append("i64[:]")
            elif "[" in ty:
                base, dims = ty.split("[", 1)
                out.append(f"{base}[{','.join([':'] * len(dims.rstrip(']').split(',')))}]")
            elif ty.startswith("int="):
                out.append("int")
            elif ty.startswith("bool="):
                out.append("bool")
            elif ty in INT_SCALARS:
                out.append(ty)
            else:
                out.append({"float": "float", "f32": "f32", "float32": "f32", "f64": "f64", "float64": "f64"}[ty])
        return ",".join(out)

    def args(self, k, rng):
        env = self.env(k)
        out = []
        for _, ty in self.params:
            ty, _, rng_text = ty.partition("@")
            lo = hi = None
            if rng_text:
                lo, hi = (float(x) for x in rng_text.split(".."))
            if ty.startswith("indptr["):
                n = max(0, evaluate(ty[7:-1], env))
                lo, hi = (0, 5) if lo is None else (int(lo), int(hi))
                out.append(np.concatenate([[0], np.cumsum(rng.integers(lo, hi, max(n - 1, 0)))]).astype(np.int64)[:n])
            elif "[" in ty:
                base, dims = ty.split("[", 1)
                shape = tuple(max(0, evaluate(d, env)) for d in dims.rstrip("]").split(","))
                dt = DTYPES[base]
                if dt is np.bool_:
                    out.append(rng.random(shape) < 0.5)
                elif np.issubdtype(dt, np.complexfloating):
                    # The real and imaginary parts, each in [lo, hi).
                    lo, hi = (-1.0, 1.0) if lo is None else (lo, hi)
                    re, im = (rng.random(shape) * (hi - lo) + lo for _ in range(2))
                    out.append((re + 1j * im).astype(dt))
                elif np.issubdtype(dt, np.floating):
                    lo, hi = (-1.0, 1.0) if lo is None else (lo, hi)
                    out.append((rng.random(shape) * (hi - lo) + lo).astype(dt))
                else:
                    lo, hi = (0, 10) if lo is None else (lo, hi)
                    out.append(rng.integers(int(lo), int(hi), shape).astype(dt))
            elif ty.startswith("int="):
                out.append(evaluate(ty[4:], env))
            elif ty.startswith("bool="):
                out.append(evaluate(ty[5:], env) != 0)
            elif ty in INT_SCALARS:
                lo, hi = (0, 10) if lo is None else (lo, hi)
                out.append(INT_SCALARS[ty](rng.integers(int(lo), int(hi))))
            else:
                lo, hi = (-1.0, 1.0) if lo is None else (lo, hi)
                v = float(rng.random() * (hi - lo) + lo)
                out.append(np.float32(v) if ty in ("f32", "float32") else (np.float64(v) if ty in ("f64", "float64") else v))
        return out


def all_specs():
    """(file path, function, spec index, Spec) of every `# test:` line."""
    out = []
    for d in DIRS:
        for f in sorted(os.listdir(os.path.join(ROOT, d))):
            if not f.endswith(".py"):
                continue
            path = os.path.join(ROOT, d, f)
            pending = []
            for line in open(path):
                t = line.strip()
                if t.startswith("# test:"):
                    pending.append(Spec(t[len("# test:"):].strip()))
                elif t.startswith("def "):
                    name = re.match(r"def\s+(\w+)", t).group(1)
                    for s in pending:
                        out.append((path, name, sum(1 for o in out if o[0] == path and o[1] == name), s))
                    pending = []
    return out


def ulps(a, b, f32):
    """Distance in units in the last place (float32 or float64); values of opposite
    signs count as far apart."""
    a = np.asarray(a, dtype=np.float32 if f32 else np.float64)
    b = np.asarray(b, dtype=np.float32 if f32 else np.float64)
    it = np.int32 if f32 else np.int64
    with np.errstate(over="ignore"):
        ka = np.abs(a.view(it).astype(np.int64) & (0x7FFFFFFF if f32 else 0x7FFFFFFFFFFFFFFF))
        kb = np.abs(b.view(it).astype(np.int64) & (0x7FFFFFFF if f32 else 0x7FFFFFFFFFFFFFFF))
        d = np.abs(ka - kb)
    same_sign = np.signbit(a) == np.signbit(b)
    d = np.where(same_sign | ((a == 0) & (b == 0)), d, ka + kb)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return np.where(same, 0, d)


def compare(spec, got, want):
    """None if `got` matches `want` for the spec's comparison, else a description."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape and got.size != want.size:
        return f"shape {got.shape}, expected {want.shape}"
    if spec.ulp and got.dtype.kind == "f":
        d = ulps(got.ravel(), want.ravel().astype(got.dtype), got.dtype == np.float32)
        worst = int(max(d.max(), 0)) if d.size else 0
        if worst <= spec.ulp:
            return None
        at = np.unravel_index(int(np.argmax(d)), got.shape)
        g, w = got[at], want.astype(got.dtype)[at]
        return f"{worst} ulp apart (at most {spec.ulp}) at index {tuple(int(i) for i in at)}: {g!r} vs {w!r}"
    if spec.tol:
        rtol, atol = spec.tol
    elif got.dtype in (np.float32, np.complex64) or want.dtype in (np.float32, np.complex64):
        rtol, atol = 2e-4, 2e-5
    else:
        rtol, atol = 1e-9, 1e-11
    if got.dtype == np.bool_ or want.dtype == np.bool_:
        return None if np.array_equal(got.astype(bool), want.astype(bool)) else "booleans differ"
    wide = np.complex128 if got.dtype.kind == "c" or want.dtype.kind == "c" else np.float64
    ok = np.allclose(got.astype(wide), want.astype(wide), rtol=rtol, atol=atol, equal_nan=True)
    if ok:
        return None
    return f"max |diff| {np.nanmax(np.abs(got.astype(wide) - want.astype(wide))):.3e}"
