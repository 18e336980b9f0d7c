//! Calls: builtins, NumPy and math functions, `appy.*` intrinsics.

use super::*;

impl Lower<'_> {
    pub(super) fn call(&mut self, func: &Expr, args: &[Expr], kwargs: &[(Ident, Expr)], e: &Expr) -> DResult<V> {
        let Some(q) = qualify(&self.imports, func) else {
            return Err(self.err(func.span, "unsupported call"));
        };
        let short = q.trim_start_matches("builtins.").to_string();
        if !kwargs.is_empty() && q != "appy.vidx" {
            return Err(self.err(kwargs[0].0.span, format!("keyword arguments are not supported for `{short}`")));
        }
        let nargs = |n: usize, this: &Self| -> DResult<()> {
            if args.len() != n {
                Err(this.err(e.span, format!("`{short}` takes {n} argument(s), {} given", args.len())))
            } else {
                Ok(())
            }
        };
        let unary_math = |name: &str| -> Option<&'static str> {
            Some(match name {
                "exp" => "math.exp",
                "log" => "math.log",
                "sqrt" => "math.sqrt",
                "tanh" => "math.tanh",
                "sin" => "math.sin",
                "cos" => "math.cos",
                "tan" => "math.tan",
                "floor" => "math.floor",
                "ceil" => "math.ceil",
                "log2" => "math.log2",
                "log10" => "math.log10",
                "exp2" => "math.exp2",
                "arctan" | "atan" => "math.atan",
                "erf" => "math.erf",
                _ => return None,
            })
        };
        let (module, fname) = q.rsplit_once('.').unwrap_or(("", q.as_str()));
        // `from appy import exp` / `appy.sqrt(x)`: the package re-exports NumPy's math.
        let appy_math = unary_math(fname).is_some()
            || matches!(
                fname,
                "abs" | "absolute" | "fabs" | "maximum" | "minimum" | "fmax" | "fmin" | "power" | "arctan2"
            );
        let module = if module == "appy" && appy_math { "numpy" } else { module };
        let is_mathmod = module == "numpy" || module == "math";
        match (module, fname) {
            ("builtins", "float") if args.len() == 1 => {
                if let ExprKind::Str(s) = &args[0].kind {
                    let v = match s.trim().to_ascii_lowercase().as_str() {
                        "inf" | "+inf" | "infinity" => f64::INFINITY,
                        "-inf" | "-infinity" => f64::NEG_INFINITY,
                        "nan" => f64::NAN,
                        other => other.parse::<f64>().map_err(|_| self.err(args[0].span, format!("could not convert string to float: '{s}'")))?,
                    };
                    return Ok(V::S(self.b.float(v, "f64"), STy::FLOAT));
                }
                let (x, t) = self.scalar(&args[0])?;
                Ok(V::S(self.b.cast(x, t, STy::FLOAT), STy::FLOAT))
            }
            ("builtins", "int") => {
                nargs(1, self)?;
                let (x, t) = self.scalar(&args[0])?;
                Ok(V::S(self.b.cast(x, t, STy::INT), STy::INT))
            }
            ("builtins", "bool") => {
                nargs(1, self)?;
                let (x, t) = self.scalar(&args[0])?;
                Ok(V::S(self.b.cast(x, t, STy::BOOL), STy::BOOL))
            }
            ("numpy", "float32" | "float64" | "int32" | "int64") => {
                nargs(1, self)?;
                let dt = self.dtype_of(func)?;
                let (x, t) = self.scalar(&args[0])?;
                Ok(V::S(self.b.cast(x, t, STy::strong(dt)), STy::strong(dt)))
            }
            ("builtins", "abs") | ("numpy", "abs" | "absolute" | "fabs") | ("math", "fabs") => {
                nargs(1, self)?;
                let (x, t) = self.scalar(&args[0])?;
                if t.is_float() {
                    Ok(V::S(self.b.op1("math.absf", &[x], t.mlir(), &[]), t))
                } else {
                    let t0 = t;
                    let t = if t.dt == DType::Bool { STy::INT } else { t };
                    let x = self.b.cast(x, t0, t);
                    Ok(V::S(self.b.op1("math.absi", &[x], t.mlir(), &[]), t))
                }
            }
            ("builtins", "max" | "min") | ("numpy", "maximum" | "minimum" | "fmax" | "fmin") => {
                let is_max = matches!(fname, "max" | "maximum" | "fmax");
                if args.len() == 1 {
                    return Err(self.err(e.span, format!("`{short}` of a single value needs a vector argument (`{short}(a[vi])` with `vi = appy.vidx(...)`)")));
                }
                if args.len() < 2 || (module == "numpy" && args.len() != 2) {
                    return Err(self.err(e.span, format!("`{short}` takes two arguments here")));
                }
                let mut acc = self.scalar(&args[0])?;
                for a in &args[1..] {
                    let b = self.scalar(a)?;
                    let t = promote(acc.1, b.1);
                    let x = self.b.cast(acc.0, acc.1, t);
                    let y = self.b.cast(b.0, b.1, t);
                    let name = match (t.is_float(), is_max) {
                        (true, true) => "arith.maximumf",
                        (true, false) => "arith.minimumf",
                        (false, true) => "arith.maxsi",
                        (false, false) => "arith.minsi",
                    };
                    acc = (self.b.bin(name, x, y), t);
                }
                Ok(V::S(acc.0, acc.1))
            }
            (_, "power") | ("math", "pow") if is_mathmod => {
                nargs(2, self)?;
                let a = self.scalar(&args[0])?;
                let b = self.scalar(&args[1])?;
                self.binary(BinOp::Pow, a, b, e.span)
            }
            (_, "arctan2" | "atan2") if is_mathmod => {
                nargs(2, self)?;
                let a = self.scalar(&args[0])?;
                let b = self.scalar(&args[1])?;
                let t = promote(a.1, b.1).to_float();
                let x = self.b.cast(a.0, a.1, t);
                let y = self.b.cast(b.0, b.1, t);
                Ok(V::S(self.b.bin("math.atan2", x, y), t))
            }
            (_, name) if is_mathmod && unary_math(name).is_some() => {
                nargs(1, self)?;
                let (x, t) = self.scalar(&args[0])?;
                let ft = if module == "math" { STy::FLOAT } else { t.to_float() };
                let x = self.b.cast(x, t, ft);
                let op = unary_math(name).expect("checked");
                let r = self.b.op1(op, &[x], ft.mlir(), &[]);
                if module == "math" && matches!(name, "floor" | "ceil") {
                    return Ok(V::S(self.b.cast(r, ft, STy::INT), STy::INT));
                }
                Ok(V::S(r, ft))
            }
            ("appy", "where") | ("numpy", "where") => {
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
            ("appy", "vidx") => {
                if args.len() < 2 || args.len() > 3 {
                    return Err(self.err(e.span, "appy.vidx(start, length, bound=N) takes a start, a length and a bound"));
                }
                let (s, ts) = self.scalar(&args[0])?;
                let (l, tl) = self.scalar(&args[1])?;
                let bound_e = args.get(2).or_else(|| kwargs.iter().find(|(k, _)| k.name == "bound").map(|(_, v)| v));
                let Some(be) = bound_e else { return Err(self.err(e.span, "appy.vidx needs a bound: appy.vidx(i, appy.MVL, bound=N)")) };
                let (bv, tb) = self.scalar(be)?;
                let start = self.b.cast(s, ts, STy::INT);
                let len = self.b.cast(l, tl, STy::INT);
                let bound = self.b.cast(bv, tb, STy::INT);
                Ok(V::Vidx { start, len, bound })
            }
            ("builtins", "sum") | ("numpy", "sum" | "max" | "min" | "amax" | "amin") => {
                Err(self.err(e.span, format!("`{short}` needs a vector argument (`{short}(a[vi])` with `vi = appy.vidx(...)`); whole-array reductions are not supported yet")))
            }
            ("builtins", "range") | (_, "prange") => Err(self.err(e.span, "range() can only be used as the iterable of a `for` loop")),
            _ => Err(self.err(func.span, format!("unsupported function `{short}`"))
                .with_note("help: supported: np.exp/log/sqrt/tanh/sin/cos/abs/maximum/minimum/floor/ceil/power, max/min/abs/float/int, appy.vidx/where/atomic_add/atomic_max/atomic_min")),
        }
    }
}
