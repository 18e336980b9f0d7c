//! `appy-cpu-exp`: float64 `math.exp`, `math.expm1` and `math.tanh` computed inline by
//! branch-free `arith` operations, which LLVM's loop vectoriser vectorises; only where
//! the argument varies from one iteration of the innermost loop around it to the next
//! (see [`crate::analyses::uniform`]).
//!
//! The C library's scalar `exp` keeps a loop that calls it from being vectorised (LLVM
//! calls it once per lane), and `libmvec`'s vector `exp` is 2.9 ulp off, more than the
//! CPU back end allows for float64 (see `appy-cpu-vector-math`). This pass replaces
//! each float64 op by the computation below. Measured against mpmath on 6 million
//! arguments per function (`scripts/fit_exp.py check --appy`, which also shows the
//! compiled code equal, bit for bit, to the script's emulation of these operations):
//! at most 0.53 ulp for `exp` with a normal result (0.75 with a subnormal one, which
//! is rounded twice), 0.61 ulp for `expm1`, 0.58 ulp for `tanh`; NumPy's own are at
//! 0.72, 0.52 and 1.18. Float32 ops are left to `appy-cpu-wide-math` (the float64 C
//! function rounded to float32, correctly rounded as measured there).
//!
//! * Reduction: `k = round(x / ln2)` by adding and subtracting 1.5·2^52 (the sum's low
//!   bits are `k`); `x - k·ln2 = r + rl` (a float64 pair) with Cody and Waite's two
//!   constants (`k·LN2_HI` and `x - k·LN2_HI` are exact), `|r| <= ln2/2`.
//! * Polynomial: `e^r - 1 - r = r²/2 + r³·Q(r)`, `Q` of degree 9 fitted by
//!   `scripts/fit_exp.py` (Remez; error 0.003·2^-53 relative to `e^r - 1`), evaluated
//!   by Estrin's scheme with `fastmath<contract>` (LLVM fuses its multiplications and
//!   additions where the host has FMA; the errors above hold either way). `r²/2 = hh +
//!   hl` with `hh` exact (`r`'s high 26 bits squared).
//! * `exp(x) = 2^k·e^(r+rl)`, `e^(r+rl) = ((1 + r) + hh) + (hl + r³·Q + rl·(1 + r))`
//!   with the two large additions' rounding errors kept (Fast2Sum), so the result is
//!   rounded about once; scaled by `2^(k-1)` built in the exponent bits and by 2
//!   (`2^(k+60)` and `2^-60` below x = -708: subnormal results are rounded by the last
//!   multiplication only). x is clamped to [-746, 710] (0 and infinity; NaN passes the
//!   clamps and stays NaN).
//! * `expm1(x) = (2^k - 1) + 2^k·(e^(r+rl) - 1)` summed exactly as float64 pairs
//!   (2Sum), with `e^(r+rl) - 1 = (r + hh) + ...` (no cancellation near 0); for k > 56,
//!   `exp`'s result. x is clamped to [-40, 710]; the sign of the result is x's
//!   (`expm1(-0) = -0`).
//! * `tanh(x) = ±e / (e + 2)` with `e = expm1(2|x|)` as a float64 pair (`2|x|` clamped
//!   to 40, where the quotient rounds to 1): `q = eh / (eh + 2)` and a correction for
//!   the low parts of `e` and `e + 2` and for the division's remainder (exact, by
//!   Dekker's product), the sign of x restored with `copysign`.
//!
//! Runs on the CPU pipeline first, before `appy-cpu-libm` (which would make `expm1` a
//! C call) and the upstream lowering (which would make `exp` an intrinsic LLVM lowers
//! to a C call).

use crate::analyses::uniform::Uniformity;
use crate::{Pass, PassInfo};
use appy_ir::build::{Builder, FPred};
use appy_ir::diag::IrError;
use appy_ir::ir::{Op, Value};
use appy_ir::rewrite::rewrite;
use std::collections::HashMap;

/// The pass.
pub struct CpuExp;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-cpu-exp",
    description: "CPU only: float64 math.exp/expm1/tanh of varying arguments as inline branch-free arithmetic within 1 ulp (LLVM vectorises it)",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(CpuExp)),
};

/// The coefficients of `Q` (lowest degree first), as bit patterns: `e^r - 1 - r ≈ r²/2 +
/// r³·Q(r)` on |r| <= 0.347 (`scripts/fit_exp.py`, which prints them as hexadecimal
/// floats).
pub const COEF: [u64; 10] = [
    0x3FC5555555555559, // 0x1.5555555555559p-3   ≈ 1/3!
    0x3FA5555555555557, // 0x1.5555555555557p-5   ≈ 1/4!
    0x3F8111111110F6F4, // 0x1.111111110f6f4p-7   ≈ 1/5!
    0x3F56C16C16C1788B, // 0x1.6c16c16c1788bp-10  ≈ 1/6!
    0x3F2A01A01AFB12E9, // 0x1.a01a01afb12e9p-13  ≈ 1/7!
    0x3EFA01A0199709A0, // 0x1.a01a0199709a0p-16  ≈ 1/8!
    0x3EC71DDF8E9A9112, // 0x1.71ddf8e9a9112p-19  ≈ 1/9!
    0x3E927E501ABC4BCE, // 0x1.27e501abc4bcep-22  ≈ 1/10!
    0x3E5AF5DB6BC964E9, // 0x1.af5db6bc964e9p-26  ≈ 1/11!
    0x3E21F2DDB3610E27, // 0x1.1f2ddb3610e27p-29  ≈ 1/12!
];

/// 1/ln 2.
pub const INVLN2: f64 = std::f64::consts::LOG2_E;
/// ln 2 to 32 significant bits: `k·LN2_HI` is exact for |k| < 2^21.
pub const LN2_HI: u64 = 0x3FE62E42FEC00000;
/// `ln 2 - LN2_HI`, rounded.
pub const LN2_LO: u64 = 0x3DFD1CF79ABC9E3B;
/// 1.5·2^52: `x + SHIFT - SHIFT` rounds x to an integer, which the low bits of
/// `x + SHIFT` hold.
pub const SHIFT: f64 = 6755399441055744.0;

impl Pass for CpuExp {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut appy_ir::ir::Module) -> Result<(), IrError> {
        rewrite(m, |rw| {
            for f in &mut rw.top {
                walk(&mut rw.b, f);
            }
        });
        Ok(())
    }
}

/// Which function an op computes, when this pass expands it.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Func {
    Exp,
    Expm1,
    Tanh,
}

fn func_of(b: &Builder, op: &Op) -> Option<Func> {
    let f = match op.name.as_str() {
        "math.exp" => Func::Exp,
        "math.expm1" => Func::Expm1,
        "math.tanh" => Func::Tanh,
        _ => return None,
    };
    let scalar_f64 = op.operands.len() == 1 && op.results.len() == 1 && b.m.ty(op.operands[0]) == "f64" && b.m.ty(op.results[0]) == "f64";
    scalar_f64.then_some(f)
}

/// Expands the ops under `op` whose argument varies in the innermost loop around them
/// (see [`crate::analyses::uniform`]).
///
/// An op whose argument is the same in every iteration (`np.tanh(c[0])` in a loop over
/// `i`) is left to the C library: computed once per iteration as a scalar, it gains
/// nothing from being vectorisable, and LLVM's loop vectoriser, which walks every path
/// through such a uniform computation, takes exponential time on the expansion (a
/// second `tanh` of a uniform `tanh` did not finish compiling in minutes).
fn walk(b: &mut Builder, op: &mut Op) {
    let uniformity = Uniformity::of(&b.m, op);
    let Ok(()) = op.rewrite_nested(b, &mut |b, o, out| {
        let Some(f) = func_of(b, &o).filter(|_| uniformity.varies_at(o.operands[0], o.results[0])) else {
            out.push(o);
            return Ok::<(), std::convert::Infallible>(());
        };
        b.loc = o.loc.clone();
        b.begin();
        let x = o.operands[0];
        let mut e = Emitter { b, consts: HashMap::new() };
        let y = match f {
            Func::Exp => e.exp(x),
            Func::Expm1 => e.expm1(x),
            Func::Tanh => e.tanh(x),
        };
        let mut new = b.end();
        // The last op computes the result: give it the op's result value.
        let last = new.last_mut().expect("ops emitted");
        debug_assert_eq!(last.results, vec![y]);
        last.results = o.results.clone();
        out.extend(new);
        Ok(())
    });
}

/// Emits the float64 operations (constants shared within one expansion).
struct Emitter<'a> {
    b: &'a mut Builder,
    consts: HashMap<(u64, bool), Value>,
}

const CONTRACT: &str = "#arith.fastmath<contract>";

impl Emitter<'_> {
    fn f(&mut self, v: f64) -> Value {
        if let Some(c) = self.consts.get(&(v.to_bits(), true)) {
            return *c;
        }
        let c = self.b.float(v, "f64");
        self.consts.insert((v.to_bits(), true), c);
        c
    }
    fn i(&mut self, v: i64) -> Value {
        if let Some(c) = self.consts.get(&(v as u64, false)) {
            return *c;
        }
        let c = self.b.int(v, "i64");
        self.consts.insert((v as u64, false), c);
        c
    }
    fn add(&mut self, a: Value, b: Value) -> Value {
        self.b.bin("arith.addf", a, b)
    }
    fn sub(&mut self, a: Value, b: Value) -> Value {
        self.b.bin("arith.subf", a, b)
    }
    fn mul(&mut self, a: Value, b: Value) -> Value {
        self.b.bin("arith.mulf", a, b)
    }
    /// `a·b + c`, which LLVM may fuse (`contract`): the polynomial only.
    fn mul_add(&mut self, a: Value, b: Value, c: Value) -> Value {
        let p = self.b.op1("arith.mulf", &[a, b], "f64", &[("fastmath", CONTRACT.into())]);
        self.b.op1("arith.addf", &[p, c], "f64", &[("fastmath", CONTRACT.into())])
    }
    /// `a·b + c` with constant a and c.
    fn mul_add_k(&mut self, a: u64, b: Value, c: u64) -> Value {
        let (a, c) = (self.f(f64::from_bits(a)), self.f(f64::from_bits(c)));
        self.mul_add(a, b, c)
    }
    fn gt(&mut self, a: Value, k: f64) -> Value {
        let k = self.f(k);
        self.b.cmpf(FPred::Ogt, a, k)
    }
    fn lt(&mut self, a: Value, k: f64) -> Value {
        let k = self.f(k);
        self.b.cmpf(FPred::Olt, a, k)
    }
    fn sel(&mut self, c: Value, a: Value, b: Value) -> Value {
        self.b.select(c, a, b)
    }
    /// x clamped to [lo, hi]; NaN stays NaN (the comparisons are false).
    fn clamp(&mut self, x: Value, lo: f64, hi: f64) -> Value {
        let (above, h) = (self.gt(x, hi), self.f(hi));
        let x = self.sel(above, h, x);
        let (below, l) = (self.lt(x, lo), self.f(lo));
        self.sel(below, l, x)
    }
    fn bits(&mut self, x: Value) -> Value {
        self.b.op1("arith.bitcast", &[x], "i64", &[])
    }
    fn float_of_bits(&mut self, i: Value) -> Value {
        self.b.op1("arith.bitcast", &[i], "f64", &[])
    }
    /// `x = h + l` exactly, `h` with 26 significant bits (`x`'s low 27 bits cleared).
    fn split(&mut self, x: Value) -> (Value, Value) {
        let xb = self.bits(x);
        let mask = self.i(-(1 << 27));
        let hb = self.b.bin("arith.andi", xb, mask);
        let h = self.float_of_bits(hb);
        let l = self.sub(x, h);
        (h, l)
    }
    /// `2^(k + bias - 1023)` from the shifter `t` (whose low bits hold k) and the
    /// exponent bits `bias << 52` (an i64 value).
    fn scale(&mut self, t: Value, bias: Value) -> Value {
        let tb = self.bits(t);
        let s52 = self.i(52);
        let k52 = self.b.bin("arith.shli", tb, s52);
        let e = self.b.bin("arith.addi", k52, bias);
        self.float_of_bits(e)
    }

    /// The shared kernel on a clamped x: the shifter `t = x/ln2 + SHIFT` (k in its low
    /// bits), `k` as a float, `x - k ln2 = r + rl`, `r²/2 = hh + hl` (`hh` exact: the
    /// square of `r`'s high 26 bits) and the small terms of `e^(r+rl) - 1 - r - hh`:
    /// `hl + r³·Q(r) + rl·(1 + r)`.
    fn core(&mut self, x: Value) -> Core {
        let (invln2, shift) = (self.f(INVLN2), self.f(SHIFT));
        let xl = self.mul(x, invln2);
        let t = self.add(xl, shift);
        let kf = self.sub(t, shift);
        let (l1, l2) = (self.f(f64::from_bits(LN2_HI)), self.f(f64::from_bits(LN2_LO)));
        let kh = self.mul(kf, l1);
        let hi = self.sub(x, kh);
        let lo = self.mul(kf, l2);
        let r = self.sub(hi, lo);
        let d = self.sub(hi, r);
        let rl = self.sub(d, lo);
        let (rh, rt) = self.split(r);
        let half = self.f(0.5);
        let rh2 = self.mul(rh, rh);
        let hh = self.mul(rh2, half);
        let rrh = self.add(r, rh);
        let rtr = self.mul(rt, rrh);
        let hl = self.mul(rtr, half);
        // Q(r), Estrin's scheme.
        let r2 = self.mul(r, r);
        let r4 = self.mul(r2, r2);
        let r8 = self.mul(r4, r4);
        let p01 = self.mul_add_k(COEF[1], r, COEF[0]);
        let p23 = self.mul_add_k(COEF[3], r, COEF[2]);
        let p45 = self.mul_add_k(COEF[5], r, COEF[4]);
        let p67 = self.mul_add_k(COEF[7], r, COEF[6]);
        let p89 = self.mul_add_k(COEF[9], r, COEF[8]);
        let q03 = self.mul_add(p23, r2, p01);
        let q47 = self.mul_add(p67, r2, p45);
        let q07 = self.mul_add(q47, r4, q03);
        let q = self.mul_add(p89, r8, q07);
        let r3 = self.mul(r2, r);
        let rq = self.mul(r3, q);
        let one = self.f(1.0);
        let r1 = self.add(one, r);
        let w = self.mul(rl, r1);
        let hq = self.add(hl, rq);
        let small = self.add(hq, w);
        Core { t, kf, r, r1, hh, small }
    }

    /// `e^(r + rl) = 1 + r + hh + small`: `hi1 = 1 + r` and `hi2 = hi1 + hh` with
    /// their rounding errors `e1`, `e2` (Fast2Sum), then `hi2 + (small + (e1 + e2))`.
    fn exp_m(&mut self, c: &Core) -> Value {
        let one = self.f(1.0);
        let hi1 = c.r1;
        let d1 = self.sub(one, hi1);
        let e1 = self.add(d1, c.r);
        let hi2 = self.add(hi1, c.hh);
        let d2 = self.sub(hi1, hi2);
        let e2 = self.add(d2, c.hh);
        let e12 = self.add(e1, e2);
        let tail = self.add(c.small, e12);
        self.add(hi2, tail)
    }

    fn exp(&mut self, x: Value) -> Value {
        let x = self.clamp(x, -746.0, 710.0);
        let c = self.core(x);
        let m = self.exp_m(&c);
        // m·2^k = (m·f)·2^(k - log2 f): f = 2 (2^(k-1) is normal for k >= -1021 and
        // finite for k <= 1024), or 2^-60 below x = -708 (subnormal results).
        let low = self.lt(x, -708.0);
        let (f_low, f_high) = (self.f(2f64.powi(-60)), self.f(2.0));
        let f = self.sel(low, f_low, f_high);
        let (b_low, b_high) = (self.i((1023 + 60) << 52), self.i(1022 << 52));
        let bias = self.sel(low, b_low, b_high);
        let sc = self.scale(c.t, bias);
        let mf = self.mul(m, f);
        self.mul(mf, sc)
    }

    /// 2Sum: `a + b = s + e` exactly.
    fn two_sum(&mut self, a: Value, b: Value) -> (Value, Value) {
        crate::expand_erfc::two_sum(self.b, a, b)
    }

    /// expm1 of x in [-40, 710] as a float64 pair: `(2^k - 1) + 2^k·(sh + sl)`,
    /// `sh + sl = e^(r + rl) - 1`; with `big`, `exp`'s result for k > 56 (where 2^k·sh
    /// may overflow; tanh, whose k is at most 58, does not need it and uses the pair).
    fn expm1_pair(&mut self, x: Value, big: bool) -> (Value, Value) {
        let c = self.core(x);
        // sh + sl = r + hh (Fast2Sum, |r| >= hh) + small.
        let sh = self.add(c.r, c.hh);
        let d0 = self.sub(c.r, sh);
        let d1 = self.add(d0, c.hh);
        let sl = self.add(d1, c.small);
        let b1022 = self.i(1022 << 52);
        let sc = self.scale(c.t, b1022); // 2^(k-1)
        let two = self.f(2.0);
        let p2 = self.mul(sc, two); // 2^k
        let m1 = self.f(-1.0);
        let (cc, cl) = self.two_sum(p2, m1); // 2^k - 1
        let p = self.mul(sh, p2);
        let pl = self.mul(sl, p2);
        let (d, de) = self.two_sum(cc, p);
        let low = self.add(pl, cl);
        let lo2 = self.add(de, low);
        let eh = self.add(d, lo2);
        let g = self.sub(d, eh);
        let el = self.add(g, lo2);
        if !big {
            return (eh, el);
        }
        let m = self.exp_m(&c);
        let m2 = self.mul(m, two);
        let e_big = self.mul(m2, sc);
        let is_big = self.gt(c.kf, 56.0);
        (self.sel(is_big, e_big, eh), el)
    }

    fn expm1(&mut self, x: Value) -> Value {
        let xc = self.clamp(x, -40.0, 710.0);
        let (e, _) = self.expm1_pair(xc, true);
        self.b.op1("math.copysign", &[e, x], "f64", &[])
    }

    fn tanh(&mut self, x: Value) -> Value {
        let ax = self.b.op1("math.absf", &[x], "f64", &[]);
        let two = self.f(2.0);
        let y = self.mul(ax, two);
        let forty = self.f(40.0);
        let big = self.gt(y, 40.0);
        let y = self.sel(big, forty, y);
        let (eh, el) = self.expm1_pair(y, false);
        // e / (e + 2) with e = eh + el: den + dl = e + 2 (Fast2Sum on the larger and
        // the smaller of eh and 2, then el) and q = eh / den.
        let den = self.add(eh, two);
        let eh_big = self.gt(eh, 2.0);
        let a = self.sel(eh_big, eh, two);
        let b = self.sel(eh_big, two, eh);
        let ad = self.sub(a, den);
        let adb = self.add(ad, b);
        let dl = self.add(adb, el);
        let q = self.b.bin("arith.divf", eh, den);
        // The remainder eh - q·den, exactly: q·den = ph + pl (Dekker's product of q
        // and den split into 26-bit high parts and the rest), eh - ph exact (Sterbenz).
        let (qh, ql) = self.split(q);
        let (dh, dt) = self.split(den);
        let ph = self.mul(q, den);
        let hh = self.mul(qh, dh);
        let p0 = self.sub(hh, ph);
        let hl = self.mul(qh, dt);
        let p1 = self.add(p0, hl);
        let lh = self.mul(ql, dh);
        let p2 = self.add(p1, lh);
        let ll = self.mul(ql, dt);
        let pl = self.add(p2, ll);
        let eph = self.sub(eh, ph);
        let rem = self.sub(eph, pl);
        // (eh + el) / (den + dl) ≈ q + (rem + el - q·dl) / den.
        let re = self.add(rem, el);
        let qdl = self.mul(q, dl);
        let num = self.sub(re, qdl);
        let corr = self.b.bin("arith.divf", num, den);
        let t = self.add(q, corr);
        self.b.op1("math.copysign", &[t, x], "f64", &[])
    }
}

/// The kernel's values (see [`Emitter::core`]).
struct Core {
    t: Value,
    kf: Value,
    r: Value,
    /// `1 + r`, rounded.
    r1: Value,
    hh: Value,
    small: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `0x1.5555555555559p-3` → its value.
    fn hex_float(s: &str) -> f64 {
        let (neg, s) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s),
        };
        let s = s.strip_prefix("0x").expect("0x");
        let (mant, exp) = s.split_once('p').expect("p");
        let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
        let digits = format!("{int}{frac}");
        let m = u64::from_str_radix(&digits, 16).expect("hex digits") as f64;
        let e: i32 = exp.parse::<i32>().expect("exponent") - 4 * frac.len() as i32;
        let v = m * 2f64.powi(e);
        if neg { -v } else { v }
    }

    /// The coefficients are those `scripts/fit_exp.py` fitted and checked.
    #[test]
    fn coefficients_match_the_fitting_script() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/fit_exp.py");
        let text = std::fs::read_to_string(path).unwrap();
        let block = text.split("COEF = [").nth(1).unwrap().split(']').next().unwrap();
        let script: Vec<f64> = block
            .lines()
            .filter_map(|l| l.split("float.fromhex(\"").nth(1))
            .map(|l| hex_float(l.split('"').next().unwrap()))
            .collect();
        let ours: Vec<f64> = COEF.iter().map(|b| f64::from_bits(*b)).collect();
        assert_eq!(script, ours);
        // The Taylor coefficients 1/3!, 1/4!, ..., nearly.
        let mut fact = 2.0;
        for (k, c) in ours.iter().enumerate() {
            fact *= (k + 3) as f64;
            assert!((c * fact - 1.0).abs() < 1e-2, "coefficient {k}: {c} vs 1/{fact}");
        }
        let ln2_hi = f64::from_bits(LN2_HI);
        assert_eq!(ln2_hi.to_bits() & ((1 << 21) - 1), 0, "LN2_HI has at most 32 significant bits");
        assert!((ln2_hi + f64::from_bits(LN2_LO) - std::f64::consts::LN_2).abs() <= 1e-16);
        assert_eq!(hex_float("0x1.8p52"), SHIFT);
    }
}
