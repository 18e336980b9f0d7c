#!/usr/bin/env python3
"""The polynomial of `appy-cpu-exp` (crates/appy-passes/src/cpu/exp.rs): coefficients
fitted here, and the pass's float64 exp, expm1 and tanh emulated op by op in NumPy.

    python3 scripts/fit_exp.py                 # fit: print the coefficients and their error
    python3 scripts/fit_exp.py check [-n N] [--fma] [--appy target/release/appy]
                                               # emulate the pass's ops on N random inputs
                                               # per range, against mpmath and NumPy

The kernel: e^r - 1 - r = r^2/2 + r^3 Q(r) for |r| <= ln2/2 (plus a margin), Q of
degree DEG. Q is fitted by the Remez exchange algorithm (weighted minimax: the error
relative to e^r - 1, which is the stricter of exp's and expm1's needs), with mpmath at
200 bits; its coefficients are then rounded to float64 one at a time, lowest degree
first, refitting the higher ones after each rounding so that they absorb the rounding
error. `fit` prints the float64 coefficients (as the Rust constants of the pass) and the
maximum error of r^2/2 + r^3 Q(r) with them, relative to e^r - 1, in units of 2^-53.

`check` runs the same straight-line sequence of float64 operations as the pass (no
fused multiply-add: the pass's polynomial carries `contract`, which lets LLVM fuse its
multiplications and additions where the host has FMA; `check --fma` emulates that, with
numba) on random inputs (uniform over exp's whole range and over [-20, 20], and
log-uniform in magnitude near 0) and special values, and prints the error in ulp
against mpmath (the maximum and the 99.99th percentile) and the largest difference in
ulp from NumPy's own np.exp, np.expm1 and np.tanh (the references are cached in /tmp;
the first run takes a few minutes). With `--appy`, the same inputs also go through the
code the CPU back end compiles (`appy run --device cpu`), whose errors are printed with
the number of results that differ from the emulation's.
"""
import argparse

import mpmath
import numpy as np

mp = mpmath.mp
mp.prec = 200

#: Degree of Q.
DEG = 9
#: The half-width of the fitted interval: ln2/2 and a margin (k = round(x/ln2) is
#: computed from a rounded product, which can put r a little beyond ln2/2).
R = 0.3466 + 0.0004


def target(r):
    """e^r - 1 - r - r^2/2, accurately near 0."""
    r = mpmath.mpf(r)
    if abs(r) < mpmath.mpf(2) ** -20:
        # Series: r^3/6 + r^4/24 + ...
        return sum(r ** k / mpmath.factorial(k) for k in range(3, 30))
    return mpmath.expm1(r) - r - r * r / 2


def weight(r):
    """Errors are measured relative to e^r - 1."""
    return 1 / abs(mpmath.expm1(r))


def remez(fixed, deg, iters=30):
    """The minimax Q (degree `deg`) with the coefficients `fixed` (lowest degrees) given:
    minimises max |w (r^3 Q(r) - target(r))| over [-R, R]. Returns the coefficients and
    the maximum weighted error."""
    nf = len(fixed)
    n = deg + 1 - nf  # free coefficients
    a, b = mpmath.mpf(-R), mpmath.mpf(R)

    def basis(r, j):
        return mpmath.mpf(r) ** (3 + j)

    def rest(r):
        return target(r) - sum(c * basis(r, j) for j, c in enumerate(fixed))

    # Initial reference: n + 1 points, Chebyshev-like, avoiding 0 (where the weighted
    # error vanishes).
    pts = [(a + b) / 2 - (b - a) / 2 * mpmath.cos(mpmath.pi * (i + 0.5) / (n + 1)) for i in range(n + 1)]
    grid = [a + (b - a) * i / 4000 for i in range(4001)]
    grid = [g for g in grid if g != 0]
    gw = [weight(g) for g in grid]
    grest = [rest(g) for g in grid]
    best = None
    for _ in range(iters):
        # Solve sum_j c_j basis(x_i, j) - rest(x_i) = (-1)^i E / w(x_i).
        M = mpmath.matrix(n + 1, n + 1)
        v = mpmath.matrix(n + 1, 1)
        for i, x in enumerate(pts):
            for j in range(n):
                M[i, j] = basis(x, nf + j)
            M[i, n] = (-1) ** i / weight(x)
            v[i] = rest(x)
        sol = mpmath.lu_solve(M, v)
        c = [sol[j] for j in range(n)]
        E = abs(sol[n])
        err = [w * (sum(cj * basis(g, nf + j) for j, cj in enumerate(c)) - t) for g, w, t in zip(grid, gw, grest)]
        emax = max(abs(e) for e in err)
        best = (c, emax)
        if emax <= E * (1 + mpmath.mpf(10) ** -6):
            break
        # New reference: the extremum of each run of one sign, then the n + 1 largest
        # keeping the alternation.
        ext = []
        i = 0
        while i < len(err):
            j = i
            k = i
            while j < len(err) and (err[j] > 0) == (err[i] > 0):
                if abs(err[j]) > abs(err[k]):
                    k = j
                j += 1
            ext.append(k)
            i = j
        while len(ext) > n + 1:
            # Drop the smallest extremum: alone at an end, else with its smaller
            # neighbour (which keeps the signs alternating).
            m = min(range(len(ext)), key=lambda i: abs(err[ext[i]]))
            if m == 0 or m == len(ext) - 1 or len(ext) == n + 2:
                if m not in (0, len(ext) - 1):
                    m = 0 if abs(err[ext[0]]) < abs(err[ext[-1]]) else len(ext) - 1
                ext.pop(m)
            else:
                nb = m - 1 if abs(err[ext[m - 1]]) < abs(err[ext[m + 1]]) else m + 1
                for i in sorted((m, nb), reverse=True):
                    ext.pop(i)
        if len(ext) < n + 1:
            break
        pts = [grid[k] for k in ext]
    return best


def fit():
    """The float64 coefficients of Q, lowest degree first."""
    fixed = []
    for i in range(DEG + 1):
        c, _ = remez(fixed, DEG)
        fixed.append(mpmath.mpf(float(c[0])))
    return [float(c) for c in fixed]


def max_error(coef, samples=20001):
    """The maximum of |r^2/2 + r^3 Q(r) - (e^r - 1 - r)| / |e^r - 1| over [-R, R], in
    units of 2^-53, with exact arithmetic on the float64 coefficients."""
    worst = mpmath.mpf(0)
    for i in range(samples):
        r = mpmath.mpf(-R) + 2 * mpmath.mpf(R) * i / (samples - 1)
        if r == 0:
            continue
        q = sum(mpmath.mpf(c) * r ** (3 + j) for j, c in enumerate(coef))
        e = abs((r * r / 2 + q - (mpmath.expm1(r) - r)) / mpmath.expm1(r))
        worst = max(worst, e)
    return worst * mpmath.mpf(2) ** 53


# The coefficients of the pass (crates/appy-passes/src/cpu/exp.rs, `COEF`), as `fit`
# prints them.
COEF = [
    float.fromhex("0x1.5555555555559p-3"),
    float.fromhex("0x1.5555555555557p-5"),
    float.fromhex("0x1.111111110f6f4p-7"),
    float.fromhex("0x1.6c16c16c1788bp-10"),
    float.fromhex("0x1.a01a01afb12e9p-13"),
    float.fromhex("0x1.a01a0199709a0p-16"),
    float.fromhex("0x1.71ddf8e9a9112p-19"),
    float.fromhex("0x1.27e501abc4bcep-22"),
    float.fromhex("0x1.af5db6bc964e9p-26"),
    float.fromhex("0x1.1f2ddb3610e27p-29"),
]

LN2 = mpmath.log(2)
INVLN2 = float(1 / LN2)
# ln 2 = LN2_HI + LN2_LO, LN2_HI with 32 significant bits (k LN2_HI is exact for
# |k| < 2^21, and x - k LN2_HI exact by Sterbenz's lemma).
LN2_HI = float(mpmath.floor(LN2 * 2 ** 31) / 2 ** 31)
LN2_LO = float(LN2 - mpmath.mpf(LN2_HI))
SHIFT = 1.5 * 2.0 ** 52


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="?", default="fit", choices=["fit", "check"])
    ap.add_argument("-n", type=int, default=1_000_000, help="random inputs per range (check)")
    ap.add_argument("--fma", action="store_true", help="check: the polynomial with fused multiply-adds (numba)")
    ap.add_argument("--appy", help="check: also the code compiled by this `appy` binary (`appy run`, CPU)")
    a = ap.parse_args()
    if a.what == "fit":
        coef = fit()
        print(f"# Q of degree {DEG} on |r| <= {R}")
        for c in coef:
            print(f'    float.fromhex("{c.hex()}"),  # {c!r}')
        print(f"max |r^2/2 + r^3 Q(r) - (e^r - 1 - r)| / |e^r - 1| = {mpmath.nstr(max_error(coef), 4)} * 2^-53")
        print(f"LN2_HI = {LN2_HI.hex()}, LN2_LO = {LN2_LO.hex()}, INVLN2 = {INVLN2.hex()}")
        return
    import exp_check  # noqa: E402  (scripts/exp_check.py)
    exp_check.run(a.n, a.fma, a.appy)


if __name__ == "__main__":
    main()
