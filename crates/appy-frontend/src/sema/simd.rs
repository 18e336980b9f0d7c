//! Automatic vectorization of inner loops (seed 000): whether an unannotated loop may
//! run as a simd loop.

use super::names::*;
use super::reductions::*;
use super::resolve::*;
use crate::ast::*;
use appy_ir::diag::Span;

/// Why a loop may not run as a simd loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NotVectorizable {
    /// The body holds a statement other than assignments and `if` (a loop: the loop is
    /// not innermost; a call on a line of its own; a pragma other than `atomic`).
    Statement(Span),
    /// A scalar defined outside the loop is assigned without being a reduction.
    Scalar(String),
    /// An array element the loop writes is accessed at another index, or written at an
    /// index that does not follow the loop (a dependence between iterations).
    Dependence(String),
}

/// Whether an unannotated loop over `var` may run as a simd loop: it is innermost, its
/// scalars are private or reductions, and no array element it writes is read at another
/// index (no loop-carried dependence through memory).
pub(crate) fn vectorizable(
    body: &[Stmt],
    var: &Ident,
    defined_outside: &dyn Fn(&str) -> bool,
    imports: &Imports,
) -> Result<(), NotVectorizable> {
    /// The first statement that is not a plain assignment (or `if` of them).
    fn not_simple(stmts: &[Stmt]) -> Option<Span> {
        stmts.iter().find_map(|s| match &s.kind {
            StmtKind::Assign { .. } | StmtKind::AugAssign { .. } | StmtKind::Pass => {
                let ok = s.pragma.is_none() || matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic));
                (!ok).then_some(s.span)
            }
            StmtKind::If { then, orelse, .. } => not_simple(then).or_else(|| not_simple(orelse)),
            _ => Some(s.span),
        })
    }
    if let Some(sp) = not_simple(body) {
        return Err(NotVectorizable::Statement(sp));
    }
    let mut assigned = vec![];
    ast_names_assigned(body, &mut assigned);
    for (n, _) in &assigned {
        if defined_outside(n) && reduction_op(n, body, imports).is_none() {
            return Err(NotVectorizable::Scalar(n.clone()));
        }
    }
    // Stores and loads per array, by index text.
    /// The indices as text, without spans (equal indices give equal keys).
    fn index_key(indices: &[Index]) -> String {
        let ix: Vec<Index> = indices
            .iter()
            .map(|i| match i {
                Index::Expr(x) => Index::Expr(spanless(x)),
                o => o.clone(),
            })
            .collect();
        format!("{ix:?}").replace(|c: char| c.is_whitespace(), "")
    }
    fn spanless(e: &Expr) -> Expr {
        let mut e = e.clone();
        strip_spans(&mut e);
        e
    }
    fn collect(stmts: &[Stmt], stores: &mut Vec<(String, String, bool, bool)>, loads: &mut Vec<(String, String)>) {
        fn loads_in(e: &Expr, loads: &mut Vec<(String, String)>) {
            match &e.kind {
                ExprKind::Subscript { value, indices } => {
                    if let ExprKind::Name(n) = &value.kind {
                        loads.push((n.clone(), index_key(indices)));
                    }
                    for i in indices {
                        if let Index::Expr(x) = i {
                            loads_in(x, loads);
                        }
                    }
                }
                _ => e.for_each_child(&mut |c| loads_in(c, loads)),
            }
        }
        for s in stmts {
            match &s.kind {
                StmtKind::Assign { targets, value } => {
                    for t in targets {
                        if let ExprKind::Subscript { value: v, indices } = &t.kind
                            && let ExprKind::Name(n) = &v.kind
                        {
                            stores.push((n.clone(), index_key(indices), false, false));
                        }
                    }
                    loads_in(value, loads);
                }
                StmtKind::AugAssign { target, value, op } => {
                    if let ExprKind::Subscript { value: v, indices } = &target.kind
                        && let ExprKind::Name(n) = &v.kind
                    {
                        let atomic = matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic));
                        let red = matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul);
                        stores.push((n.clone(), index_key(indices), atomic, red));
                    }
                    loads_in(value, loads);
                }
                StmtKind::If { cond, then, orelse } => {
                    loads_in(cond, loads);
                    collect(then, stores, loads);
                    collect(orelse, stores, loads);
                }
                _ => {}
            }
        }
    }
    let mut stores = vec![];
    let mut loads = vec![];
    collect(body, &mut stores, &mut loads);
    let varying: Vec<String> = assigned
        .iter()
        .map(|(n, _)| format!("Name(\"{n}\")"))
        .chain([format!("Name(\"{}\")", var.name)])
        .collect();
    for (arr, key, atomic, red) in &stores {
        // The store is element-wise in the loop variable, an atomic update, or a
        // reduction into one element (an update with indices invariant in the loop, to an
        // array the loop does not otherwise read).
        let uses_var = key.contains(&format!("Name(\"{}\")", var.name));
        let invariant = !varying.iter().any(|v| key.contains(v.as_str()));
        let element_reduction = *red && invariant && !loads.iter().any(|(a, _)| a == arr);
        // Every other access to the array must be to the same element.
        if !(uses_var || *atomic || element_reduction)
            || stores.iter().any(|(a, k, _, _)| a == arr && k != key)
            || loads.iter().any(|(a, k)| a == arr && k != key)
        {
            return Err(NotVectorizable::Dependence(arr.clone()));
        }
    }
    Ok(())
}

pub(crate) fn strip_spans(e: &mut Expr) {
    e.span = Span::default();
    match &mut e.kind {
        ExprKind::Unary { operand, .. } => strip_spans(operand),
        ExprKind::Binary { lhs, rhs, .. } => {
            strip_spans(lhs);
            strip_spans(rhs);
        }
        ExprKind::Compare { first, rest } => {
            strip_spans(first);
            rest.iter_mut().for_each(|(_, x)| strip_spans(x));
        }
        ExprKind::BoolOp { values, .. } | ExprKind::Tuple(values) => values.iter_mut().for_each(strip_spans),
        ExprKind::IfExp { cond, then, orelse } => {
            strip_spans(cond);
            strip_spans(then);
            strip_spans(orelse);
        }
        ExprKind::Call { func, args, kwargs } => {
            strip_spans(func);
            args.iter_mut().for_each(strip_spans);
            kwargs.iter_mut().for_each(|(k, x)| {
                k.span = Span::default();
                strip_spans(x)
            });
        }
        ExprKind::Attribute { value, attr } => {
            strip_spans(value);
            attr.span = Span::default();
        }
        ExprKind::Subscript { value, indices } => {
            strip_spans(value);
            for i in indices {
                match i {
                    Index::Expr(x) => strip_spans(x),
                    Index::Slice { lower, upper, step, span } => {
                        *span = Span::default();
                        for x in [lower, upper, step].into_iter().flatten() {
                            strip_spans(x);
                        }
                    }
                    Index::NewAxis(sp) => *sp = Span::default(),
                }
            }
        }
        _ => {}
    }
}
