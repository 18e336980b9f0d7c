//! Complex numbers, split into their real and imaginary parts before analysis.
//!
//! A `complex64`/`complex128` array argument of rank `r` reaches compiled code as a
//! float array of rank `r + 1` whose last axis (of 2) holds the parts
//! ([`ArgType::abi`]): NumPy's own layout, so nothing is copied. This pass rewrites the
//! function so that every complex value is a pair of real expressions, and everything
//! after it (typing, loops, both back ends) sees real code only:
//!
//! * `z[i]` of a complex array argument is `(z[i, 0], z[i, 1])`, `z[1:n]` is
//!   `(z[1:n, 0], z[1:n, 1])`;
//! * a variable assigned a complex value (`w = complex(x, y)`, `row = z[i]`) becomes two
//!   variables, `_appy_w_re` and `_appy_w_im`;
//! * `2j`, `complex(x, y)` (parts converted with `float`, as Python does),
//!   `np.complex64(x)`, `np.complex128(x)`;
//! * `+`, `-`, `*` by the textbook formulas, `/` by NumPy's (Smith's method, a zero
//!   divisor giving NumPy's infinities), `**` by the constant integers 0 to 3 (products,
//!   as NumPy computes them), unary `-`; a divisor that is not a name or an element is
//!   computed once, into a variable, before the statement;
//! * `abs(z)`, `np.abs`, `np.absolute`: `np.hypot` of the parts (NumPy's `npy_cabs`);
//! * `.real`, `.imag`, `np.real`, `np.imag`, `np.conj`, `np.conjugate`, `z.conjugate()`,
//!   `z.conj()`, `np.exp` (`exp(re) * (cos(im), sin(im))`), `np.sum` (of each part),
//!   `==` and `!=`;
//! * `z[i] = w` stores both parts; `s += z[i]` updates both (so a `shared(s)` reduction of
//!   a complex `s` is two reductions, and the pragma names both parts).
//!
//! The parts follow NumPy's promotion by themselves: `complex64` parts are `float32`,
//! and a Python `complex` is weak like a Python `float`. What this pass does not split
//! is a located error that says what to write: other functions of complex values,
//! complex scalar arguments and results, complex allocations, ordering comparisons,
//! storing a complex value into a real array (NumPy discards the imaginary part with a
//! warning).

use super::prelude::ALIAS;
use super::resolve::{Imports, qualify};
use crate::ast::*;
use appy_ir::diag::{DResult, Diagnostic, SourceFile, Span};
use appy_ir::types::ArgType;
use std::collections::HashMap;

/// What appy does with complex numbers (the help line of its errors).
const SUPPORTED: &str =
    "help: appy computes +, -, *, /, ** 0..3, abs, .real, .imag, np.conj, np.exp, np.sum, == and != of complex numbers, and complex(x, y)";

/// A complex variable.
#[derive(Clone, Copy, Debug, PartialEq)]
enum CVar {
    /// A complex array argument of this rank (a float array of one more axis).
    Param(usize),
    /// A local variable: two variables hold its parts.
    Local,
}

/// The function with every complex value split into parts, and the argument types
/// compiled code takes ([`ArgType::abi`]). Functions without complex values are
/// returned unchanged.
pub(crate) fn split(file: &SourceFile, mut f: Function, args: &[ArgType], imports: &Imports) -> DResult<(Function, Vec<ArgType>)> {
    let mut vars = HashMap::new();
    for (p, a) in f.params.iter().zip(args) {
        match a {
            ArgType::Array { dtype, rank } if dtype.is_complex() => {
                vars.insert(p.name.clone(), CVar::Param(*rank));
            }
            ArgType::Scalar { dtype, .. } if dtype.is_complex() => {
                return Err(Diagnostic::error(
                    file,
                    p.span,
                    format!("`{}` is a complex scalar, which appy does not take as an argument", p.name),
                )
                .with_note(format!(
                    "help: pass its parts and write `{0} = complex({0}_re, {0}_im)` in the function",
                    p.name
                )));
            }
            _ => {}
        }
    }
    if vars.is_empty() && !mentions_complex(&f.body, imports) {
        return Ok((f, args.to_vec()));
    }
    let mut cx = Cx {
        file,
        imports,
        vars,
        counter: 0,
        pre: vec![],
    };
    // Variables assigned a complex value anywhere are complex (to a fixed point: `w = z`
    // makes `w` complex, then `v = w` makes `v` complex).
    loop {
        let before = cx.vars.len();
        cx.mark(&f.body);
        if cx.vars.len() == before {
            break;
        }
    }
    f.body = cx.block(std::mem::take(&mut f.body))?;
    Ok((f, args.iter().map(ArgType::abi).collect()))
}

/// Whether the body writes a complex literal or constructor (the fast path of [`split`]).
fn mentions_complex(body: &[Stmt], imports: &Imports) -> bool {
    let mut found = false;
    walk_stmts(body, &mut |e: &Expr| {
        found |= match &e.kind {
            ExprKind::Imag(_) => true,
            ExprKind::Call { func, .. } => matches!(
                qualify(imports, func).as_deref(),
                Some("builtins.complex" | "numpy.complex64" | "numpy.complex128" | "numpy.csingle" | "numpy.cdouble")
            ),
            _ => false,
        }
    });
    found
}

/// Calls `f` on every expression of `body`, nested ones included.
fn walk_stmts<'e>(body: &'e [Stmt], f: &mut impl FnMut(&'e Expr)) {
    for s in body {
        match &s.kind {
            StmtKind::Assign { targets, value } => {
                targets.iter().for_each(|t| walk(t, f));
                walk(value, f);
            }
            StmtKind::AugAssign { target, value, .. } => {
                walk(target, f);
                walk(value, f);
            }
            StmtKind::For { iter, body, .. } => {
                walk(iter, f);
                walk_stmts(body, f);
            }
            StmtKind::While { cond, body } => {
                walk(cond, f);
                walk_stmts(body, f);
            }
            StmtKind::If { cond, then, orelse } => {
                walk(cond, f);
                walk_stmts(then, f);
                walk_stmts(orelse, f);
            }
            StmtKind::Return(Some(e)) | StmtKind::Expr(e) => walk(e, f),
            StmtKind::Return(None) | StmtKind::Pass | StmtKind::Continue | StmtKind::Break => {}
        }
    }
}

struct Cx<'a> {
    file: &'a SourceFile,
    imports: &'a Imports,
    vars: HashMap<String, CVar>,
    counter: usize,
    /// Statements to put before the one being rewritten (divisors computed once).
    pre: Vec<Stmt>,
}

/// `(real part, imaginary part)`; `None`: an imaginary part of zero (a real value).
type Parts = (Expr, Option<Expr>);

fn mk(kind: ExprKind, span: Span) -> Expr {
    Expr { kind, span }
}
fn name(n: &str, span: Span) -> Expr {
    mk(ExprKind::Name(n.to_string()), span)
}
fn float(v: f64, span: Span) -> Expr {
    mk(ExprKind::Float(v), span)
}
fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
    let span = l.span.to(r.span);
    mk(
        ExprKind::Binary {
            op,
            lhs: Box::new(l),
            rhs: Box::new(r),
        },
        span,
    )
}
fn neg(e: Expr) -> Expr {
    let span = e.span;
    mk(
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand: Box::new(e),
        },
        span,
    )
}
fn call(func: Expr, args: Vec<Expr>, span: Span) -> Expr {
    mk(
        ExprKind::Call {
            func: Box::new(func),
            args,
            kwargs: vec![],
        },
        span,
    )
}
/// `np.<f>(args)` through the reserved alias.
fn np(f: &str, args: Vec<Expr>, span: Span) -> Expr {
    let func = mk(
        ExprKind::Attribute {
            value: Box::new(name(ALIAS, span)),
            attr: Ident { name: f.into(), span },
        },
        span,
    );
    call(func, args, span)
}
fn if_exp(cond: Expr, then: Expr, orelse: Expr) -> Expr {
    let span = then.span.to(orelse.span);
    mk(
        ExprKind::IfExp {
            cond: Box::new(cond),
            then: Box::new(then),
            orelse: Box::new(orelse),
        },
        span,
    )
}
fn cmp(op: CmpOp, l: Expr, r: Expr) -> Expr {
    let span = l.span.to(r.span);
    mk(
        ExprKind::Compare {
            first: Box::new(l),
            rest: vec![(op, r)],
        },
        span,
    )
}
fn assign(target: Expr, value: Expr, span: Span) -> Stmt {
    Stmt {
        kind: StmtKind::Assign {
            targets: vec![target],
            value,
        },
        span,
        pragma: None,
    }
}
fn part_name(n: &str, k: usize) -> String {
    format!("_appy_{n}_{}", ["re", "im"][k])
}
/// Whether `e` reads a name in `names`.
fn reads(e: &Expr, names: &[String]) -> bool {
    let mut found = false;
    let mut visit = |x: &Expr| found |= matches!(&x.kind, ExprKind::Name(n) if names.contains(n));
    walk(e, &mut visit);
    found
}
fn walk<'e>(e: &'e Expr, f: &mut impl FnMut(&'e Expr)) {
    f(e);
    e.for_each_child(&mut |c| walk(c, f));
}
/// Whether `e` is cheap enough to repeat (a name, a constant, an element of an array
/// at names or constants).
fn atom(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Name(_) | ExprKind::Int(_) | ExprKind::Float(_) => true,
        ExprKind::Unary { operand, .. } => atom(operand),
        ExprKind::Subscript { value, indices } => {
            atom(value)
                && indices.iter().all(|i| match i {
                    Index::Expr(x) => atom(x),
                    _ => true,
                })
        }
        _ => false,
    }
}

impl Cx<'_> {
    fn err(&self, span: Span, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.file, span, msg)
    }

    /// An error for something appy does not compute on complex numbers, with the list of
    /// what it does.
    fn unsupported(&self, span: Span, msg: impl Into<String>) -> Diagnostic {
        self.err(span, msg).with_note(SUPPORTED)
    }

    fn qualified(&self, func: &Expr) -> Option<String> {
        qualify(self.imports, func)
    }

    /// Marks the variables assigned complex values.
    fn mark(&mut self, body: &[Stmt]) {
        for s in body {
            match &s.kind {
                StmtKind::Assign { targets, value } if self.is_complex(value) => {
                    for t in targets {
                        if let ExprKind::Name(n) = &t.kind {
                            self.vars.entry(n.clone()).or_insert(CVar::Local);
                        }
                    }
                }
                StmtKind::AugAssign { target, value, .. } => {
                    if let ExprKind::Name(n) = &target.kind
                        && self.is_complex(value)
                    {
                        self.vars.entry(n.clone()).or_insert(CVar::Local);
                    }
                }
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => self.mark(body),
                StmtKind::If { then, orelse, .. } => {
                    self.mark(then);
                    self.mark(orelse);
                }
                _ => {}
            }
        }
    }

    /// Whether `e` is a complex value (scalar or array).
    fn is_complex(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Imag(_) => true,
            ExprKind::Name(n) => self.vars.contains_key(n),
            ExprKind::Subscript { value, .. } => self.is_complex(value),
            ExprKind::Attribute { value, attr } => attr.name == "T" && self.is_complex(value),
            ExprKind::Unary { op, operand } => matches!(op, UnaryOp::Neg | UnaryOp::Pos) && self.is_complex(operand),
            ExprKind::Binary { op, lhs, rhs } => {
                matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Pow)
                    && (self.is_complex(lhs) || self.is_complex(rhs))
            }
            ExprKind::IfExp { then, orelse, .. } => self.is_complex(then) || self.is_complex(orelse),
            ExprKind::Call { func, args, .. } => {
                if let ExprKind::Attribute { value, attr } = &func.kind
                    && matches!(attr.name.as_str(), "conjugate" | "conj")
                    && self.is_complex(value)
                {
                    return true;
                }
                match self.qualified(func).as_deref() {
                    Some("builtins.complex" | "numpy.complex64" | "numpy.complex128" | "numpy.csingle" | "numpy.cdouble") => true,
                    Some("numpy.conj" | "numpy.conjugate" | "numpy.exp" | "numpy.sum" | "numpy.negative" | "numpy.positive") => {
                        args.first().is_some_and(|a| self.is_complex(a))
                    }
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// The parts of `e` (a real `e` is its own real part).
    fn parts(&mut self, e: &Expr) -> DResult<Parts> {
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
    fn param_part(&self, n: &str, rank: usize, indices: &[Index], k: usize, span: Span) -> DResult<Expr> {
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
    fn indices(&mut self, indices: &[Index]) -> DResult<Vec<Index>> {
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
    fn power(&mut self, l: Parts, rhs: &Expr, span: Span) -> DResult<Parts> {
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
    fn div(&mut self, (a, b): Parts, (c, d): Parts, span: Span) -> Parts {
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
    fn hoist(&mut self, e: Expr) -> Expr {
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
    fn call_parts(&mut self, e: &Expr, func: &Expr, args: &[Expr], kwargs: &[(Ident, Expr)]) -> DResult<Parts> {
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
    fn real_operand(&mut self, e: &Expr) -> DResult<Expr> {
        if self.is_complex(e) {
            return Err(self.err(e.span, "a real value is expected here, not a complex one"));
        }
        self.real(e)
    }

    /// `z.shape`, `z.size`, `z.ndim` and `len(z)` of a complex array argument `z` (whose
    /// compiled form has one more axis).
    fn param_shape(&self, value: &Expr, attr: &str, span: Span) -> Option<Expr> {
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
    fn real(&mut self, e: &Expr) -> DResult<Expr> {
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

    fn complex_operand_error(&self, parent: &Expr, operand: &Expr) -> Diagnostic {
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
            ExprKind::Binary { op, .. } => format!("the operator `{}` is not defined on complex values here", binop_text(*op)),
            _ => "a complex value is not supported here".to_string(),
        };
        self.unsupported(operand.span, what)
    }

    /// The statements of a block, rewritten.
    fn block(&mut self, body: Vec<Stmt>) -> DResult<Vec<Stmt>> {
        let mut out = Vec::with_capacity(body.len());
        for s in body {
            let mut rewritten = self.stmt(s)?;
            out.append(&mut std::mem::take(&mut self.pre));
            out.append(&mut rewritten);
        }
        Ok(out)
    }

    fn stmt(&mut self, s: Stmt) -> DResult<Vec<Stmt>> {
        let span = s.span;
        let pragma = match s.pragma {
            Some(p) => Some(self.pragma(p)?),
            None => None,
        };
        let mut out = match s.kind {
            StmtKind::Assign { targets, value } => {
                let complex = self.is_complex(&value) || targets.iter().any(|t| self.is_complex(t));
                if !complex {
                    let value = self.real(&value)?;
                    let targets = targets.iter().map(|t| self.real(t)).collect::<DResult<Vec<_>>>()?;
                    vec![Stmt {
                        kind: StmtKind::Assign { targets, value },
                        span,
                        pragma: None,
                    }]
                } else {
                    let [target] = targets.as_slice() else {
                        return Err(self
                            .err(span, "a complex value assigned to several targets is not supported")
                            .with_note("help: assign it to one name, then copy it"));
                    };
                    self.store(target, &value, span)?
                }
            }
            StmtKind::AugAssign { target, op, value } => {
                if !self.is_complex(&target) && !self.is_complex(&value) {
                    let target = self.real(&target)?;
                    let value = self.real(&value)?;
                    vec![Stmt {
                        kind: StmtKind::AugAssign { target, op, value },
                        span,
                        pragma: None,
                    }]
                } else {
                    self.update(&target, op, &value, span)?
                }
            }
            StmtKind::For { var, iter, body, stop } => {
                let iter = self.real_operand(&iter)?;
                let pre = std::mem::take(&mut self.pre);
                let body = self.block(body)?;
                self.pre = pre;
                vec![Stmt {
                    kind: StmtKind::For { var, iter, body, stop },
                    span,
                    pragma: None,
                }]
            }
            StmtKind::While { cond, body } => {
                let cond = self.real_operand(&cond)?;
                // The condition is evaluated each time: nothing may be hoisted before it.
                let hoisted = std::mem::take(&mut self.pre);
                if !hoisted.is_empty() {
                    return Err(self
                        .err(cond.span, "this complex computation is too large for a `while` condition")
                        .with_note("help: compute it into a variable in the loop"));
                }
                let body = self.block(body)?;
                vec![Stmt {
                    kind: StmtKind::While { cond, body },
                    span,
                    pragma: None,
                }]
            }
            StmtKind::If { cond, then, orelse } => {
                let cond = self.real_operand(&cond)?;
                let pre = std::mem::take(&mut self.pre);
                let then = self.block(then)?;
                let orelse = self.block(orelse)?;
                self.pre = pre;
                vec![Stmt {
                    kind: StmtKind::If { cond, then, orelse },
                    span,
                    pragma: None,
                }]
            }
            StmtKind::Return(Some(e)) => {
                let complex = match &e.kind {
                    ExprKind::Tuple(es) => es.iter().any(|x| self.is_complex(x)),
                    _ => self.is_complex(&e),
                };
                if complex {
                    return Err(self
                        .err(e.span, "returning a complex value is not supported")
                        .with_note("help: store it into a complex array argument, or return its `.real` and `.imag`"));
                }
                vec![Stmt {
                    kind: StmtKind::Return(Some(self.real(&e)?)),
                    span,
                    pragma: None,
                }]
            }
            StmtKind::Expr(e) => {
                let e = self.real_operand(&e)?;
                vec![Stmt {
                    kind: StmtKind::Expr(e),
                    span,
                    pragma: None,
                }]
            }
            k @ (StmtKind::Return(None) | StmtKind::Pass | StmtKind::Continue | StmtKind::Break) => vec![Stmt {
                kind: k,
                span,
                pragma: None,
            }],
        };
        if let Some(p) = pragma {
            out[0].pragma = Some(p);
        }
        Ok(out)
    }

    /// A pragma whose `shared(...)` names complex variables names their parts.
    fn pragma(&self, mut p: Pragma) -> DResult<Pragma> {
        match &mut p.kind {
            PragmaKind::ParallelFor { shared, .. } => {
                let mut out = vec![];
                for s in shared.drain(..) {
                    if self.vars.get(&s.name) == Some(&CVar::Local) {
                        for k in 0..2 {
                            out.push(Ident {
                                name: part_name(&s.name, k),
                                span: s.span,
                            });
                        }
                    } else {
                        out.push(s);
                    }
                }
                *shared = out;
            }
            PragmaKind::Tensor(dims) => {
                for d in dims.iter() {
                    for prop in &d.props {
                        if let TensorProp::Reduce { var, .. } = prop
                            && self.vars.contains_key(&var.name)
                        {
                            return Err(self
                                .err(var.span, "a tensor reduction into a complex variable is not supported")
                                .with_note("help: reduce into two real variables"));
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(p)
    }

    /// The parts of a store target: a complex variable or an element or slice of a
    /// complex array.
    fn target_parts(&mut self, target: &Expr) -> DResult<Option<(Expr, Expr, Vec<String>)>> {
        match &target.kind {
            ExprKind::Name(n) => match self.vars.get(n) {
                Some(CVar::Local) => {
                    let (re, im) = (part_name(n, 0), part_name(n, 1));
                    Ok(Some((name(&re, target.span), name(&im, target.span), vec![re])))
                }
                Some(CVar::Param(_)) => Err(self
                    .err(target.span, format!("the complex array argument `{n}` cannot be rebound"))
                    .with_note(format!("help: write into it: `{n}[:] = ...`"))),
                None => Ok(None),
            },
            ExprKind::Subscript { value, .. } if self.is_complex(value) => {
                let (re, im) = self.parts(target)?;
                // What a store into an array may change: every complex array.
                let arrays = self
                    .vars
                    .iter()
                    .flat_map(|(n, v)| match v {
                        CVar::Param(_) => vec![n.clone()],
                        CVar::Local => vec![part_name(n, 0), part_name(n, 1)],
                    })
                    .collect();
                Ok(Some((re, im.expect("complex"), arrays)))
            }
            _ => Ok(None),
        }
    }

    /// `target = value` with a complex side.
    fn store(&mut self, target: &Expr, value: &Expr, span: Span) -> DResult<Vec<Stmt>> {
        if matches!(target.kind, ExprKind::Tuple(_)) {
            return Err(self
                .err(span, "complex values in a tuple assignment are not supported")
                .with_note("help: assign each value on its own line"));
        }
        let Some((tre, tim, written)) = self.target_parts(target)? else {
            return Err(self
                .err(target.span, "storing a complex value into a real array discards its imaginary part")
                .with_note("help: store `.real` (or `abs(...)`) explicitly, or make the array complex"));
        };
        let (re, im) = self.parts(value)?;
        let im = im.unwrap_or_else(|| float(0.0, value.span));
        Ok(self.ordered(tre, tim, re, im, &written, span))
    }

    /// `t_re = re; t_im = im`, in an order in which neither reads a part the other
    /// wrote (through a temporary when both would).
    fn ordered(&mut self, tre: Expr, tim: Expr, re: Expr, im: Expr, written: &[String], span: Span) -> Vec<Stmt> {
        if !reads(&im, written) {
            vec![assign(tre, re, span), assign(tim, im, span)]
        } else if !reads(&re, written) {
            vec![assign(tim, im, span), assign(tre, re, span)]
        } else {
            self.counter += 1;
            let t = format!("_appy_c{}", self.counter);
            vec![
                assign(name(&t, span), im, span),
                assign(tre, re, span),
                assign(tim, name(&t, span), span),
            ]
        }
    }

    /// `target op= value` with a complex side: `+=` and `-=` update each part (a
    /// reduction stays one); the others are `target = target op value`.
    fn update(&mut self, target: &Expr, op: BinOp, value: &Expr, span: Span) -> DResult<Vec<Stmt>> {
        let expanded = || {
            mk(
                ExprKind::Binary {
                    op,
                    lhs: Box::new(target.clone()),
                    rhs: Box::new(value.clone()),
                },
                span,
            )
        };
        if !matches!(op, BinOp::Add | BinOp::Sub) {
            return self.store(target, &expanded(), span);
        }
        let Some((tre, tim, written)) = self.target_parts(target)? else {
            return Err(self
                .err(target.span, "updating a real value with a complex one discards its imaginary part")
                .with_note("help: update it with `.real` explicitly, or make it complex"));
        };
        let (re, im) = self.parts(value)?;
        // The real part's update must not change what the imaginary part's reads.
        if im.as_ref().is_some_and(|im| reads(im, &written)) {
            return self.store(target, &expanded(), span);
        }
        let upd = |t: Expr, v: Expr| Stmt {
            kind: StmtKind::AugAssign { target: t, op, value: v },
            span,
            pragma: None,
        };
        let mut out = vec![upd(tre, re)];
        if let Some(im) = im {
            out.push(upd(tim, im));
        }
        Ok(out)
    }
}

fn add(op: BinOp, (a, b): Parts, (c, d): Parts) -> Parts {
    let re = bin(op, a, c);
    let im = match (b, d) {
        (Some(b), Some(d)) => Some(bin(op, b, d)),
        (Some(b), None) => Some(b),
        (None, Some(d)) if op == BinOp::Sub => Some(neg(d)),
        (None, d) => d,
    };
    (re, im)
}

fn mul((a, b): Parts, (c, d): Parts) -> Parts {
    match (b, d) {
        (Some(b), Some(d)) => (
            bin(
                BinOp::Sub,
                bin(BinOp::Mul, a.clone(), c.clone()),
                bin(BinOp::Mul, b.clone(), d.clone()),
            ),
            Some(bin(BinOp::Add, bin(BinOp::Mul, a, d), bin(BinOp::Mul, b, c))),
        ),
        (Some(b), None) => (bin(BinOp::Mul, a, c.clone()), Some(bin(BinOp::Mul, b, c))),
        (None, Some(d)) => (bin(BinOp::Mul, a.clone(), c), Some(bin(BinOp::Mul, a, d))),
        (None, None) => (bin(BinOp::Mul, a, c), None),
    }
}

fn binop_text(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::FloorDiv => "//",
        BinOp::Mod => "%",
        BinOp::Pow => "**",
        BinOp::MatMul => "@",
        BinOp::BitAnd => "&",
        BinOp::BitOr => "|",
        BinOp::BitXor => "^",
        BinOp::LShift => "<<",
        BinOp::RShift => ">>",
    }
}
