"""The float64 op sequence of appy's erfc expansion (crates/appy-passes/src/
expand_erfc.rs), emulated op by op in NumPy with an exact fma, and its error against
mpmath and against CPython's math.erfc (the C library's); and the reference table of
the CPU test (tests/tests/suite/erfc.rs).

Run through `python3 scripts/fit_erfc.py --emulate` (or `--table FILE`), which
passes the fitted constants. For x >= 0.46875 the expansion uses only IEEE
operations (+ - * /, fma, compare, select, integer and bit operations), so the
emulation is bit for bit what the GPU and the CPU compute. Below, erfc(x) =
1 - erf(x) with libdevice's erf (documented at <= 2 ulp): stood in for by the
correctly rounded erf (mpmath), and by it moved 2 ulp in the direction that hurts.
"""
import math
from fractions import Fraction

import mpmath as mp
import numpy as np

X0 = 0.46875
CLAMP = 27.5
BOUNDS = (0.875, 1.75, 4.0)  # the intervals' upper ends but the last's
MAGIC = 6755399441055744.0  # 1.5 * 2^52: adding it rounds to an integer

# ---------------------------------------------------------------------------
# Exact fma on float64 arrays: Boldo & Melquiond's emulation (error-free product
# and sum, the low parts added with rounding to odd, one final rounding to nearest),
# exact without underflow; elements near underflow or overflow go through Fraction.


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a):
    c = 134217729.0 * a
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a, b):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _add_odd(a, b):
    s, e = _two_sum(a, b)
    even = (s.view(np.int64) & 1) == 0
    return np.where((e != 0) & even, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)


def _fma_exact(a, b, c):
    try:
        return float(Fraction(a) * Fraction(b) + Fraction(c))
    except OverflowError:
        return a * b + c


def fma(a, b, c):
    a, b, c = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float), np.asarray(c, float))
    with np.errstate(all="ignore"):
        uh, ul = _two_prod(a, b)
        th, tl = _two_sum(c, uh)
        r = th + _add_odd(tl, ul)
        finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
        big, tiny = 2.0**960, 2.0**-960
        slow = finite & (a != 0) & (b != 0)
        slow &= (np.abs(uh) < tiny) | (np.abs(c) < tiny) | (np.abs(r) < tiny) | (np.abs(a) > big) | (np.abs(b) > big) | (np.abs(uh) > big)
        r = np.where(finite, r, a * b + c)
    r = r.copy()
    for i in np.flatnonzero(slow):
        r.flat[i] = _fma_exact(float(a.flat[i]), float(b.flat[i]), float(c.flat[i]))
    return r


def _fma_selftest(n=20000):
    rng = np.random.default_rng(7)
    a = rng.uniform(-2, 2, n) * 2.0 ** rng.integers(-40, 40, n)
    b = rng.uniform(-2, 2, n) * 2.0 ** rng.integers(-40, 40, n)
    c = -(a * b) * (1 + rng.integers(-3, 4, n) * 2.0**-52)  # heavy cancellation
    c[: n // 2] = rng.uniform(-2, 2, n // 2) * 2.0 ** rng.integers(-90, 40, n // 2)
    a[:50] *= 2.0**-1000  # the Fraction path
    got = fma(a, b, c)
    want = np.array([_fma_exact(float(x), float(y), float(z)) for x, y, z in zip(a, b, c)])
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"fma emulation wrong at {bad[:5]}"


# ---------------------------------------------------------------------------
# The op sequence, in the order of expand_erfc's code and with its roundings.


def expansion(x, c, erf):
    """erfc(x) for a float64 array as appy's expansion computes it; `c` the fitted
    constants (fit_erfc.fit_everything), `erf(x)` libdevice's erf."""
    x = np.asarray(x, float)
    ks = c["intervals"]
    with np.errstate(all="ignore"):
        small = 1.0 - erf(x)
        xc = np.where(x > CLAMP, CLAMP, x)  # NaN stays NaN
        rx = 1.0 / xc
        conds = [xc < b for b in BOUNDS]

        def pick(name, j=None):
            vals = [k[name] if j is None else k[name][j] for k in ks]
            out = np.full(xc.shape, vals[-1])
            for cond, v in reversed(list(zip(conds, vals[:-1]))):
                out = np.where(cond, v, out)
            return out

        # H(x) - c_hi = c_lo + h1 t + t^2 P(t)/Q(t) =: w0
        u = np.where(conds[-1], xc, rx)
        t = u - pick("m")
        n = len(ks[0]["p"])
        P = pick("p", n - 1)
        for j in range(n - 2, -1, -1):
            P = fma(P, t, pick("p", j))
        Q = pick("q", n - 2)
        for j in range(n - 3, -1, -1):
            Q = fma(Q, t, pick("q", j))
        Q = fma(Q, t, 1.0)
        y = fma(t, P / Q, pick("h1"))
        w0 = fma(t, y, pick("c_lo"))
        ch = pick("c_hi")
        # -x^2 = -hi - lo = k ln2 + r + dl
        hi = xc * xc
        lo = fma(xc, xc, -hi)
        a = -hi
        s = fma(a, c["INV_LN2"], MAGIC)
        kf = s - MAGIC
        r = fma(kf, -c["LN2_HI"], a)
        dl = fma(kf, -c["LN2_LO"], -lo)
        # exp(r) = 1 + r + B, B = r^2 E(r)
        e = c["exp"][-1]
        for cf in c["exp"][-2::-1]:
            e = fma(e, r, cf)
        B = (r * r) * e
        S = r + B
        # N = (1 + r + B)(c_hi + w0) = c_hi + c_hi r + [c_hi B + w0 (1 + S)] = nh + nl
        A = fma(ch, B, fma(w0, S, w0))
        t1 = ch * r
        e1 = fma(ch, r, -t1)
        uu, eu = _two_sum(t1, A)
        nh = ch + uu
        e2 = (ch - nh) + uu
        nl = fma(nh, dl, (e1 + eu) + e2)  # and N exp(dl) = nh + nl
        # (nh + nl) / x
        q = nh * rx
        rem = fma(-q, xc, nh)
        yk = fma(rem + nl, rx, q)
        # * 2^k, in two steps (2^k may be below the normal range)
        k = s.view(np.int64) - np.float64(MAGIC).view(np.int64)
        k1 = k >> 1
        k2 = k - k1
        f1 = ((k1 + 1023) << 52).view(np.float64)
        f2 = ((k2 + 1023) << 52).view(np.float64)
        big = (yk * f1) * f2
        return np.where(x < X0, small, big)


# ---------------------------------------------------------------------------
# References and error measures.

mp.mp.prec = 120


def mp_erfc(v):
    """mpmath's erfc, also where its series test overflows (|x| > 40: 0 or 2)."""
    if mp.isfinite(v) and abs(v) > 40:
        return mp.mpf(0) if v > 0 else mp.mpf(2)
    return mp.erfc(v)


def cr(f, args):
    return np.array([float(f(mp.mpf(float(a)))) for a in args])


def erfc_ref(x):
    """erfc(x) correctly rounded, its float64 spacing there (the smaller one just
    under a power of two; 2^-1074 for subnormals), and (true - rounded) / spacing."""
    hi = np.empty_like(x)
    sp = np.empty_like(x)
    frac = np.empty_like(x)
    for i, v in enumerate(x):
        t = mp_erfc(mp.mpf(float(v)))
        hi[i] = float(t)
        if t == 0 or not mp.isfinite(t):
            sp[i], frac[i] = 2.0**-1074, 0.0
            continue
        ex = int(mp.floor(mp.log(abs(t), 2)))
        sp[i] = 2.0 ** max(ex - 52, -1074)
        frac[i] = float((t - mp.mpf(hi[i])) / mp.mpf(sp[i]))
    return hi, sp, frac


def err_ulps(y, ref):
    hi, sp, frac = ref
    with np.errstate(all="ignore"):
        return (y - hi) / sp - frac


def int_ulps(a, b):
    """Distance in float64 units, as the test harness measures it (scripts/cases.py)."""
    ka = np.abs(a.view(np.int64) & 0x7FFFFFFFFFFFFFFF)
    kb = np.abs(b.view(np.int64) & 0x7FFFFFFFFFFFFFFF)
    d = np.abs(ka - kb)
    d = np.where(np.signbit(a) == np.signbit(b), d, ka + kb)
    return np.where(a == b, 0, d)


def bump(v, k, toward):
    """v moved k float64 steps in the direction of the sign of `toward`."""
    out = v.copy()
    for _ in range(k):
        out = np.nextafter(out, np.where(toward > 0, np.inf, -np.inf))
    return out


def edges(k=200):
    """Every float64 within k of the ends of the intervals and of the regions."""
    out = []
    for e in (X0, *BOUNDS, 26.5, 26.55, 27.2, CLAMP):
        lo = hi = np.float64(e)
        out.append(lo)
        for _ in range(k):
            lo, hi = np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf)
            out += [lo, hi]
    return np.array(out)


def point_sets(n):
    rng = np.random.default_rng(2024)
    e = edges()
    return [
        (f"{n} random points in [-6, 27]", rng.uniform(-6, 27, n)),
        (f"{n} points evenly over [0.4, 6]", np.linspace(0.4, 6, n)),
        (f"{e.size} points within 200 ulp of the ends of the intervals", e),
    ]


SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, -5e-324, 1e-300, -6.0, -7.0, -1e300,
            26.55, 27.2, 27.22, 27.23, 27.5, 28.0, 1e300]


def report(label, e, d):
    print(f"  {label}: vs mpmath max {e.max():.3f} ulp, 99.99% {np.quantile(e, 0.9999):.3f}, "
          f"mean {e.mean():.3f}; vs math.erfc max {d.max()} ulp, >2 ulp at {int((d > 2).sum())} points",
          flush=True)


def run(c, n):
    _fma_selftest()
    print("\nfma emulation: checked against exact arithmetic")
    sp = np.array(SPECIALS)
    got = expansion(sp, c, lambda a: np.array([math.erf(v) for v in a]))
    want = cr(mp_erfc, sp)
    print("special values: " + ", ".join(f"erfc({s!r}) = {g!r}" for s, g in zip(SPECIALS, got)))
    off = [(s, g, w) for s, g, w in zip(SPECIALS, got, want) if not (g == w or (np.isnan(g) and np.isnan(w)))]
    print("  not correctly rounded:", off)
    for name, x in point_sets(n):
        print(f"\n{name}:", flush=True)
        ref = erfc_ref(x)
        glibc = np.array([math.erfc(v) for v in x])
        erf_cr = cr(mp.erf, x)
        y = expansion(x, c, lambda a: erf_cr)
        e = np.abs(err_ulps(y, ref))
        d = int_ulps(y, glibc)
        big = x >= X0
        report(f"x >= {X0} (the expansion; bit for bit the GPU's)", e[big], d[big])
        wi = int(np.argmax(np.where(big, e, -1)))
        print(f"    worst at x = {x[wi]!r}: {y[wi]!r}, correctly rounded {ref[0][wi]!r}")
        small = ~big
        if small.any():
            report(f"x < {X0}, 1 - erf(x), erf correctly rounded", e[small], d[small])
            sgn = np.where(err_ulps(y, ref) >= 0, 1.0, -1.0)
            y2 = expansion(x, c, lambda a: np.clip(bump(erf_cr, 2, -sgn), -1.0, 1.0))
            report(f"x < {X0}, 1 - erf(x), erf 2 ulp off the worse way", np.abs(err_ulps(y2, ref))[small],
                   int_ulps(y2, glibc)[small])
        g = np.abs(err_ulps(glibc, ref))
        dcr = int_ulps(ref[0], glibc)
        print(f"  (math.erfc itself: vs mpmath max {g.max():.3f} ulp, 99.99% {np.quantile(g, 0.9999):.3f}; "
              f"the correctly rounded erfc is >2 ulp from it at {int((dcr > 2).sum())} points)")


def write_table(path, n=3000):
    """The CPU test's points (specials, the ends of the intervals, random points) with
    erfc correctly rounded, as `x erfc(x)` lines of float64 bit patterns in hex."""
    rng = np.random.default_rng(99)
    x = np.concatenate([
        np.array(SPECIALS),
        edges(40),
        rng.uniform(-6, X0, n // 6),
        rng.uniform(X0, 6, n // 2),
        rng.uniform(6, CLAMP, n // 6),
        np.exp(rng.uniform(math.log(1e-12), math.log(X0), n // 12)),
        rng.uniform(-6, 10.5, n // 5).astype(np.float32).astype(np.float64),  # float32 arguments
    ])
    ref = cr(mp_erfc, x)
    with open(path, "w") as f:
        f.write("# x and erfc(x) correctly rounded (mpmath), as float64 bit patterns;\n")
        f.write("# written by `python3 scripts/fit_erfc.py --table tests/data/erfc.txt`.\n")
        for a, b in zip(x, ref):
            f.write(f"{np.float64(a).view(np.uint64):016x} {np.float64(b).view(np.uint64):016x}\n")
    print(f"wrote {x.size} points to {path}")
