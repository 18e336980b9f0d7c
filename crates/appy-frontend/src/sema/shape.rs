//! Which expressions are arrays: the rank of an array-valued expression (`A + B`,
//! `np.exp(a[i, :])`, `x.sum(axis=0)`, `A @ v`), which ones are plain views of an
//! array (`a`, `a[1:]`, `A[i]`, `A.T`) rather than computations, and which statements
//! compute with arrays (tensor statements) or vectors (`appy.vidx`).
//!
//! A statement that involves an array-valued expression is a tensor statement; an
//! array-valued expression used where a value is needed is computed into a new array
//! (or, when it has rank 0, into a scalar).
//!
//! These rules only need to know what kind of value each name is bound to
//! ([`Names::kind`]): lowering asks them about its bindings, semantic analysis
//! ([`super::analysis`]) about the ones it predicts, so the two agree by construction.

use super::Reduction;
use super::catalog::{self, Rule};
use super::names::expr_names;
use super::resolve::{Imports, qualify};
use crate::ast::*;
use appy_ir::diag::Span;

/// What a name is bound to, as far as the shape of expressions is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Not bound (or a module-level name such as `np`).
    Unbound,
    /// A scalar: a variable, a loop variable, a scalar parameter.
    Scalar,
    /// An array or a view of one, of this rank.
    Array(usize),
    /// A tuple of this many values (`a.shape`).
    Tuple(usize),
    /// A dtype (`a.dtype`).
    DType,
    /// A vector of indices (`appy.vidx(...)`).
    Vidx,
    /// A variable private to a loop that has ended.
    Private,
}

/// The bindings the shape rules consult.
pub(crate) trait Names {
    /// What module-level names refer to.
    fn imports(&self) -> &Imports;
    /// What `name` is bound to here.
    fn kind(&self, name: &str) -> Kind;
}

/// The rank of `e` if it is array-valued, `None` if it is a scalar (or not a value).
pub(crate) fn arank(n: &dyn Names, e: &Expr) -> Option<usize> {
    match &e.kind {
        ExprKind::Name(x) => match n.kind(x) {
            Kind::Array(r) => Some(r),
            _ => None,
        },
        ExprKind::Subscript { value, indices } => subscript_rank(n, arank(n, value), indices),
        ExprKind::Attribute { value, attr } => match attr.name.as_str() {
            "T" => arank(n, value),
            _ => None,
        },
        ExprKind::Unary { operand, .. } => arank(n, operand),
        ExprKind::Binary { op, lhs, rhs } => binary_rank(*op, arank(n, lhs), arank(n, rhs)),
        ExprKind::Compare { first, rest } => max_rank(std::iter::once(arank(n, first)).chain(rest.iter().map(|(_, x)| arank(n, x)))),
        ExprKind::Call { func, args, kwargs } => call_rank(n, func, args, kwargs),
        _ => None,
    }
}

/// The rank of `value[indices]` for a `value` of rank `value_rank`.
pub(crate) fn subscript_rank(n: &dyn Names, value_rank: Option<usize>, indices: &[Index]) -> Option<usize> {
    let r = value_rank?;
    let n_expr = indices.iter().filter(|i| matches!(i, Index::Expr(_))).count();
    let n_new = indices.iter().filter(|i| matches!(i, Index::NewAxis(_))).count();
    let sliced = indices.iter().any(|i| !matches!(i, Index::Expr(_)));
    // A vector index (`A[vi]`, assembly level) keeps the element form.
    if indices.iter().any(|i| matches!(i, Index::Expr(x) if uses_vidx(n, x))) {
        return None;
    }
    let rest = (r + n_new).checked_sub(n_expr)?;
    if rest == 0 && !sliced { None } else { Some(rest) }
}

/// The rank of `lhs op rhs` for operands of ranks `a` and `b`.
pub(crate) fn binary_rank(op: BinOp, a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match op {
        BinOp::MatMul => Some(matmul_rank(a?, b?)),
        _ => max_rank([a, b]),
    }
}

/// The function a call refers to, and its receiver when it is an array method.
pub(crate) fn callee<'e>(n: &dyn Names, func: &'e Expr) -> Option<(&'static catalog::Func, Option<&'e Expr>)> {
    if let ExprKind::Attribute { value, attr } = &func.kind
        && arank(n, value).is_some()
    {
        return catalog::method(&attr.name).map(|f| (f, Some(&**value)));
    }
    let q = qualify(n.imports(), func)?;
    catalog::lookup(&q).map(|f| (f, None))
}

/// The rank of the call `func(args, kwargs)` if it is array-valued.
pub(crate) fn call_rank(n: &dyn Names, func: &Expr, args: &[Expr], kwargs: &[(Ident, Expr)]) -> Option<usize> {
    let (f, recv) = callee(n, func)?;
    let all: Vec<&Expr> = recv.into_iter().chain(args.iter()).collect();
    let ranks: Vec<Option<usize>> = all.iter().map(|a| arank(n, a)).collect();
    let axis = kwargs.iter().find(|(k, _)| k.name == "axis").map(|(_, v)| v);
    let first = ranks.first().copied().flatten();
    match f.rule {
        Rule::Float(_) | Rule::Same(_) | Rule::Pred(_) | Rule::Where | Rule::Clip => max_rank(ranks),
        Rule::Cast(c) => match c {
            catalog::Cast::PyFloat | catalog::Cast::PyInt | catalog::Cast::PyBool => None,
            _ => first,
        },
        Rule::MaxMin { numpy: true, .. } => max_rank(ranks),
        Rule::MaxMin { numpy: false, .. } | Rule::BuiltinSum => {
            if all.len() == 1 {
                first.map(|r| r.saturating_sub(1))
            } else {
                None
            }
        }
        Rule::Reduce(_) | Rule::Mean => {
            let r = first?;
            match axis.map(|a| &a.kind) {
                None | Some(ExprKind::None) => Some(0),
                Some(_) => Some(r.saturating_sub(1)),
            }
        }
        Rule::Dot => match (ranks.first().copied().flatten(), ranks.get(1).copied().flatten()) {
            (Some(a), Some(b)) => Some(matmul_rank(a, b)),
            _ => None,
        },
        Rule::Transpose | Rule::Copy | Rule::AsType => first,
        Rule::Arange => Some(1),
        Rule::Alloc { .. } => {
            args.first()?;
            Some(args[..alloc_sizes(f.rule, args)].iter().map(|s| shape_len(n, s)).sum())
        }
        Rule::Like(_) => first,
        Rule::CopyTo | Rule::Len | Rule::Range | Rule::Print | Rule::Vidx | Rule::Atomic(_) | Rule::Math(_) => None,
    }
}

/// How many leading arguments of an allocation are sizes (`torch.empty(M, N)`).
pub(crate) fn alloc_sizes(rule: Rule, args: &[Expr]) -> usize {
    match rule {
        Rule::Alloc { fill, torch: true } if !matches!(args.first().map(|a| &a.kind), Some(ExprKind::Tuple(_))) => {
            let full = usize::from(fill == catalog::Fill::Full);
            args.len().saturating_sub(full).max(1)
        }
        _ => 1,
    }
}

/// The number of entries of a shape argument: a tuple, `a.shape`, or one integer.
pub(crate) fn shape_len(n: &dyn Names, shape: &Expr) -> usize {
    match &shape.kind {
        ExprKind::Tuple(xs) => xs.len(),
        ExprKind::Attribute { value, attr } if attr.name == "shape" => arank(n, value).unwrap_or(1),
        ExprKind::Name(x) => match n.kind(x) {
            Kind::Tuple(len) => len,
            _ => 1,
        },
        _ => 1,
    }
}

/// Whether `e` names elements of an existing array without computing anything: an
/// array, a subscript of one that slices or leaves axes out, or its `.T`.
pub(crate) fn is_view_expr(n: &dyn Names, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Name(_) => arank(n, e).is_some(),
        ExprKind::Subscript { value, indices } => {
            is_view_expr(n, value) && arank(n, e).is_some() && !indices.iter().any(|i| matches!(i, Index::NewAxis(_)))
        }
        ExprKind::Attribute { value, attr } => attr.name == "T" && is_view_expr(n, value),
        ExprKind::Call { func, args, .. } => {
            matches!(callee(n, func), Some((f, None)) if f.rule == Rule::Transpose) && args.len() == 1 && is_view_expr(n, &args[0])
        }
        _ => false,
    }
}

/// Whether a statement computes with arrays (a tensor statement): it uses slices or
/// whole arrays as values.
pub(crate) fn is_array_stmt(n: &dyn Names, s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Assign { targets, value } => {
            targets.iter().any(|t| is_array_target(n, t)) || arank(n, value).is_some() || has_slices(value)
        }
        StmtKind::AugAssign { target, value, .. } => {
            is_array_target(n, target)
                || (matches!(target.kind, ExprKind::Name(_)) && arank(n, target).is_some())
                || arank(n, value).is_some()
                || has_slices(value)
        }
        _ => false,
    }
}

/// A target that stores into several elements: a slice, a partial index, or a
/// whole array name in an update (`B *= 2`).
fn is_array_target(n: &dyn Names, t: &Expr) -> bool {
    match &t.kind {
        ExprKind::Subscript { .. } => arank(n, t).is_some() || has_slices(t),
        _ => false,
    }
}

/// Whether an expression contains a slice or `None` index (a tensor expression).
pub(crate) fn has_slices(e: &Expr) -> bool {
    let mut found = false;
    fn walk(e: &Expr, found: &mut bool) {
        if let ExprKind::Subscript { indices, .. } = &e.kind
            && indices.iter().any(|i| !matches!(i, Index::Expr(_)))
        {
            *found = true;
        }
        e.for_each_child(&mut |c| walk(c, found));
    }
    walk(e, &mut found);
    found
}

/// Whether `e` uses a name bound to a vector of indices (`appy.vidx`).
pub(crate) fn uses_vidx(n: &dyn Names, e: &Expr) -> bool {
    let mut names = vec![];
    expr_names(e, &mut names);
    names.iter().any(|(x, _)| n.kind(x) == Kind::Vidx)
}

/// Whether a statement computes with vectors of indices (a vector statement): it runs
/// over their lanes.
pub(crate) fn uses_vidx_stmt(n: &dyn Names, s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Assign { targets, value } => {
            if matches!(&value.kind, ExprKind::Call { func, .. } if qualify(n.imports(), func).as_deref() == Some("appy.vidx")) {
                return false;
            }
            targets.iter().any(|t| uses_vidx(n, t)) || uses_vidx(n, value)
        }
        StmtKind::AugAssign { target, value, .. } => uses_vidx(n, target) || uses_vidx(n, value),
        _ => false,
    }
}

/// The first statement of a loop body that only runs outside simd loops (an array
/// statement, a vector statement, a call on a line of its own): automatic
/// vectorisation leaves such a loop sequential rather than reject the program.
pub(crate) fn needs_scalar_loop(n: &dyn Names, body: &[Stmt]) -> Option<Span> {
    body.iter().find_map(|s| match &s.kind {
        StmtKind::For { body, .. } | StmtKind::While { body, .. } => needs_scalar_loop(n, body),
        StmtKind::If { then, orelse, .. } => needs_scalar_loop(n, then).or_else(|| needs_scalar_loop(n, orelse)),
        StmtKind::Expr(_) => Some(s.span),
        _ => (is_array_stmt(n, s) || uses_vidx_stmt(n, s)).then_some(s.span),
    })
}

/// Replaces `sum(E)` / `max(E)` / `min(E)` of a vector `E` in `e` by a fresh name
/// (`_appy_red<k>`, `k` counting from `counter`), recording the name, the reduction
/// and `E`: a vector statement computes these reductions first.
pub(crate) fn hoist_vector_reductions(n: &dyn Names, e: &mut Expr, counter: &mut usize, out: &mut Vec<(String, Reduction, Expr)>) {
    if let ExprKind::Call { func, args, kwargs } = &e.kind
        && args.len() == 1
        && kwargs.is_empty()
        && uses_vidx(n, &args[0])
    {
        let op = qualify(n.imports(), func).as_deref().and_then(catalog::reduction);
        if let Some(op) = op {
            let name = format!("_appy_red{}", *counter);
            *counter += 1;
            out.push((name.clone(), op, args[0].clone()));
            e.kind = ExprKind::Name(name);
            return;
        }
    }
    match &mut e.kind {
        ExprKind::Unary { operand, .. } => hoist_vector_reductions(n, operand, counter, out),
        ExprKind::Binary { lhs, rhs, .. } => {
            hoist_vector_reductions(n, lhs, counter, out);
            hoist_vector_reductions(n, rhs, counter, out);
        }
        ExprKind::Call { args, .. } => args.iter_mut().for_each(|a| hoist_vector_reductions(n, a, counter, out)),
        ExprKind::IfExp { cond, then, orelse } => {
            hoist_vector_reductions(n, cond, counter, out);
            hoist_vector_reductions(n, then, counter, out);
            hoist_vector_reductions(n, orelse, counter, out);
        }
        ExprKind::Compare { first, rest } => {
            hoist_vector_reductions(n, first, counter, out);
            rest.iter_mut().for_each(|(_, x)| hoist_vector_reductions(n, x, counter, out));
        }
        _ => {}
    }
}

/// The rank of a matrix product of operands of ranks `a` and `b` (NumPy's `matmul`).
pub(crate) fn matmul_rank(a: usize, b: usize) -> usize {
    match (a, b) {
        (1, 1) => 0,
        (2, 1) | (1, 2) => 1,
        (a, b) => a.max(b),
    }
}

fn max_rank(rs: impl IntoIterator<Item = Option<usize>>) -> Option<usize> {
    rs.into_iter().flatten().max()
}
