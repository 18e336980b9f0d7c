//! Complex expressions as pairs of real ones, and real expressions whose operands may
//! be complex.

use super::build::*;
use super::{CVar, Cx};
use crate::ast::*;
use appy_ir::diag::{DResult, Diagnostic, Span};

impl Cx<'_> {
    /// The parts of `e` (a real `e` is its own real part).
    pub(super) fn parts(&mut self, e: &Expr) -> DResult<Parts> {
        if !self.is_complex(e) {
            return Ok((self.real(e)?, None));
        }
        let span = e.span;
        Ok(match &e.kind {
            ExprKind::Imag(v) => (float(0.0, span), Some(float(*v, span))),
            ExprKind::Name(n) => match self.vars[n] {
                CVar::Param(rank) => (
                    self.param_part(n, rank, &[], 0, span)?,
                    Some(self.param_part(n, rank, &[], 1, span)?),
                ),
                CVar::Local => (name(&part_name(n, 0), span), Some(name(&part_name(n, 1), span))),
            },
            ExprKind::Subscript { value, indices } => {
                let indices = self.indices(indices)?;
                if let ExprKind::Name(n) = &value.kind
                    && let Some(CVar::Param(rank)) = self.vars.get(n).copied()
                {
                    let re = self.param_part(n, rank, &indices, 0, span)?;
                    let im = self.param_part(n, rank, &indices, 1, span)?;
                    return Ok((re, Some(im)));
                }
                let (re, im) = self.parts(value)?;
                let sub = |v: Expr| {
                    mk(
                        ExprKind::Subscript {
                            value: Box::new(v),
                            indices: indices.clone(),
                        },
                        span,
                    )
                };
                let im = im.ok_or_else(|| self.err(span, "internal: a complex array without an imaginary part"))?;
                (sub(re), Some(sub(im)))
            }
            ExprKind::Attribute { value, attr } if attr.name == "T" => {
                let (re, im) = self.parts(value)?;
                let t = |v: Expr| {
                    mk(
                        ExprKind::Attribute {
                            value: Box::new(v),
                            attr: attr.clone(),
                        },
                        span,
                    )
                };
                (t(re), im.map(t))
            }
            ExprKind::Unary { op: UnaryOp::Pos, operand } => self.parts(operand)?,
            ExprKind::Unary { operand, .. } => {
                let (re, im) = self.parts(operand)?;
                (neg(re), im.map(neg))
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let l = self.parts(lhs)?;
                match op {
                    BinOp::Pow => self.power(l, rhs, span)?,
                    _ => {
                        let r = self.parts(rhs)?;
                        match op {
                            BinOp::Add | BinOp::Sub => add(*op, l, r),
                            BinOp::Mul => mul(l, r),
                            _ => self.div(l, r, span),
                        }
                    }
                }
            }
            ExprKind::IfExp { cond, then, orelse } => {
                let c = self.real(cond)?;
                let (tr, ti) = self.parts(then)?;
                let (er, ei) = self.parts(orelse)?;
                let ti = ti.unwrap_or_else(|| float(0.0, span));
                let ei = ei.unwrap_or_else(|| float(0.0, span));
                (if_exp(c.clone(), tr, er), Some(if_exp(c, ti, ei)))
            }
            ExprKind::Call { func, args, kwargs } => self.call_parts(e, func, args, kwargs)?,
            _ => return Err(self.unsupported(span, "complex values are not supported here")),
        })
    }

    /// Part `k` of the complex argument `n` at `indices` (padded with `:` to its rank).
    pub(super) fn param_part(&self, n: &str, rank: usize, indices: &[Index], k: usize, span: Span) -> DResult<Expr> {
        if indices.iter().any(|i| matches!(i, Index::NewAxis(_))) || indices.len() > rank {
            return Err(self
                .err(span, format!("this subscript of the complex array `{n}` is not supported"))
                .with_note("help: index a complex array with at most one integer or slice per axis"));
        }
        let mut ix = indices.to_vec();
        while ix.len() < rank {
            ix.push(Index::Slice {
                lower: None,
                upper: None,
                step: None,
                span,
            });
        }
        ix.push(Index::Expr(mk(ExprKind::Int(k as i64), span)));
        Ok(mk(
            ExprKind::Subscript {
                value: Box::new(name(n, span)),
                indices: ix,
            },
            span,
        ))
    }

    /// Indices with their expressions rewritten (they are real).
    pub(super) fn indices(&mut self, indices: &[Index]) -> DResult<Vec<Index>> {
        indices
            .iter()
            .map(|i| {
                Ok(match i {
                    Index::Expr(x) => Index::Expr(self.real_operand(x)?),
                    Index::Slice { lower, upper, step, span } => {
                        let mut f = |b: &Option<Box<Expr>>| -> DResult<Option<Box<Expr>>> {
                            b.as_ref().map(|x| self.real_operand(x).map(Box::new)).transpose()
                        };
                        Index::Slice {
                            lower: f(lower)?,
                            upper: f(upper)?,
                            step: f(step)?,
                            span: *span,
                        }
                    }
                    Index::NewAxis(s) => Index::NewAxis(*s),
                })
            })
            .collect()
    }

    /// `z ** n` for the constant integers NumPy computes by products.
    pub(super) fn power(&mut self, l: Parts, rhs: &Expr, span: Span) -> DResult<Parts> {
        let n = match &rhs.kind {
            ExprKind::Int(n) => Some(*n),
            ExprKind::Float(v) if v.fract() == 0.0 && v.abs() < 4.0 => Some(*v as i64),
            _ => None,
        };
        Ok(match n {
            Some(0) => (float(1.0, span), Some(float(0.0, span))),
            Some(1) => l,
            Some(2) => mul(l.clone(), l),
            Some(3) => {
                let sq = mul(l.clone(), l.clone());
                mul(l, sq)
            }
            _ => {
                return Err(self.unsupported(rhs.span, "a complex power other than ** 0, 1, 2 or 3 is not supported"));
            }
        })
    }

    /// NumPy's complex division (`loops.c.src`: Smith's method; a zero divisor divides
    /// by `|re|`, giving infinities or NaN as NumPy does).
    pub(super) fn div(&mut self, (a, b): Parts, (c, d): Parts, span: Span) -> Parts {
        let Some(d) = d else {
            // By a real: each part divided (CPython's result; NumPy's within rounding).
            let c = self.hoist(c);
            let b = b.map(|b| bin(BinOp::Div, b, c.clone()));
            return (bin(BinOp::Div, a, c), b);
        };
        let b = b.unwrap_or_else(|| float(0.0, span));
        let (c, d) = (self.hoist(c), self.hoist(d));
        let abs = |x: &Expr| np("abs", vec![x.clone()], span);
        let big_re = cmp(CmpOp::Ge, abs(&c), abs(&d));
        // `&` and `np.where`: element-wise, so that arrays divide too.
        let zero = bin(
            BinOp::BitAnd,
            cmp(CmpOp::Eq, c.clone(), float(0.0, span)),
            cmp(CmpOp::Eq, d.clone(), float(0.0, span)),
        );
        // |c| >= |d|: rat = d / c, scl = 1 / (c + d * rat).
        let rat1 = bin(BinOp::Div, d.clone(), c.clone());
        let scl1 = bin(
            BinOp::Div,
            float(1.0, span),
            bin(BinOp::Add, c.clone(), bin(BinOp::Mul, d.clone(), rat1.clone())),
        );
        let re1 = bin(
            BinOp::Mul,
            bin(BinOp::Add, a.clone(), bin(BinOp::Mul, b.clone(), rat1.clone())),
            scl1.clone(),
        );
        let im1 = bin(BinOp::Mul, bin(BinOp::Sub, b.clone(), bin(BinOp::Mul, a.clone(), rat1)), scl1);
        // |c| < |d|: rat = c / d, scl = 1 / (d + c * rat).
        let rat2 = bin(BinOp::Div, c.clone(), d.clone());
        let scl2 = bin(
            BinOp::Div,
            float(1.0, span),
            bin(BinOp::Add, d.clone(), bin(BinOp::Mul, c.clone(), rat2.clone())),
        );
        let re2 = bin(
            BinOp::Mul,
            bin(BinOp::Add, bin(BinOp::Mul, a.clone(), rat2.clone()), b.clone()),
            scl2.clone(),
        );
        let im2 = bin(BinOp::Mul, bin(BinOp::Sub, bin(BinOp::Mul, b.clone(), rat2), a.clone()), scl2);
        // Both zero: a / |c|, b / |c|.
        let re0 = bin(BinOp::Div, a, abs(&c));
        let im0 = bin(BinOp::Div, b, abs(&c));
        let select = |c: Expr, t: Expr, f: Expr| np("where", vec![c, t, f], span);
        let re = select(big_re.clone(), select(zero.clone(), re0, re1), re2);
        let im = select(big_re, select(zero, im0, im1), im2);
        (re, Some(im))
    }

    /// `e`, or a new variable holding it when it is not cheap to repeat and the
    /// statement being rewritten can be preceded by its computation.
    pub(super) fn hoist(&mut self, e: Expr) -> Expr {
        if atom(&e) {
            return e;
        }
        self.counter += 1;
        let n = format!("_appy_c{}", self.counter);
        let span = e.span;
        self.pre.push(assign(name(&n, span), e, span));
        name(&n, span)
    }

    /// The parts of a call with a complex result.
    pub(super) fn call_parts(&mut self, e: &Expr, func: &Expr, args: &[Expr], kwargs: &[(Ident, Expr)]) -> DResult<Parts> {
        let span = e.span;
        if let ExprKind::Attribute { value, attr } = &func.kind
            && matches!(attr.name.as_str(), "conjugate" | "conj")
            && self.is_complex(value)
        {
            if !args.is_empty() || !kwargs.is_empty() {
                return Err(self.err(span, format!("`.{}()` takes no arguments", attr.name)));
            }
            let (re, im) = self.parts(value)?;
            return Ok((re, im.map(neg)));
        }
        let q = self.qualified(func).unwrap_or_default();
        let short = q
            .strip_prefix("numpy.")
            .map(|s| format!("np.{s}"))
            .unwrap_or_else(|| q.trim_start_matches("builtins.").to_string());
        let one = |cx: &Self| -> DResult<&Expr> {
            match (args, kwargs) {
                ([a], []) => Ok(a),
                _ => Err(cx.err(span, format!("`{short}` of a complex value takes one argument here"))),
            }
        };
        match q.as_str() {
            "builtins.complex" => {
                if !kwargs.is_empty() || args.is_empty() || args.len() > 2 {
                    return Err(self.err(span, "write `complex(x)` or `complex(x, y)`"));
                }
                if args.len() == 1 && self.is_complex(&args[0]) {
                    return self.parts(&args[0]);
                }
                if args.iter().any(|a| self.is_complex(a)) {
                    return Err(self.err(span, "`complex(x, y)` takes real parts"));
                }
                // Python's `complex` converts its parts with `float`.
                let f = |cx: &mut Self, a: &Expr| -> DResult<Expr> {
                    Ok(match &a.kind {
                        ExprKind::Int(k) => float(*k as f64, a.span),
                        ExprKind::Float(_) => a.clone(),
                        _ => {
                            let x = cx.real(a)?;
                            call(name("float", a.span), vec![x], a.span)
                        }
                    })
                };
                let re = f(self, &args[0])?;
                let im = match args.get(1) {
                    Some(b) => f(self, b)?,
                    None => float(0.0, span),
                };
                Ok((re, Some(im)))
            }
            "numpy.complex64" | "numpy.complex128" | "numpy.csingle" | "numpy.cdouble" => {
                let a = one(self)?;
                let part = if matches!(q.as_str(), "numpy.complex64" | "numpy.csingle") {
                    "float32"
                } else {
                    "float64"
                };
                let (re, im) = self.parts(a)?;
                let im = im.unwrap_or_else(|| float(0.0, span));
                Ok((np(part, vec![re], span), Some(np(part, vec![im], span))))
            }
            "numpy.conj" | "numpy.conjugate" => {
                let (re, im) = self.parts(one(self)?)?;
                Ok((re, im.map(neg)))
            }
            "numpy.negative" => {
                let (re, im) = self.parts(one(self)?)?;
                Ok((neg(re), im.map(neg)))
            }
            "numpy.positive" => self.parts(one(self)?),
            "numpy.exp" => {
                let (re, im) = self.parts(one(self)?)?;
                let im = im.expect("complex");
                let ex = self.hoist(np("exp", vec![re], span));
                let im = self.hoist(im);
                Ok((
                    bin(BinOp::Mul, ex.clone(), np("cos", vec![im.clone()], span)),
                    Some(bin(BinOp::Mul, ex, np("sin", vec![im], span))),
                ))
            }
            "numpy.sum" => {
                let (a, rest) = args.split_first().ok_or_else(|| self.err(span, "`np.sum` needs an argument"))?;
                let rest = rest.iter().map(|x| self.real(x)).collect::<DResult<Vec<_>>>()?;
                let kwargs = kwargs
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), self.real(v)?)))
                    .collect::<DResult<Vec<_>>>()?;
                let (re, im) = self.parts(a)?;
                let sum = |x: Expr| {
                    let mut c = np("sum", std::iter::once(x).chain(rest.iter().cloned()).collect(), span);
                    if let ExprKind::Call { kwargs: k, .. } = &mut c.kind {
                        *k = kwargs.clone();
                    }
                    c
                };
                Ok((sum(re), im.map(sum)))
            }
            _ => Err(self.unsupported(span, format!("`{short}` of a complex value is not supported"))),
        }
    }

    /// A real operand: an error when it is complex.
    pub(super) fn real_operand(&mut self, e: &Expr) -> DResult<Expr> {
        if self.is_complex(e) {
            return Err(self.err(e.span, "a real value is expected here, not a complex one"));
        }
        self.real(e)
    }

    /// `z.shape`, `z.size`, `z.ndim` and `len(z)` of a complex array argument `z` (whose
    /// compiled form has one more axis).
    pub(super) fn param_shape(&self, value: &Expr, attr: &str, span: Span) -> Option<Expr> {
        let ExprKind::Name(n) = &value.kind else { return None };
        let Some(CVar::Param(rank)) = self.vars.get(n).copied() else {
            return None;
        };
        let axis = |k: usize| {
            let shape = mk(
                ExprKind::Attribute {
                    value: Box::new(value.clone()),
                    attr: Ident {
                        name: "shape".into(),
                        span,
                    },
                },
                span,
            );
            mk(
                ExprKind::Subscript {
                    value: Box::new(shape),
                    indices: vec![Index::Expr(mk(ExprKind::Int(k as i64), span))],
                },
                span,
            )
        };
        Some(match attr {
            "shape" => mk(ExprKind::Tuple((0..rank).map(axis).collect()), span),
            "size" => (0..rank)
                .map(axis)
                .reduce(|a, b| bin(BinOp::Mul, a, b))
                .unwrap_or(mk(ExprKind::Int(1), span)),
            "ndim" => mk(ExprKind::Int(rank as i64), span),
            "len" if rank > 0 => axis(0),
            _ => return None,
        })
    }

    /// A real-valued expression whose operands may be complex.
    pub(super) fn real(&mut self, e: &Expr) -> DResult<Expr> {
        let span = e.span;
        match &e.kind {
            ExprKind::Attribute { value, attr } if matches!(attr.name.as_str(), "shape" | "size" | "ndim") => {
                if let Some(x) = self.param_shape(value, &attr.name, span) {
                    return Ok(x);
                }
            }
            ExprKind::Call { func, args, kwargs } if args.len() == 1 && kwargs.is_empty() => {
                let what = match self.qualified(func).as_deref() {
                    Some("builtins.len") => Some("len"),
                    Some("numpy.shape") => Some("shape"),
                    Some("numpy.size") => Some("size"),
                    Some("numpy.ndim") => Some("ndim"),
                    _ => None,
                };
                if let Some(x) = what.and_then(|w| self.param_shape(&args[0], w, span)) {
                    return Ok(x);
                }
            }
            _ => {}
        }
        // `z.shape[k]` of a complex argument: its axis `k`.
        if let ExprKind::Subscript { value, indices } = &e.kind
            && let ExprKind::Attribute { value: arr, attr } = &value.kind
            && attr.name == "shape"
            && let [Index::Expr(k)] = indices.as_slice()
            && let ExprKind::Int(k) = k.kind
            && let Some(ExprKind::Tuple(axes)) = self.param_shape(arr, "shape", span).map(|x| x.kind)
        {
            let k = if k < 0 { k + axes.len() as i64 } else { k };
            if let Some(x) = usize::try_from(k).ok().and_then(|k| axes.get(k)) {
                return Ok(x.clone());
            }
        }
        match &e.kind {
            ExprKind::Attribute { value, attr } if self.is_complex(value) => {
                return match attr.name.as_str() {
                    "real" => Ok(self.parts(value)?.0),
                    "imag" => Ok(self.parts(value)?.1.expect("complex")),
                    "shape" | "size" | "ndim" => {
                        let re = self.parts(value)?.0;
                        Ok(mk(
                            ExprKind::Attribute {
                                value: Box::new(re),
                                attr: attr.clone(),
                            },
                            span,
                        ))
                    }
                    a => Err(self.unsupported(span, format!("`.{a}` of a complex value is not supported"))),
                };
            }
            // `z.real[i]`: the part of the element.
            ExprKind::Subscript { value, indices } => {
                if let ExprKind::Attribute { value: inner, attr } = &value.kind
                    && matches!(attr.name.as_str(), "real" | "imag")
                    && self.is_complex(inner)
                {
                    let sub = mk(
                        ExprKind::Subscript {
                            value: inner.clone(),
                            indices: indices.clone(),
                        },
                        span,
                    );
                    let (re, im) = self.parts(&sub)?;
                    return Ok(if attr.name == "real" { re } else { im.expect("complex") });
                }
            }
            ExprKind::Compare { first, rest } if rest.len() == 1 && (self.is_complex(first) || self.is_complex(&rest[0].1)) => {
                let (op, second) = &rest[0];
                if !matches!(op, CmpOp::Eq | CmpOp::Ne) {
                    return Err(self.unsupported(span, "complex numbers are not ordered"));
                }
                let (ar, ai) = self.parts(first)?;
                let (br, bi) = self.parts(second)?;
                let zero = || float(0.0, span);
                let re = cmp(*op, ar, br);
                let im = cmp(*op, ai.unwrap_or_else(zero), bi.unwrap_or_else(zero));
                let op = if *op == CmpOp::Eq { BoolOpKind::And } else { BoolOpKind::Or };
                return Ok(mk(ExprKind::BoolOp { op, values: vec![re, im] }, span));
            }
            ExprKind::Call { func, args, kwargs } if args.len() == 1 && kwargs.is_empty() && self.is_complex(&args[0]) => {
                match self.qualified(func).as_deref() {
                    Some("builtins.abs" | "numpy.abs" | "numpy.absolute") => {
                        let (re, im) = self.parts(&args[0])?;
                        return Ok(np("hypot", vec![re, im.expect("complex")], span));
                    }
                    Some("numpy.real") => return Ok(self.parts(&args[0])?.0),
                    Some("numpy.imag") => return Ok(self.parts(&args[0])?.1.expect("complex")),
                    Some("builtins.len" | "numpy.shape" | "numpy.size" | "numpy.ndim") => {
                        let re = self.parts(&args[0])?.0;
                        return Ok(call((**func).clone(), vec![re], span));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        // Any other expression: its operands must be real.
        let mut out = e.clone();
        let mut failed = None;
        out.for_each_child_mut(&mut |c| {
            if failed.is_some() {
                return;
            }
            if self.is_complex(c) {
                failed = Some(self.complex_operand_error(e, c));
                return;
            }
            match self.real(c) {
                Ok(x) => *c = x,
                Err(d) => failed = Some(d),
            }
        });
        match failed {
            Some(d) => Err(d),
            None => Ok(out),
        }
    }

    pub(super) fn complex_operand_error(&self, parent: &Expr, operand: &Expr) -> Diagnostic {
        let what = match &parent.kind {
            ExprKind::Call { func, .. } => {
                let q = self.qualified(func).unwrap_or_default();
                match q.as_str() {
                    "numpy.empty_like" | "numpy.zeros_like" | "numpy.ones_like" | "numpy.full_like" | "numpy.copy" => {
                        return self
                            .err(parent.span, "allocating complex arrays is not supported")
                            .with_note("help: pass the array as an argument");
                    }
                    _ => {}
                }
                let short = q
                    .strip_prefix("numpy.")
                    .map(|s| format!("np.{s}"))
                    .unwrap_or_else(|| q.trim_start_matches("builtins.").to_string());
                format!("`{short}` of a complex value is not supported")
            }
            ExprKind::Compare { .. } => "complex numbers are not ordered".to_string(),
            ExprKind::Binary { op, .. } => format!("the operator `{}` is not defined on complex values here", op.symbol()),
            _ => "a complex value is not supported here".to_string(),
        };
        self.unsupported(operand.span, what)
    }
}
