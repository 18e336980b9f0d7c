//! Calls on scalars: the functions of [`crate::sema::catalog`] (NumPy, `math`, builtins,
//! the `appy` names, torch spellings), and `appy.*` intrinsics. Calls on arrays are
//! tensor expressions (`tensor/expr.rs`).

use super::*;
use crate::sema::catalog::{self, Cast, Op as F, Rule};

impl Lower<'_> {
    /// `Some(k)` when `v` (of type `vt`) is a Python int constant `k` outside the range
    /// of the narrow NumPy integer type `t` (`300` against a uint8 value).
    fn out_of_range_int(&self, v: Value, vt: STy, t: STy) -> Option<i64> {
        let narrow = t.dt.is_unsigned() || matches!(t.dt, DType::I8 | DType::I16 | DType::I32);
        if vt != STy::INT || t.weak || !narrow {
            return None;
        }
        let k = self.b.const_int_of(v)?;
        (!t.dt.holds(k)).then_some(k)
    }

    pub(super) fn call(&mut self, func: &Expr, args: &[Expr], kwargs: &[(Ident, Expr)], e: &Expr) -> DResult<V> {
        let Some((f, recv)) = self.callee(func) else {
            return Err(self.unsupported_call(func));
        };
        let short = short_name(f, func, self);
        // Array-valued calls (including methods such as `x.sum()`) are tensor
        // expressions; they reach here only through a scalar context.
        if recv.is_some() || self.arank(e).is_some() {
            return self.array_value(e);
        }
        let nargs = |n: usize, this: &Self| -> DResult<()> {
            if args.len() != n {
                Err(this.err(e.span, format!("`{short}` takes {n} argument(s), {} given", args.len())))
            } else {
                Ok(())
            }
        };
        let no_kwargs = |this: &Self| -> DResult<()> {
            match kwargs.first() {
                Some((k, _)) => Err(this.err(k.span, format!("keyword arguments are not supported for `{short}`"))),
                None => Ok(()),
            }
        };
        match f.rule {
            Rule::Float(op) | Rule::Same(op) | Rule::Pred(op) => {
                no_kwargs(self)?;
                let n = op_arity(op);
                nargs(n, self)?;
                let mut vs = vec![];
                for a in args {
                    vs.push(self.scalar(a)?);
                }
                let ts: Vec<STy> = vs.iter().map(|(_, t)| *t).collect();
                let t = types::elementwise(f.rule, op, &ts);
                if matches!(f.rule, Rule::Same(F::Fmod | F::Pow)) && !t.is_float() && matches!(op, F::Pow) {
                    return self.power(vs[0], vs[1], &args[0], &args[1], e.span, true);
                }
                if matches!(f.rule, Rule::Float(_)) {
                    // A float function of `2 ** k`: a float either way.
                    vs.iter().for_each(|(x, _)| self.float_use(*x));
                }
                let xs: Vec<Value> = vs.iter().map(|(x, tx)| self.b.cast(*x, *tx, t)).collect();
                self.set_loc(e.span);
                Ok(self.apply_op(op, &xs, t, e.span))
            }
            Rule::Math(op) => {
                no_kwargs(self)?;
                nargs(op_arity(op), self)?;
                let mut xs = vec![];
                for a in args {
                    let (x, t) = self.scalar(a)?;
                    self.float_use(x);
                    xs.push(self.b.cast(x, t, STy::FLOAT));
                }
                self.set_loc(e.span);
                let V::S(r, rt) = self.apply_op(op, &xs, STy::FLOAT, e.span) else {
                    unreachable!("scalar ops give scalars")
                };
                // `floor/ceil/trunc` give ints.
                let want = types::math_result(op);
                Ok(V::S(self.b.cast(r, rt, want), want))
            }
            Rule::MaxMin { max, numpy } => {
                no_kwargs(self)?;
                if args.len() < 2 || (numpy && args.len() != 2) {
                    return Err(self.err(e.span, format!("`{short}` takes two arguments here")));
                }
                let mut acc = self.scalar(&args[0])?;
                for a in &args[1..] {
                    let b = self.scalar(a)?;
                    // A Python int out of range of the other operand's integer type:
                    // NumPy raises; Python's builtins compare exactly, so the result is
                    // the constant or the other value, whichever wins.
                    let wide = [(b, acc), (acc, b)]
                        .into_iter()
                        .find_map(|(k, other)| Some((self.out_of_range_int(k.0, k.1, other.1)?, k, other)));
                    if let Some((k, konst, other)) = wide {
                        if numpy {
                            let span = if konst == b { a.span } else { args[0].span };
                            self.int_fits(konst.0, konst.1, other.1.dt, span)?;
                        }
                        acc = if (k > 0) == max { konst } else { other };
                        continue;
                    }
                    let t = promote(acc.1, b.1);
                    let x = self.b.cast(acc.0, acc.1, t);
                    let y = self.b.cast(b.0, b.1, t);
                    let r = if numpy {
                        let name = match (t.is_float(), max) {
                            (true, true) => "arith.maximumf",
                            (true, false) => "arith.minimumf",
                            (false, true) if t.dt.is_unsigned() => "arith.maxui",
                            (false, false) if t.dt.is_unsigned() => "arith.minui",
                            (false, true) => "arith.maxsi",
                            (false, false) => "arith.minsi",
                        };
                        self.b.bin(name, x, y)
                    } else {
                        // Python's builtins compare: the later value replaces the current
                        // one only if it is greater (smaller), so a NaN argument is kept
                        // only when it comes first (`max(nan, 1) == nan`, `max(1, nan) == 1`).
                        let better = if t.is_float() {
                            self.b.cmpf(if max { FPred::Ogt } else { FPred::Olt }, y, x)
                        } else if t.dt == DType::Bool {
                            let (xi, yi) = (self.b.cast(x, t, STy::INT), self.b.cast(y, t, STy::INT));
                            self.b.cmpi(if max { IPred::Sgt } else { IPred::Slt }, yi, xi)
                        } else if t.dt.is_unsigned() {
                            self.b.cmpi(if max { IPred::Ugt } else { IPred::Ult }, y, x)
                        } else {
                            self.b.cmpi(if max { IPred::Sgt } else { IPred::Slt }, y, x)
                        };
                        self.b.select(better, y, x)
                    };
                    acc = (r, t);
                }
                Ok(V::S(acc.0, acc.1))
            }
            Rule::Where => {
                nargs(3, self)?;
                let c = self.expr(&args[0])?;
                let c = self.as_bool(c, args[0].span)?;
                let a = self.scalar(&args[1])?;
                let b = self.scalar(&args[2])?;
                let t = promote(a.1, b.1);
                let x = self.b.cast(a.0, a.1, t);
                let y = self.b.cast(b.0, b.1, t);
                Ok(V::S(self.b.select(c, x, y), t))
            }
            Rule::Clip => {
                no_kwargs(self)?;
                nargs(3, self)?;
                let a = self.scalar(&args[0])?;
                let mut lo = self.scalar(&args[1])?;
                let mut hi = self.scalar(&args[2])?;
                // Python int bounds out of range of an integer `a` are that type's limits
                // (NumPy 2's `np.clip`).
                for bound in [&mut lo, &mut hi] {
                    if let Some(k) = self.out_of_range_int(bound.0, bound.1, a.1) {
                        let dt = a.1.dt;
                        let limit = match (k > 0, dt.is_unsigned()) {
                            (true, true) => (1i64 << dt.bits()) - 1,
                            (true, false) => !dt.signed_min(),
                            (false, true) => 0,
                            (false, false) => dt.signed_min(),
                        };
                        *bound = (self.b.int(limit, "i64"), STy::INT);
                    }
                }
                let t = promote(promote(a.1, lo.1), hi.1);
                let (x, l, h) = (self.b.cast(a.0, a.1, t), self.b.cast(lo.0, lo.1, t), self.b.cast(hi.0, hi.1, t));
                let (mn, mx) = if t.is_float() {
                    ("arith.minimumf", "arith.maximumf")
                } else if t.dt.is_unsigned() {
                    ("arith.minui", "arith.maxui")
                } else {
                    ("arith.minsi", "arith.maxsi")
                };
                let r = self.b.bin(mn, x, h);
                Ok(V::S(self.b.bin(mx, r, l), t))
            }
            Rule::Cast(c) => {
                if c == Cast::PyFloat
                    && let [arg] = args
                    && let ExprKind::Str(s) = &arg.kind
                {
                    let v = match s.trim().to_ascii_lowercase().as_str() {
                        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
                        "-inf" | "-infinity" => f64::NEG_INFINITY,
                        "nan" | "+nan" | "-nan" => f64::NAN,
                        other => other
                            .parse::<f64>()
                            .map_err(|_| self.err(arg.span, format!("could not convert string to float: '{s}'")))?,
                    };
                    return Ok(V::S(self.b.float(v, "f64"), STy::FLOAT));
                }
                no_kwargs(self)?;
                nargs(1, self)?;
                let (x, t) = self.scalar(&args[0])?;
                let to = types::cast(c);
                self.int_fits(x, t, to.dt, e.span)?;
                if to.is_float() {
                    self.float_use(x);
                }
                Ok(V::S(self.b.cast(x, t, to), to))
            }
            Rule::Len => {
                nargs(1, self)?;
                let v = self.expr(&args[0])?;
                match v {
                    V::Tuple(xs) => Ok(V::S(self.b.int(xs.len() as i64, "i64"), STy::INT)),
                    v => {
                        let Some(view) = self.view_of(&v) else {
                            return Err(self.err(args[0].span, "`len` needs an array or a tuple"));
                        };
                        if view.rank() == 0 {
                            return Err(self.err(args[0].span, "`len()` of a 0-dimensional array"));
                        }
                        let shape = self.view_shape(&view);
                        Ok(V::S(shape[0], STy::INT))
                    }
                }
            }
            Rule::Vidx => {
                if args.len() < 2 || args.len() > 3 {
                    return Err(self.err(e.span, "appy.vidx(start, length, bound=N) takes a start, a length and a bound"));
                }
                let (s, ts) = self.scalar(&args[0])?;
                let (l, tl) = self.scalar(&args[1])?;
                let bound_e = args
                    .get(2)
                    .or_else(|| kwargs.iter().find(|(k, _)| k.name == "bound").map(|(_, v)| v));
                let Some(be) = bound_e else {
                    return Err(self.err(e.span, "appy.vidx needs a bound: appy.vidx(i, appy.MVL, bound=N)"));
                };
                let (bv, tb) = self.scalar(be)?;
                let start = self.b.cast(s, ts, STy::INT);
                let len = self.b.cast(l, tl, STy::INT);
                let bound = self.b.cast(bv, tb, STy::INT);
                Ok(V::Vidx { start, len, bound })
            }
            Rule::Range => Err(self.err(e.span, "range() can only be used as the iterable of a `for` loop")),
            Rule::Print => Err(self
                .err(e.span, "`print(...)` is a statement; it has no value")
                .with_note("help: call it on a line of its own")),
            Rule::Atomic(_) | Rule::CopyTo => Err(self
                .err(e.span, format!("`{short}` updates an array; it has no value"))
                .with_note("help: call it on a line of its own")),
            Rule::Reduce(_) | Rule::Mean | Rule::BuiltinSum => Err(self
                .err(e.span, format!("`{short}` needs an array argument"))
                .with_note("help: e.g. `np.sum(a)`, `a.sum(axis=0)`, or `sum(a[vi])` for a vector")),
            Rule::Dot | Rule::Transpose | Rule::Arange | Rule::Copy | Rule::AsType | Rule::Alloc { .. } | Rule::Like(_) => {
                self.array_value(e)
            }
        }
    }

    /// Applies an element-wise operation to scalars of type `t` (already converted).
    pub(super) fn apply_op(&mut self, op: F, xs: &[Value], t: STy, span: Span) -> V {
        let ty = t.mlir();
        let f = t.is_float();
        match op {
            F::Unary(name) => V::S(self.b.op1(name, &[xs[0]], ty, &[]), t),
            F::Binary(name) => V::S(self.b.bin(name, xs[0], xs[1]), t),
            F::Abs => {
                if f {
                    V::S(self.b.op1("math.absf", &[xs[0]], ty, &[]), t)
                } else if t.dt.is_unsigned() {
                    V::S(xs[0], t)
                } else {
                    V::S(self.b.op1("math.absi", &[xs[0]], ty, &[]), t)
                }
            }
            F::Square => {
                let name = if f { "arith.mulf" } else { "arith.muli" };
                V::S(self.b.bin(name, xs[0], xs[0]), t)
            }
            F::Round => {
                if f {
                    V::S(self.b.op1("math.roundeven", &[xs[0]], ty, &[]), t)
                } else {
                    V::S(xs[0], t)
                }
            }
            F::Sign => {
                let x = xs[0];
                let zero = self.b.scalar(0.0, t);
                let one = self.b.scalar(1.0, t);
                let m1 = self.b.scalar(-1.0, t);
                let (pos, neg) = if f {
                    (self.b.cmpf(FPred::Ogt, x, zero), self.b.cmpf(FPred::Olt, x, zero))
                } else if t.dt.is_unsigned() {
                    (self.b.cmpi(IPred::Ne, x, zero), self.b.int(0, "i1"))
                } else {
                    (self.b.cmpi(IPred::Sgt, x, zero), self.b.cmpi(IPred::Slt, x, zero))
                };
                // Zero and NaN give themselves.
                let r = self.b.select(neg, m1, x);
                V::S(self.b.select(pos, one, r), t)
            }
            F::Fmod if f => V::S(self.b.bin("arith.remf", xs[0], xs[1]), t),
            F::Fmod => {
                // C's fmod of integers; a zero divisor gives 0 with a warning, as in NumPy.
                let rem = if t.dt.is_unsigned() { "arith.remui" } else { "arith.remsi" };
                let r = self.guarded_int_div(xs[0], xs[1], t, span, appy_ir::status::SiteKind::Mod, |me, x, y| {
                    me.b.bin(rem, x, y)
                });
                V::S(r, t)
            }
            F::Pow => {
                if f {
                    V::S(self.b.bin("math.powf", xs[0], xs[1]), t)
                } else {
                    unreachable!("integer powers go through `binary`")
                }
            }
            F::Hypot => V::S(self.hypot(xs[0], xs[1], t), t),
            F::Cbrt => V::S(self.cbrt(xs[0], t), t),
            F::IsNan | F::IsInf | F::IsFinite => {
                let rt = types::op_result(op, t);
                if !f {
                    let r = matches!(op, F::IsFinite);
                    return V::S(self.b.int(r as i64, "i1"), rt);
                }
                let x = xs[0];
                let r = match op {
                    F::IsNan => self.b.cmpf(FPred::Uno, x, x),
                    _ => {
                        let a = self.b.op1("math.absf", &[x], ty, &[]);
                        let inf = self.b.float(f64::INFINITY, ty);
                        self.b.cmpf(if op == F::IsInf { FPred::Oeq } else { FPred::Olt }, a, inf)
                    }
                };
                V::S(r, rt)
            }
        }
    }

    /// `hypot(x, y)` within 1 ulp: float32 through float64; float64 directly when no
    /// square can overflow or underflow, else scaled by the larger magnitude; ±inf wins
    /// over NaN, as in C.
    fn hypot(&mut self, x: Value, y: Value, t: STy) -> Value {
        let ty = t.mlir();
        if matches!(t.dt, DType::F32 | DType::F16 | DType::BF16) {
            let f64t = STy::strong(DType::F64);
            let (a, b) = (self.b.cast(x, t, f64t), self.b.cast(y, t, f64t));
            let (aa, bb) = (self.b.bin("arith.mulf", a, a), self.b.bin("arith.mulf", b, b));
            let s = self.b.bin("arith.addf", aa, bb);
            let r = self.b.op1("math.sqrt", &[s], "f64", &[]);
            return self.b.cast(r, f64t, t);
        }
        let ax = self.b.op1("math.absf", &[x], ty, &[]);
        let ay = self.b.op1("math.absf", &[y], ty, &[]);
        let big = self.b.bin("arith.maximumf", ax, ay);
        let small = self.b.bin("arith.minimumf", ax, ay);
        // Direct: sqrt(x*x + y*y).
        let xx = self.b.bin("arith.mulf", ax, ax);
        let yy = self.b.bin("arith.mulf", ay, ay);
        let s = self.b.bin("arith.addf", xx, yy);
        let direct = self.b.op1("math.sqrt", &[s], ty, &[]);
        // Scaled: big * sqrt(1 + (small/big)^2).
        let r = self.b.bin("arith.divf", small, big);
        let rr = self.b.bin("arith.mulf", r, r);
        let one = self.b.float(1.0, ty);
        let q = self.b.bin("arith.addf", one, rr);
        let sq = self.b.op1("math.sqrt", &[q], ty, &[]);
        let scaled = self.b.bin("arith.mulf", big, sq);
        let hi = self.b.float(1e150, ty);
        let lo = self.b.float(1e-150, ty);
        let ok_hi = self.b.cmpf(FPred::Olt, big, hi);
        let ok_lo = self.b.cmpf(FPred::Ogt, small, lo);
        let safe = self.b.bin("arith.andi", ok_hi, ok_lo);
        let v = self.b.select(safe, direct, scaled);
        let zero = self.b.float(0.0, ty);
        let is_zero = self.b.cmpf(FPred::Oeq, big, zero);
        let v = self.b.select(is_zero, zero, v);
        let inf = self.b.float(f64::INFINITY, ty);
        let xinf = self.b.cmpf(FPred::Oeq, ax, inf);
        let yinf = self.b.cmpf(FPred::Oeq, ay, inf);
        let any_inf = self.b.bin("arith.ori", xinf, yinf);
        self.b.select(any_inf, inf, v)
    }

    /// `cbrt(x)` within 1 ulp: the C library's `cbrt` is up to 3 ulp off, so its
    /// result `y` gets one Newton step, `y - (y³ - x) / (3y²)`, with `y³ - x` computed
    /// exactly enough by fused multiply-adds; float32 goes through float64.
    fn cbrt(&mut self, x: Value, t: STy) -> Value {
        if matches!(t.dt, DType::F32 | DType::F16 | DType::BF16) {
            let f64t = STy::strong(DType::F64);
            let w = self.b.cast(x, t, f64t);
            let r = self.cbrt(w, f64t);
            return self.b.cast(r, f64t, t);
        }
        let ty = t.mlir();
        let y = self.b.op1("math.cbrt", &[x], ty, &[]);
        let hi = self.b.bin("arith.mulf", y, y);
        let nhi = self.b.op1("arith.negf", &[hi], ty, &[]);
        let lo = self.b.op1("math.fma", &[y, y, nhi], ty, &[]);
        let nx = self.b.op1("arith.negf", &[x], ty, &[]);
        let r1 = self.b.op1("math.fma", &[hi, y, nx], ty, &[]);
        let r = self.b.op1("math.fma", &[lo, y, r1], ty, &[]);
        let three = self.b.float(3.0, ty);
        let d = self.b.bin("arith.mulf", three, hi);
        let q = self.b.bin("arith.divf", r, d);
        let c = self.b.bin("arith.subf", y, q);
        // Zero, infinities and NaN: the C library's value as it is.
        let zero = self.b.float(0.0, ty);
        let inf = self.b.float(f64::INFINITY, ty);
        let a = self.b.op1("math.absf", &[y], ty, &[]);
        let finite = self.b.cmpf(FPred::Olt, a, inf);
        let nonzero = self.b.cmpf(FPred::One, y, zero);
        let ok = self.b.bin("arith.andi", finite, nonzero);
        self.b.select(ok, c, y)
    }

    /// The error for a call of an unknown function, with the list of supported ones.
    pub(super) fn unsupported_call(&self, func: &Expr) -> Diagnostic {
        let q = qualify(&self.imports, func).unwrap_or_default();
        let short = q.trim_start_matches("builtins.").replace("numpy.", "np.");
        if let ExprKind::Attribute { attr, value } = &func.kind
            && self.arank(value).is_some()
        {
            return self
                .err(func.span, format!("unsupported array method `.{}()`", attr.name))
                .with_note(format!("help: supported: {}", catalog::method_hint()));
        }
        self.err(func.span, format!("unsupported function `{short}`"))
            .with_note(format!("help: supported: {}", catalog::hint()))
    }
}

/// Operands of an element-wise operation.
fn op_arity(op: F) -> usize {
    match op {
        F::Binary(_) | F::Hypot | F::Pow | F::Fmod => 2,
        _ => 1,
    }
}

/// How a call is named in messages (`np.exp`, `math.exp`, `a.sum`).
fn short_name(f: &catalog::Func, func: &Expr, l: &Lower<'_>) -> String {
    match &func.kind {
        ExprKind::Attribute { attr, value } if l.arank(value).is_some() => format!(".{}()", attr.name),
        _ => qualify(&l.imports, func)
            .unwrap_or_else(|| f.names.first().copied().unwrap_or("").to_string())
            .trim_start_matches("builtins.")
            .replace("numpy.", "np."),
    }
}
