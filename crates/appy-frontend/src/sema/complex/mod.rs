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
use build::walk;
use std::collections::HashMap;

mod build;
mod parts;
mod stmts;

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

/// The state of the rewrite: the complex variables and the statements to emit before
/// the current one.
struct Cx<'a> {
    file: &'a SourceFile,
    imports: &'a Imports,
    vars: HashMap<String, CVar>,
    counter: usize,
    /// Statements to put before the one being rewritten (divisors computed once).
    pre: Vec<Stmt>,
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
}
