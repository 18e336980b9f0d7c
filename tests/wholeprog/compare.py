"""Running one generated program under CPython + NumPy (the oracle) and under appy, and
comparing the results: the logic shared by the fuzzer (`fuzz.py`), the shrinker
(`shrink.py`) and the regression replay (`crates/appy-python/tests/test_wholeprog.py`).

Comparison (README "Tolerance"): integers and bools exactly, dtypes of arrays exactly,
floats within ``atol + rtol * max(|want|, |got|, scale)`` where ``scale`` is the largest
finite magnitude of that array's expected values and of the inputs (reductions may be
reassociated: their error is relative to the magnitudes summed), float64 rtol 1e-9 atol
1e-11, float32 rtol 2e-4 atol 2e-5. For calls that compute in float32, the program is
run a second time by the oracle on float64 copies of the inputs, and the oracle's own
rounding error ``|want - want64|`` (four times it) widens the tolerance: a float32 sum's
order matters as much as its precision. NaN must match NaN, infinities exactly.
"""
import importlib.util
import json
import re
import sys
import warnings

import numpy as np

F64_TOL = (1e-9, 1e-11)
F32_TOL = (2e-4, 2e-5)
INT_RANGE = 50     # integer inputs are in -50..50
FLOAT_RANGE = 2.0  # float inputs are in -2..2


class OracleError(Exception):
    """The program raised under CPython + NumPy (it is discarded and regenerated)."""


def with_meta(text, **changes):
    """The text with its meta line updated."""
    meta = meta_of(text)
    meta.update(changes)
    line = "# wholeprog-meta: " + json.dumps(meta, separators=(",", ":"))
    return "\n".join(line if ln.startswith("# wholeprog-meta: ") else ln for ln in text.splitlines()) + "\n"


def meta_of(text):
    for line in text.splitlines():
        if line.startswith("# wholeprog-meta: "):
            return json.loads(line[len("# wholeprog-meta: "):])
    raise ValueError("no wholeprog-meta line")


class _Last(int):
    """The literal index ``-1`` of the source (allowed by `Strict`)."""


LAST = _Last(-1)
_LIT_LAST = re.compile(r"(\[|, )-1(?=\]|,)")


class Strict(np.ndarray):
    """An array that refuses negative integer indices computed at run time (appy does
    not wrap them): the oracle runs on these, so that a generator bug is an oracle
    error (the program is discarded), never a false mismatch. Literal ``-1`` indices of
    the source are passed as `LAST`."""

    @staticmethod
    def _check(idx):
        for c in (idx if isinstance(idx, tuple) else (idx,)):
            if isinstance(c, (int, np.integer)) and not isinstance(c, _Last) and c < 0:
                raise IndexError(f"negative index {c} computed at run time")

    def __getitem__(self, idx):
        self._check(idx)
        return super().__getitem__(idx)

    def __setitem__(self, idx, v):
        self._check(idx)
        super().__setitem__(idx, v)


def plain_function(text, filename="<wholeprog>"):
    """The program's function as plain Python (its ``@appy.jit`` line blanked; literal
    ``-1`` indices spelled `LAST` for `Strict` arrays)."""
    lines = []
    for ln in text.splitlines():
        if ln.strip() in ("@appy.jit", "import numpy as np"):
            ln = ""
        elif not ln.lstrip().startswith("#"):
            ln = _LIT_LAST.sub(lambda mo: mo.group(1) + "_LAST", ln)
        lines.append(ln)
    ns = {"__name__": "wholeprog_plain", "_LAST": LAST, "np": _StrictNumpy()}
    exec(compile("\n".join(lines) + "\n", filename, "exec"), ns)
    return ns["f"]


class _StrictNumpy:
    """``np`` for the oracle: NumPy, whose allocations return `Strict` arrays.
    ``EMPTY_FILL``: when set, what ``np.empty``/``np.empty_like`` arrays hold (two runs
    with different fills tell whether a program reads memory it never wrote)."""
    _ALLOC = {"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like"}
    EMPTY_FILL = None

    def __getattr__(self, name):
        f = getattr(np, name)
        if name in self._ALLOC:
            def alloc(*a, **kw):
                r = f(*a, **kw)
                if name.startswith("empty") and _StrictNumpy.EMPTY_FILL is not None:
                    r.fill(_StrictNumpy.EMPTY_FILL)
                return r.view(Strict)
            return alloc
        if callable(f) and not isinstance(f, type):
            def scalar_results(*a, **kw):
                r = f(*a, **kw)
                return r.view(np.ndarray)[()] if isinstance(r, Strict) and r.ndim == 0 else r
            return scalar_results
        return f


def reads_uninitialised(text, seed=0):
    """Whether the oracle's results depend on what ``np.empty`` arrays hold."""
    meta = meta_of(text)
    fn = plain_function(text)
    runs = []
    try:
        for fill in (0, 77):
            _StrictNumpy.EMPTY_FILL = fill
            runs.append(oracle_all(fn, meta, text, seed))
    except OracleError:
        return False
    finally:
        _StrictNumpy.EMPTY_FILL = None
    for (_, wa1, wr1, _), (_, wa2, wr2, _) in zip(*runs):
        o1, o2 = outputs(wa1, wr1, meta), outputs(wa2, wr2, meta)
        if len(o1) != len(o2):
            return True
        for (_, v1), (_, v2) in zip(o1, o2):
            a1, a2 = np.asarray(v1), np.asarray(v2)
            if a1.shape != a2.shape or not np.array_equal(a1, a2, equal_nan=a1.dtype.kind == "f"):
                return True
    return False


def diff_kinds(diffs):
    """The kinds of differences ('dtype', 'shape', 'values', 'raised', ...) in ``diffs``."""
    kinds = set()
    for d in diffs:
        for k, key in (("dtype differs", "dtype"), ("shape differs", "shape"), ("arity differs", "arity"),
                       ("kind differs", "kind"), ("appy raised", "raised"), (" differ; ", "values"),
                       ("thread failed", "raised"), ("refused in", "refused")):
            if k in d:
                kinds.add(key)
    return kinds


def strict(args):
    return [a.view(Strict) if isinstance(a, np.ndarray) else a for a in args]


def plain(v):
    """Strict arrays (and tuples of them) back to ndarrays."""
    if isinstance(v, tuple):
        return tuple(plain(x) for x in v)
    if isinstance(v, Strict):
        return v.view(np.ndarray)[()] if v.ndim == 0 else v.view(np.ndarray)
    return v


def load_module(path, modname):
    """Imports the program file so that ``@appy.jit`` compiles it (appy reads the file)."""
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    return mod


def make_args(meta, sig, seed):
    """The arguments of one call: random arrays (never all zeros; integers negative too)
    of the signature's dtypes and sizes, and the scalars ``n, m, k, x``."""
    rng = np.random.default_rng(seed)
    n, m = sig["n"], sig["m"]
    args = []
    for p in meta["params"]:
        dt = np.dtype(sig["dtypes"][p["group"]])
        shape = tuple(n if d == "n" else m for d in p["dims"])
        if p["kind"] == "i":
            a = rng.integers(-INT_RANGE, INT_RANGE + 1, size=shape).astype(dt)
        else:
            a = rng.uniform(-FLOAT_RANGE, FLOAT_RANGE, size=shape)
            if a.size > 3:  # a few exact small values (ties in comparisons, floor, ...)
                a.flat[rng.integers(0, a.size, 3)] = [0.5, -1.0, 0.0]
            a = a.astype(dt)
        if a.size and not a.any():
            a.flat[0] = -7
        args.append(a)
    xk, xv = sig["x"]
    x = {"float": float, "f32": np.float32, "f64": np.float64, "int": int}[xk](xv)
    return args + [n, m, sig["k"], x]


def copy_args(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def upcast(args):
    """float64 copies of float32 inputs (for the oracle's own rounding error)."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray) and a.dtype == np.float32:
            out.append(a.astype(np.float64))
        elif isinstance(a, np.float32):
            out.append(float(a))
        else:
            out.append(a.copy() if isinstance(a, np.ndarray) else a)
    return out


def run_oracle(fn, args):
    """Runs the plain function; an exception (or an overflow) is an `OracleError`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(over="raise", divide="ignore", invalid="ignore", under="ignore"):
            try:
                return plain(fn(*strict(args)))
            except Exception as e:  # noqa: BLE001 - any exception discards the program
                raise OracleError(f"{type(e).__name__}: {e}") from None


def outputs(args, ret, meta):
    """Named values to compare: every array argument, then the return value(s)."""
    out = [(p["name"], a) for p, a in zip(meta["params"], args)]
    if isinstance(ret, tuple):
        out += [(f"return[{i}]", r) for i, r in enumerate(ret)]
    elif ret is not None:
        out.append(("return", ret))
    return out


def uses_f32(text, args):
    return "float32" in text or any(
        (isinstance(a, np.ndarray) and a.dtype == np.float32) or isinstance(a, np.float32) for a in args)


def _is_float(v):
    return np.asarray(v).dtype.kind in "fc"


def compare_value(name, want, got, tol, scale, ref=None):
    """None when ``got`` matches ``want``, else a description of the first difference."""
    if isinstance(want, np.ndarray) != isinstance(got, np.ndarray) and (
            isinstance(want, np.ndarray) or isinstance(got, np.ndarray)):
        if not (np.ndim(want) == 0 and np.ndim(got) == 0):
            return f"{name}: kind differs: want {type(want).__name__}, got {type(got).__name__}"
    w, g = np.asarray(want), np.asarray(got)
    if isinstance(want, np.ndarray) and w.dtype != g.dtype:
        return f"{name}: dtype differs: want {w.dtype}, got {g.dtype}"
    if w.shape != g.shape:
        return f"{name}: shape differs: want {w.shape}, got {g.shape}"
    if w.size == 0:
        return None
    if not _is_float(w) and not _is_float(g):
        bad = np.flatnonzero((w != g).ravel())
        if bad.size:
            i = bad[0]
            return (f"{name}: {bad.size} of {w.size} differ; first at {np.unravel_index(i, w.shape)}: "
                    f"want {w.ravel()[i]!r}, got {g.ravel()[i]!r}")
        return None
    rtol, atol = tol
    wf, gf = w.astype(np.float64).ravel(), g.astype(np.float64).ravel()
    nw, ng = np.isnan(wf), np.isnan(gf)
    fin = np.isfinite(wf) & np.isfinite(gf)
    bad = (nw != ng) | (~fin & ~nw & ~ng & (wf != gf))
    allow = atol + rtol * np.maximum(np.maximum(np.abs(wf), np.abs(gf)), scale)
    if ref is not None:
        r = np.asarray(ref)
        if r.shape == w.shape:
            rf = r.astype(np.float64).ravel()
            with np.errstate(invalid="ignore", over="ignore"):
                widen = np.where(np.isfinite(rf) & np.isfinite(wf), 4 * np.abs(wf - rf), 0.0)
            allow = allow + widen
    with np.errstate(invalid="ignore", over="ignore"):
        bad |= fin & (np.abs(wf - gf) > allow)
    idx = np.flatnonzero(bad)
    if idx.size:
        i = idx[0]
        return (f"{name}: {idx.size} of {w.size} differ; first at {np.unravel_index(i, w.shape)}: "
                f"want {wf[i]!r}, got {gf[i]!r} (allowed {allow[i]:.3g})")
    return None


def _scale(v):
    a = np.asarray(v)
    if a.size == 0 or a.dtype.kind not in "fiub":
        return 0.0
    a = a.astype(np.float64)
    a = a[np.isfinite(a)]
    return float(np.abs(a).max()) if a.size else 0.0


def compare_call(meta, text, args_in, want_args, want_ret, got_args, got_ret, ref=None):
    """Differences (strings) between the oracle's and appy's results of one call."""
    tol = F32_TOL if uses_f32(text, args_in) else F64_TOL
    w = outputs(want_args, want_ret, meta)
    g = outputs(got_args, got_ret, meta)
    r = outputs(*ref, meta) if ref is not None else None
    if len(w) != len(g):
        return [f"return arity differs: want {len(w) - len(meta['params'])} values, got {len(g) - len(meta['params'])}"]
    in_scale = max([_scale(a) for a in args_in] + [0.0])
    diffs = []
    for i, ((name, wv), (_, gv)) in enumerate(zip(w, g)):
        rv = r[i][1] if r is not None and len(r) == len(w) else None
        d = compare_value(name, wv, gv, tol, max(in_scale, _scale(wv)), rv)
        if d:
            diffs.append(d)
    return diffs


def oracle_all(fn, meta, text, seed):
    """Runs the oracle for every signature: [(args, want_args, want_ret, ref)]."""
    out = []
    seed = meta.get("data_seed", seed)
    for si, sig in enumerate(meta["sigs"]):
        args = make_args(meta, sig, seed * 7919 + si)
        want_args = copy_args(args)
        want_ret = run_oracle(fn, want_args)
        ref = None
        if uses_f32(text, args):
            ref_args = upcast(args)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    with np.errstate(all="ignore"):
                        ref_ret = plain(fn(*strict(ref_args)))
                ref = (ref_args, ref_ret)
            except Exception:  # noqa: BLE001 - the reference is only a hint
                ref = None
        out.append((args, want_args, want_ret, ref))
    return out


_NUM = re.compile(r"\b\d+\b")
_TICK = re.compile(r"`[^`]*`")


def refusal_class(msg):
    """A short class for a compile refusal: the diagnostic's first `error:` line with
    names and numbers blanked."""
    for line in str(msg).splitlines():
        if "error:" in line:
            s = line.split("error:", 1)[1].strip()
            return _NUM.sub("N", _TICK.sub("`_`", s))[:120]
    return str(msg).splitlines()[0][:120] if str(msg) else "?"


def call_appy(fn, args):
    """Calls the compiled function on copies: (args after the call, result)."""
    got_args = copy_args(args)
    ret = fn(*got_args)
    return got_args, ret


def check_calls(fn, meta, text, cases, order):
    """Calls appy for the signatures in ``order`` and compares. Returns (diffs, refused),
    where refused is a refusal class or None. appy exceptions other than CompileError,
    and internal compiler errors, are reported as differences."""
    import appy
    diffs = []
    for si in order:
        args, want_args, want_ret, ref = cases[si]
        try:
            got_args, got_ret = call_appy(fn, args)
        except appy.CompileError as e:
            if "internal compiler error" in str(e):
                # Not a refusal of the program: the compiler failed on a valid one.
                diffs.append(f"sig {si}: internal compiler error: {refusal_class(e)}")
                continue
            return diffs, refusal_class(e)
        except Exception as e:  # noqa: BLE001 - reported as a difference
            diffs.append(f"sig {si}: appy raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            continue
        for d in compare_call(meta, text, args, want_args, want_ret, got_args, got_ret, ref):
            diffs.append(f"sig {si} {describe_sig(meta['sigs'][si])}: {d}")
    return diffs, None


def describe_sig(sig):
    dts = ",".join(f"{g}={d.replace('float', 'f').replace('int', 'i')}" for g, d in sorted(sig["dtypes"].items()))
    return f"[{dts} n={sig['n']} m={sig['m']} k={sig['k']} x={sig['x'][0]}:{sig['x'][1]}]"
