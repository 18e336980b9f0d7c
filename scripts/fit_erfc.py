#!/usr/bin/env python3
"""Fits the constants of appy's float64 erfc expansion (crates/appy-passes/src/
expand_erfc.rs) and prints them, with their fit errors, as the Rust tables.

For x >= X0 = 0.46875 (below it, erfc(x) = 1 - erf(x)) the expansion computes

    erfc(x) = 2^k * exp(r) * exp(dl) * H(x) / x,      H(x) = x * erfc(x) * exp(x^2)

- x^2 = hi + lo exactly (lo by an fma); -hi = k*LN2_HI + r exactly (k the integer
  nearest -hi/ln 2, r by an fma, |r| <= 0.3466); dl = -lo - k*LN2_LO is tiny
  (< 2^-43), so exp(dl) = 1 + dl. No libdevice exp is used: its 1 ulp would cost up
  to 1 ulp of the result, as it is the relative error of a factor.
- exp(r) = 1 + r + r^2 * E(r), E a polynomial of degree 10 fitted here (relative
  error of exp(r) below 2^-63); the products that matter are kept exact with fmas.
- H is smooth and varies little (0.30 to 0.564). On each of four intervals it is
  written around a centre m of a variable u (u = x on the first three, u = 1/x on
  the last) as

    H = c_hi + c_lo + h1*t + t^2 * P(t)/Q(t),    t = u - m,   Q(0) = 1,

  with c_hi + c_lo = H(m) (a double-double), h1 = dH/du(m), P and Q of degree 6.

The fits are this script's own: a weighted linear least-squares fit of P - g*Q (g
the target), iterated (Sanathanan-Koerner) and then reweighted towards the minimax
error (Lawson), in mpmath at 50 digits; Q's coefficients are then rounded to float64
and P refitted to the rounded Q, rounding its coefficients one at a time (lowest
first) and refitting the rest each time. The "fit error" printed is the relative
error with the ROUNDED float64 constants, evaluated exactly on a dense grid.

    python3 scripts/fit_erfc.py             # fit; print the errors and the Rust tables
    python3 scripts/fit_erfc.py --emulate   # also: the op sequence in float64 (exact
                                            # fma), against mpmath and math.erfc
    python3 scripts/fit_erfc.py --table F   # also: write the CPU test's reference
                                            # table (tests/data/erfc.txt)

Needs mpmath and NumPy (scripts/setup.sh installs them). The fit takes ~20 s, the
emulation a few minutes.
"""
import argparse
import math

import mpmath as mp

mp.mp.dps = 50

# Below X0, erfc(x) = 1 - erf(x) (erf(x) < 1/2, so erf's error counts at most half).
X0 = 0.46875
# (lower end, upper end, variable): the upper end of the last is where x is clamped
# (erfc(27.5) rounds to 0).
INTERVALS = [(0.46875, 0.875, "x"), (0.875, 1.75, "x"), (1.75, 4.0, "x"), (4.0, 27.5, "r")]
CLAMP = 27.5
DEG = 6
# exp(r) = 1 + r + r^2 E(r) on |r| <= R_MAX (ln 2 / 2 = 0.34657..., and rounding).
R_MAX = mp.mpf("0.3467")
E_DEG = 10


def H(x):
    """x * erfc(x) * exp(x^2), in mpmath."""
    return x * mp.erfc(x) * mp.exp(x * x)


def h_of(kind):
    """H as a function of the interval's variable u."""
    return H if kind == "x" else (lambda r: H(1 / r))


def dh(u, kind):
    """dH/du: H'(x) = erfcx(x) + x * (2x erfcx(x) - 2/sqrt(pi)); d/dr = -x^2 d/dx."""
    x = u if kind == "x" else 1 / u
    ex = mp.erfc(x) * mp.exp(x * x)
    d = ex + x * (2 * x * ex - 2 / mp.sqrt(mp.pi))
    return d if kind == "x" else -x * x * d


def centre(ulo, uhi, kind):
    """A float64 centre m where H(m) is near the harmonic mean of H at the ends (then
    |H/H(m) - 1|, which scales the rounding errors of the correction, is about equal
    at both ends) and where dH/du is closest to a float64 (h1 is then as good as a
    double-double: its rounding would otherwise cost up to 2^-55 of H)."""
    f = h_of(kind)
    target = 2 * f(ulo) * f(uhi) / (f(ulo) + f(uhi))
    a, b = ulo, uhi
    for _ in range(60):  # H is monotonic in u on every interval
        mid = (a + b) / 2
        if (f(mid) < target) == (f(ulo) < target):
            a = mid
        else:
            b = mid
    best = None
    for j in range(-200, 201):
        m = mp.mpf(float(a + j * (uhi - ulo) / 4000))
        d = dh(m, kind)
        e = abs(d - mp.mpf(float(d))) / abs(d)
        if best is None or e < best[0]:
            best = (e, m)
    return best[1]


def ratfit(g, w, n, d, npts, iters=24):
    """P/Q (P of degree n, Q of degree d, Q(0) = 1) in s on [-1, 1] minimising
    max |w(s) * (g(s) - P(s)/Q(s))| approximately: linearised weighted least squares
    on Chebyshev points, first Sanathanan-Koerner iterations (divide by the last Q),
    then Lawson's reweighting. Returns (P coefficients, Q coefficients), lowest first."""
    S = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / npts) for k in range(npts)]
    G = [g(s) for s in S]
    W = [w(s) for s in S]
    lw = [mp.mpf(1)] * npts
    qprev = [mp.mpf(1)] * npts
    best = None
    for it in range(iters):
        rows, rhs = [], []
        for i, s in enumerate(S):
            sc = W[i] * mp.sqrt(lw[i]) / qprev[i]
            rows.append([sc * s**k for k in range(n + 1)] + [-sc * G[i] * s**k for k in range(1, d + 1)])
            rhs.append(sc * G[i])
        sol = mp.qr_solve(mp.matrix(rows), mp.matrix(rhs))[0]
        p = [sol[k] for k in range(n + 1)]
        q = [mp.mpf(1)] + [sol[n + k] for k in range(1, d + 1)]
        qv = [mp.polyval(q[::-1], s) for s in S]
        err = [W[i] * (G[i] - mp.polyval(p[::-1], S[i]) / qv[i]) for i in range(npts)]
        worst = max(abs(e) for e in err)
        if best is None or worst < best[0]:
            best = (worst, p, q)
        if it >= iters // 3:
            tot = mp.fsum(lw[i] * abs(err[i]) for i in range(npts))
            lw = [lw[i] * abs(err[i]) / tot for i in range(npts)]
        qprev = qv
    return best[1], best[2]


def compose(c, a, b):
    """Coefficients (lowest first) in t of sum c_k s^k with s = a + b t."""
    out = [mp.mpf(0)] * len(c)
    power = [mp.mpf(1)]  # (a + b t)^k
    for k, ck in enumerate(c):
        for j, pj in enumerate(power):
            out[j] += ck * pj
        nxt = [mp.mpf(0)] * (len(power) + 1)
        for j, pj in enumerate(power):
            nxt[j] += pj * a
            nxt[j + 1] += pj * b
        power = nxt
    return out


def fit_interval(lo, hi, kind):
    """The interval's constants, rounded to float64: a dict with m, c_hi, c_lo, h1, p
    (P, lowest first), q (Q from degree 1, lowest first); and its domain in u."""
    f = h_of(kind)
    if kind == "x":
        ulo, uhi = mp.mpf(lo), mp.mpf(hi)
    else:
        ulo, uhi = 1 / mp.mpf(hi), 1 / mp.mpf(lo)
    # A little beyond the ends: 1/x is rounded.
    pad = (uhi - ulo) * mp.mpf(2) ** -20
    ulo, uhi = ulo - pad, uhi + pad
    m = centre(ulo, uhi, kind)
    h0, h1 = f(m), dh(m, kind)
    h2 = mp.diff(f, m, 2) / 2
    mid, half = (ulo + uhi) / 2, (uhi - ulo) / 2

    def t_of(s):
        return mid + half * s - m

    def g(s):
        t = t_of(s)
        if abs(t) < mp.mpf(10) ** -15:
            return h2
        return (f(m + t) - h0 - h1 * t) / t**2

    def w(s):
        t = t_of(s)
        return t * t / f(m + t)

    p, q = ratfit(g, w, DEG, DEG, 4 * 2 * DEG + 41)
    # s = (t - (mid - m)) / half
    a, b = -(mid - m) / half, 1 / half
    pt, qt = compose(p, a, b), compose(q, a, b)
    qt = [mp.mpf(float(x / qt[0])) for x in qt]
    pt = refit_p(g, w, t_of, qt, len(pt))
    c_hi = float(h0)
    k = dict(
        m=float(m),
        c_hi=c_hi,
        c_lo=float(h0 - c_hi),
        h1=float(h1),
        p=pt,
        q=[float(x) for x in qt[1:]],
    )
    return k, (ulo, uhi)


def refit_p(g, w, t_of, q, n, npts=201, lawson=12):
    """P (as float64s, lowest first) for the rounded denominator q: rounding every
    coefficient of a fitted P/Q to float64 would cost as much as 2^-56 of H, so Q is
    rounded first and P refitted against it (linear in P), then P's coefficients are
    rounded one at a time from the lowest, each time refitting the higher ones. Each
    fit is weighted least squares reweighted towards the minimax error (Lawson)."""
    S = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / npts) for k in range(npts)]
    T = [t_of(s) for s in S]
    G = [g(s) * mp.polyval(q[::-1], t) for s, t in zip(S, T)]  # P target
    W = [w(s) / mp.polyval(q[::-1], t) for s, t in zip(S, T)]
    fixed = []
    for k in range(n):
        free = n - k
        lw = [mp.mpf(1)] * npts
        for _ in range(lawson):
            rows, rhs = [], []
            for i, t in enumerate(T):
                sc = W[i] * mp.sqrt(lw[i])
                known = mp.fsum(c * t**j for j, c in enumerate(fixed))
                rows.append([sc * t ** (k + j) for j in range(free)])
                rhs.append(sc * (G[i] - known))
            sol = mp.qr_solve(mp.matrix(rows), mp.matrix(rhs))[0]
            err = [abs(rhs[i] - mp.fsum(rows[i][j] * sol[j] for j in range(free))) / mp.sqrt(lw[i]) for i in range(npts)]
            tot = mp.fsum(lw[i] * err[i] for i in range(npts))
            lw = [lw[i] * err[i] / tot for i in range(npts)]
        fixed.append(mp.mpf(float(sol[0])))
    return [float(x) for x in fixed]


def h_rounded(k, t):
    """H from the rounded constants, in exact (mpmath) arithmetic."""
    t = mp.mpf(t)
    P = mp.polyval([mp.mpf(x) for x in k["p"][::-1]], t)
    Q = mp.polyval([mp.mpf(x) for x in k["q"][::-1]] + [mp.mpf(1)], t)
    return mp.mpf(k["c_hi"]) + mp.mpf(k["c_lo"]) + mp.mpf(k["h1"]) * t + t * t * P / Q


def fit_error(k, dom, kind, npts=3000):
    f = h_of(kind)
    m = mp.mpf(k["m"])
    worst = mp.mpf(0)
    for i in range(npts + 1):
        u = dom[0] + (dom[1] - dom[0]) * i / npts
        worst = max(worst, abs(h_rounded(k, u - m) / f(u) - 1))
    return worst


def fit_exp():
    """E(r) = (exp(r) - 1 - r) / r^2 as float64 coefficients (lowest first), and the
    relative error of 1 + r + r^2 E(r) against exp(r) with them."""

    def g(s):
        r = R_MAX * s
        if abs(r) < mp.mpf(10) ** -12:
            return mp.mpf(1) / 2 + r / 6
        return (mp.exp(r) - 1 - r) / r**2

    def w(s):
        r = R_MAX * s
        return r * r / mp.exp(r)

    coeffs = refit_p(g, w, lambda s: R_MAX * s, [mp.mpf(1)], E_DEG + 1)
    worst = mp.mpf(0)
    for i in range(4001):
        r = -R_MAX + 2 * R_MAX * i / 4000
        e = 1 + r + r * r * mp.polyval([mp.mpf(c) for c in coeffs[::-1]], r)
        worst = max(worst, abs(e / mp.exp(r) - 1))
    return coeffs, worst


def constants():
    """ln 2 as LN2_HI + LN2_LO and 1/ln 2, as float64."""
    ln2 = mp.log(2)
    hi = float(ln2)
    return dict(LN2_HI=hi, LN2_LO=float(ln2 - mp.mpf(hi)), INV_LN2=float(1 / ln2))


def rust_table(ks):
    lines = []
    for (lo, hi, kind), k in zip(INTERVALS, ks):
        var = "x" if kind == "x" else "1/x"
        lines.append(f"    // [{lo}, {hi}), u = {var}")
        lines.append("    ErfcInterval {")
        for name in ("m", "c_hi", "c_lo", "h1"):
            lines.append(f"        {name}: {k[name]!r},")
        lines.append("        p: [" + ", ".join(repr(x) for x in k["p"]) + "],")
        lines.append("        q: [" + ", ".join(repr(x) for x in k["q"]) + "],")
        lines.append("    },")
    return "\n".join(lines)


def fit_all(verbose=True):
    """Each interval's constants, and log2 of each one's fit error."""
    ks, errs = [], []
    for lo, hi, kind in INTERVALS:
        k, dom = fit_interval(lo, hi, kind)
        e = fit_error(k, dom, kind)
        if verbose:
            print(f"[{lo}, {hi}) u={kind}: max relative error of H (rounded coefficients) "
                  f"{float(e):.3g} = 2^{float(mp.log(e, 2)):.1f}", flush=True)
        ks.append(k)
        errs.append(float(mp.log(e, 2)))
    return ks, errs


def fit_everything(verbose=True):
    """Every constant of the expansion: a dict with `intervals` (one dict each, see
    fit_interval), `exp` (E's coefficients) and the ln 2 constants."""
    ks, h_err = fit_all(verbose)
    e, err = fit_exp()
    if verbose:
        print(f"exp(r) = 1 + r + r^2 E(r), |r| <= {R_MAX}: max relative error (rounded coefficients) "
              f"{float(err):.3g} = 2^{float(mp.log(err, 2)):.1f}", flush=True)
    return dict(intervals=ks, exp=e, h_err=h_err, e_err=float(mp.log(err, 2)), **constants())


def rust_all(c):
    """The `generated` module of crates/appy-passes/src/expand_erfc.rs."""
    out = [
        "// Generated by `python3 scripts/fit_erfc.py`: max relative error of H with these float64",
        f"// constants 2^{max(c['h_err']):.1f}, of exp(r) 2^{c['e_err']:.1f}.",
        "#[rustfmt::skip]",
        "mod generated {",
        "    use super::ErfcInterval;",
        "    /// The intervals of x >= [`super::X0`] (ending at [`super::BOUNDS`] and",
        "    /// [`super::CLAMP`]) and their constants.",
        "    pub const ERFC_INTERVALS: [ErfcInterval; 4] = [",
    ]
    out += ["    " + line for line in rust_table(c["intervals"]).split("\n")]
    out.append("    ];")
    out.append(f"    /// `E(r) = (exp(r) - 1 - r) / r^2` on |r| <= {R_MAX}, lowest degree first.")
    out.append("    pub const EXP_POLY: [f64; %d] = [%s];" % (len(c["exp"]), ", ".join(repr(x) for x in c["exp"])))
    # The correctly rounded ln 2 and 1/ln 2 are Rust's constants (and clippy wants them).
    std = {"LN2_HI": (math.log(2), "std::f64::consts::LN_2"), "INV_LN2": (1 / math.log(2), "std::f64::consts::LOG2_E")}
    docs = {"LN2_HI": "ln 2, rounded.", "LN2_LO": "ln 2 - [`LN2_HI`], rounded.", "INV_LN2": "1 / ln 2, rounded."}
    for k in ("LN2_HI", "LN2_LO", "INV_LN2"):
        v = repr(c[k])
        if k in std and c[k] == std[k][0]:
            v = std[k][1]
        out.append(f"    /// {docs[k]}")
        out.append(f"    pub const {k}: f64 = {v};")
    out.append("}")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--emulate", action="store_true", help="also run the float64 emulation")
    ap.add_argument("--points", type=int, default=1_000_000, help="points per set for --emulate")
    ap.add_argument("--table", metavar="FILE", help="write the CPU test's reference table to FILE")
    args = ap.parse_args()
    c = fit_everything()
    print()
    print(rust_all(c))
    if args.emulate:
        import erfc_emulate

        erfc_emulate.run(c, args.points)
    if args.table:
        import erfc_emulate

        erfc_emulate.write_table(args.table)


if __name__ == "__main__":
    main()
