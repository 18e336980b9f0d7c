"""`python3 scripts/fit_exp.py check`: the float64 exp, expm1 and tanh of
`appy-cpu-exp` emulated op by op in NumPy (the same sequence of float64 operations as
crates/appy-passes/src/cpu/exp.rs builds), against mpmath and NumPy."""
import hashlib
import os
import time

import mpmath
import numpy as np

import fit_exp as F

mpmath.mp.prec = 160

f64 = np.float64
i64 = np.int64

SHIFT = f64(F.SHIFT)
INVLN2 = f64(F.INVLN2)
LN2_HI = f64(F.LN2_HI)
LN2_LO = f64(F.LN2_LO)
C = [f64(c) for c in F.COEF]
# Clamps: exp(710) overflows, exp(-746) rounds to 0; expm1(-40) rounds to -1; below
# -708, exp's result is scaled in two steps (subnormal results).
EXP_HI, EXP_LO, EXPM1_LO, EXP_SUB = f64(710.0), f64(-746.0), f64(-40.0), f64(-708.0)

FMA = None  # set by run(fma=True): a numba fused multiply-add


def mul_add(a, b, c):
    """a * b + c as the pass's polynomial computes it (`contract`: fused with FMA)."""
    if FMA is not None:
        return FMA(a, b, c)
    return a * b + c


def bits(x):
    return np.asarray(x, dtype=f64).view(i64)


def from_bits(i):
    return np.asarray(i, dtype=i64).view(f64)


def select(c, a, b):
    return np.where(c, a, b)


def core(x):
    """The shared kernel on a clamped x: x = k ln2 + r + rl (k as a float and in the
    shifter t's bits, r + rl the reduced argument as a float64 pair),
    r^2/2 = hh + hl (hh exact: the high half rh of r squared), and rq = r^3 Q(r)."""
    t = x * INVLN2 + SHIFT
    kf = t - SHIFT
    hi = x - kf * LN2_HI
    lo = kf * LN2_LO
    r = hi - lo
    rl = (hi - r) - lo
    rh = from_bits(bits(r) & i64(-(1 << 27)))
    rt = r - rh
    hh = (rh * rh) * f64(0.5)
    hl = (rt * (r + rh)) * f64(0.5)
    r2 = r * r
    r4 = r2 * r2
    r8 = r4 * r4
    p01 = mul_add(C[1], r, C[0])
    p23 = mul_add(C[3], r, C[2])
    p45 = mul_add(C[5], r, C[4])
    p67 = mul_add(C[7], r, C[6])
    p89 = mul_add(C[9], r, C[8])
    q03 = mul_add(p23, r2, p01)
    q47 = mul_add(p67, r2, p45)
    q07 = mul_add(q47, r4, q03)
    qq = mul_add(p89, r8, q07)
    rq = (r2 * r) * qq
    # The small terms of e^(r + rl) - 1 - r - hh: hl + rq + rl (1 + r).
    small = (hl + rq) + rl * (f64(1.0) + r)
    return t, kf, r, hh, small


def exp_m(r, hh, small):
    """e^(r + rl) = 1 + r + hh + small: hi1 = 1 + r and hi2 = hi1 + hh with their
    rounding errors e1, e2 (Fast2Sum), then hi2 + (small + (e1 + e2))."""
    hi1 = f64(1.0) + r
    e1 = (f64(1.0) - hi1) + r
    hi2 = hi1 + hh
    e2 = (hi1 - hi2) + hh
    return hi2 + (small + (e1 + e2))


def exp(x):
    x = select(x > EXP_HI, EXP_HI, x)
    x = select(x < EXP_LO, EXP_LO, x)
    t, kf, r, hh, small = core(x)
    m = exp_m(r, hh, small)
    # m 2^k = (m f) 2^(k - log2 f): f = 2 (2^(k-1) is normal for k >= -1021, finite
    # for k <= 1024), else (subnormal results) f = 2^-60.
    low = x < EXP_SUB
    f = select(low, f64(2.0 ** -60), f64(2.0))
    bias = select(low, i64((1023 + 60) << 52), i64(1022 << 52))
    sc = from_bits((bits(t) << 52) + bias)
    return (m * f) * sc


def expm1_parts(x, big):
    """expm1 of a clamped x (in [-40, 710]) as a float64 pair (hi, lo): with
    e^r - 1 = sh + sl, expm1(x) = (2^k - 1) + 2^k (sh + sl). `big`: for k > 56 (where
    2^k may overflow), exp's m 2^k instead (tanh does not need it)."""
    t, kf, r, hh, small = core(x)
    sh = r + hh
    sl = ((r - sh) + hh) + small
    sc = from_bits((bits(t) << 52) + i64(1022 << 52))  # 2^(k-1)
    p2 = sc * f64(2.0)  # 2^k
    # c + cl = 2^k - 1 exactly (2Sum).
    c = p2 - f64(1.0)
    cb = c - p2
    cl = (p2 - (c - cb)) + (f64(-1.0) - cb)
    p = sh * p2
    pl = sl * p2
    # d + de = c + p exactly (2Sum).
    d = c + p
    bb = d - c
    de = (c - (d - bb)) + (p - bb)
    lo2 = de + (pl + cl)
    eh = d + lo2
    el = (d - eh) + lo2
    if big:
        m = exp_m(r, hh, small)
        eh = select(kf > f64(56.0), (m * f64(2.0)) * sc, eh)
    return eh, el


def expm1(x):
    xc = select(x > EXP_HI, EXP_HI, x)
    xc = select(xc < EXPM1_LO, EXPM1_LO, xc)
    eh, _ = expm1_parts(xc, True)
    # expm1(-0) = -0 (and the sign of every result is x's).
    return np.copysign(eh, x)


def tanh(x):
    ax = np.abs(x)
    y = ax * f64(2.0)
    y = select(y > f64(40.0), f64(40.0), y)
    eh, el = expm1_parts(y, False)
    # e / (e + 2), e = eh + el.
    den = eh + f64(2.0)
    eh_big = eh > f64(2.0)
    a = select(eh_big, eh, f64(2.0))
    b = select(eh_big, f64(2.0), eh)
    dl = ((a - den) + b) + el  # e + 2 = den + dl
    q = eh / den
    # The division's remainder eh - q den, exactly: q den = ph + pl (Dekker's product
    # with q and den split into 26-bit high parts), eh - ph exact (Sterbenz).
    mask = i64(-(1 << 27))
    qh = from_bits(bits(q) & mask)
    ql = q - qh
    dh = from_bits(bits(den) & mask)
    dt = den - dh
    ph = q * den
    pl = (((qh * dh - ph) + qh * dt) + ql * dh) + ql * dt
    rem = (eh - ph) - pl
    # (eh + el) / (den + dl) ~ q + (rem + el - q dl) / den.
    corr = ((rem + el) - q * dl) / den
    return np.copysign(q + corr, x)


# --- reference and errors -------------------------------------------------------

def reference(name, x):
    """mpmath's value of the function at each x: the nearest float64, and the rest in
    units in the last place of the exact value, with that unit; cached in /tmp."""
    key = f"/tmp/appy_exp_ref_{name}_{hashlib.sha1(x.tobytes()).hexdigest()[:16]}.npy"
    if os.path.exists(key):
        v = np.load(key)
        return v[0], v[1], v[2]
    fn = {"exp": mpmath.exp, "expm1": mpmath.expm1, "tanh": mpmath.tanh}[name]
    hi = np.empty_like(x)
    frac = np.zeros_like(x)
    ulp = np.ones_like(x)
    for i, xi in enumerate(x.tolist()):
        if xi != xi:
            hi[i] = np.nan
            continue
        if xi in (float("inf"), float("-inf")):
            hi[i] = {"exp": (0.0 if xi < 0 else xi), "expm1": (-1.0 if xi < 0 else xi), "tanh": np.sign(xi)}[name]
            continue
        v = fn(mpmath.mpf(xi))
        try:
            h = float(v)
        except OverflowError:
            h = float("inf") if v > 0 else float("-inf")
        hi[i] = h
        if v == 0 or abs(h) == float("inf"):
            continue
        e = max(int(mpmath.floor(mpmath.log(abs(v), 2))), -1022)
        # log2 may be off by one at a power of 2.
        while abs(v) >= mpmath.mpf(2) ** (e + 1):
            e += 1
        while e > -1022 and abs(v) < mpmath.mpf(2) ** e:
            e -= 1
        u = mpmath.mpf(2) ** (e - 52)
        ulp[i] = float(u)
        frac[i] = float((v - h) / u)
    np.save(key, np.stack([hi, frac, ulp]))
    return hi, frac, ulp


def ulp_error(got, hi, frac, ulp):
    """|got - exact| in units in the last place of the exact value; 0 where both are
    the same infinity or NaN, inf where only one is."""
    with np.errstate(all="ignore"):
        err = (got - hi) / ulp - frac
        same = ((got == hi) & np.isinf(hi)) | (np.isnan(got) & np.isnan(hi))
        err = np.where(same, 0.0, err)
        err = np.where(np.isinf(hi) != np.isinf(got), np.inf, err)
        err = np.where(np.isnan(got) != np.isnan(hi), np.inf, err)
    return np.abs(err)


def ulp_distance(a, b):
    """Distance in representable float64 numbers (0 for equal values or two NaNs)."""
    key = lambda v: np.where(bits(v) < 0, np.int64(-2**63) - bits(v), bits(v))
    with np.errstate(all="ignore"):
        d = np.abs(key(a) - key(b)).astype(np.float64)
    d = np.where((a == b) | (np.isnan(a) & np.isnan(b)), 0.0, d)
    d = np.where(np.isnan(a) != np.isnan(b), np.inf, d)
    return d


SPECIAL = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 5e-324, -5e-324, 2.2250738585072014e-308,
           1e-300, -1e-300, 1e-17, -1e-17, 0.5, -0.5, 1.0, -1.0, 0.34657359027997264, -0.34657359027997264,
           709.782712893384, 709.7827128933841, 709.78, 710.0, 1e308, -1e308,
           -708.3964185322641, -708.4, -709.0896, -744.44007192138126, -745.1332191019411, -745.1332191019412,
           -746.0, -800.0, -37.0, -38.0, -40.0, -41.0, 18.0, 19.0, 19.1, 20.0, 22.0, 36.0, 37.5, 38.0, 40.0]


def samples(name, n, rng):
    """Named input sets: random ones and the special values."""
    logu = lambda lo, hi, m: np.exp(rng.uniform(np.log(lo), np.log(hi), m)) * rng.choice([-1.0, 1.0], m)
    if name == "exp":
        return {
            "uniform [-745, 710]": rng.uniform(-745.0, 710.0, n),
            "|x| log-uniform [1e-20, 1]": logu(1e-20, 1.0, n),
            "uniform [-3, 3]": rng.uniform(-3.0, 3.0, n),
            "subnormal results [-745.2, -708]": rng.uniform(-745.2, -708.0, n // 10),
            "special": np.array(SPECIAL),
        }
    if name == "expm1":
        return {
            "uniform [-50, 710]": rng.uniform(-50.0, 710.0, n),
            "|x| log-uniform [1e-20, 1]": logu(1e-20, 1.0, n),
            "uniform [-3, 3]": rng.uniform(-3.0, 3.0, n),
            "|x| log-uniform [1e-310, 1e-20]": logu(1e-310, 1e-20, n // 10),
            "special": np.array(SPECIAL),
        }
    return {
        "uniform [-20, 20]": rng.uniform(-20.0, 20.0, n),
        "|x| log-uniform [1e-20, 1]": logu(1e-20, 1.0, n),
        "uniform [-1, 1]": rng.uniform(-1.0, 1.0, n),
        "|x| log-uniform [1e-310, 1e-20]": logu(1e-310, 1e-20, n // 10),
        "special": np.array(SPECIAL),
    }


KERNEL = """import numpy as np
import appy


@appy.jit
def k(x, e, m, t, N):
    #pragma parallel for simd
    for i in range(N):
        e[i] = np.exp(x[i])
        m[i] = np.expm1(x[i])
        t[i] = np.tanh(x[i])
"""


def compiled(appy, x):
    """exp, expm1 and tanh of x computed by the CPU back end (`appy run`)."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        with open(f"{d}/k.py", "w") as f:
            f.write(KERNEL)
        np.save(f"{d}/x.npy", x)
        np.save(f"{d}/z.npy", np.zeros_like(x))
        subprocess.run([appy, "run", f"{d}/k.py", "--func", "k", "--device", "cpu", "--arg", f"x=@{d}/x.npy",
                        "--arg", f"e=@{d}/z.npy", "--arg", f"m=@{d}/z.npy", "--arg", f"t=@{d}/z.npy",
                        "--arg", f"N={len(x)}", "--out", f"{d}/out"], check=True, capture_output=True)
        return {n: np.load(f"{d}/out/{c}.npy") for n, c in (("exp", "e"), ("expm1", "m"), ("tanh", "t"))}


def run(n, fma, appy=None):
    global FMA
    if fma:
        import numba
        from numba import types
        from numba.extending import intrinsic

        @intrinsic
        def _fma(typingctx, a, b, c):
            sig = types.float64(types.float64, types.float64, types.float64)

            def codegen(context, builder, signature, args):
                return builder.fma(*args)
            return sig, codegen

        @numba.vectorize(["float64(float64, float64, float64)"])
        def vfma(a, b, c):
            return _fma(a, b, c)
        FMA = vfma
    rng = np.random.default_rng(12345)
    fns = {"exp": (exp, np.exp), "expm1": (expm1, np.expm1), "tanh": (tanh, np.tanh)}
    print(f"emulation of appy-cpu-exp ({'FMA' if fma else 'no FMA'}); errors in ulp of the exact value (mpmath)")
    for name, (mine, numpy_fn) in fns.items():
        for label, x in samples(name, n, rng).items():
            t0 = time.time()
            hi, frac, ulp = reference(name, x)
            with np.errstate(all="ignore"):
                got = mine(x.copy())
                npv = numpy_fn(x)
            e = ulp_error(got, hi, frac, ulp)
            en = ulp_error(npv, hi, frac, ulp)
            dn = ulp_distance(got, npv)
            if appy:
                real = compiled(appy, x)[name]
                er = ulp_error(real, hi, frac, ulp)
                same = (bits(real) == bits(got)) | (np.isnan(real) & np.isnan(got))
                print(f"{name:6s} {label:34s} compiled by {appy}: max {er.max():.4f}  99.99% "
                      f"{np.quantile(er, 0.9999):.4f}; differs from the emulation at {int((~same).sum())} of {len(x)}")
            worst = int(np.argmax(e))
            tiny = (np.abs(hi) < 2.0 ** -1022) & (hi != 0)
            if tiny.any() and (~tiny).any():
                label = f"{label} (normal results: max {e[~tiny].max():.4f})"
            # Zeros carry NumPy's sign.
            zeros = (got == 0) & (npv == 0) & (np.signbit(got) != np.signbit(npv))
            if zeros.any():
                print(f"   the sign of zero differs from NumPy's at x = {x[zeros][:5]}")
            print(f"{name:6s} {label:34s} n={len(x)}  max {e.max():.4f} (x={x[worst]!r})"
                  f"  99.99% {np.quantile(e, 0.9999):.4f}   NumPy: max {en.max():.4f}"
                  f"  | appy - NumPy | max {dn.max():.0f} ulp  ({time.time() - t0:.0f} s)")
            bad = ~np.isfinite(e)
            if bad.any():
                print("   non-finite errors at", x[bad][:5], got[bad][:5], hi[bad][:5])
