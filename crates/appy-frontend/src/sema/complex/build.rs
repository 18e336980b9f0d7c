//! Building the rewritten expressions and statements, and the complex formulas on
//! parts that need no context (`+`, `-`, `*`).

use super::ALIAS;
use crate::ast::*;

/// `(real part, imaginary part)`; `None`: an imaginary part of zero (a real value).
pub(super) type Parts = (Expr, Option<Expr>);

pub(super) fn mk(kind: ExprKind, span: Span) -> Expr {
    Expr { kind, span }
}
pub(super) fn name(n: &str, span: Span) -> Expr {
    mk(ExprKind::Name(n.to_string()), span)
}
pub(super) fn float(v: f64, span: Span) -> Expr {
    mk(ExprKind::Float(v), span)
}
pub(super) fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
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
pub(super) fn neg(e: Expr) -> Expr {
    let span = e.span;
    mk(
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand: Box::new(e),
        },
        span,
    )
}
pub(super) fn call(func: Expr, args: Vec<Expr>, span: Span) -> Expr {
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
pub(super) fn np(f: &str, args: Vec<Expr>, span: Span) -> Expr {
    let func = mk(
        ExprKind::Attribute {
            value: Box::new(name(ALIAS, span)),
            attr: Ident { name: f.into(), span },
        },
        span,
    );
    call(func, args, span)
}
pub(super) fn if_exp(cond: Expr, then: Expr, orelse: Expr) -> Expr {
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
pub(super) fn cmp(op: CmpOp, l: Expr, r: Expr) -> Expr {
    let span = l.span.to(r.span);
    mk(
        ExprKind::Compare {
            first: Box::new(l),
            rest: vec![(op, r)],
        },
        span,
    )
}
pub(super) fn assign(target: Expr, value: Expr, span: Span) -> Stmt {
    Stmt {
        kind: StmtKind::Assign {
            targets: vec![target],
            value,
        },
        span,
        pragma: None,
    }
}
pub(super) fn part_name(n: &str, k: usize) -> String {
    format!("_appy_{n}_{}", ["re", "im"][k])
}
/// Whether `e` reads a name in `names`.
pub(super) fn reads(e: &Expr, names: &[String]) -> bool {
    let mut found = false;
    let mut visit = |x: &Expr| found |= matches!(&x.kind, ExprKind::Name(n) if names.contains(n));
    walk(e, &mut visit);
    found
}
pub(super) fn walk<'e>(e: &'e Expr, f: &mut impl FnMut(&'e Expr)) {
    f(e);
    e.for_each_child(&mut |c| walk(c, f));
}
/// Whether `e` is cheap enough to repeat (a name, a constant, an element of an array
/// at names or constants).
pub(super) fn atom(e: &Expr) -> bool {
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

pub(super) fn add(op: BinOp, (a, b): Parts, (c, d): Parts) -> Parts {
    let re = bin(op, a, c);
    let im = match (b, d) {
        (Some(b), Some(d)) => Some(bin(op, b, d)),
        (Some(b), None) => Some(b),
        (None, Some(d)) if op == BinOp::Sub => Some(neg(d)),
        (None, d) => d,
    };
    (re, im)
}

pub(super) fn mul((a, b): Parts, (c, d): Parts) -> Parts {
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
