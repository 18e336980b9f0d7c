//! Which expressions are arrays: the rank of an array-valued expression (`A + B`,
//! `np.exp(a[i, :])`, `x.sum(axis=0)`, `A @ v`), and which ones are plain views of an
//! array (`a`, `a[1:]`, `A[i]`, `A.T`) rather than computations.
//!
//! A statement that involves an array-valued expression is a tensor statement; an
//! array-valued expression used where a value is needed is computed into a new array
//! (or, when it has rank 0, into a scalar).

use super::*;
use crate::sema::catalog::{self, Rule};

impl Lower<'_> {
    /// The rank of `e` if it is array-valued, `None` if it is a scalar (or not a value).
    pub(super) fn arank(&self, e: &Expr) -> Option<usize> {
        match &e.kind {
            ExprKind::Name(n) => match self.lookup(n) {
                Some(Binding::Val(V::Arr(_, _, r))) => Some(*r),
                Some(Binding::Val(V::View(v))) => Some(v.rank()),
                _ => None,
            },
            ExprKind::Subscript { value, indices } => {
                let r = self.arank(value)?;
                let n_expr = indices.iter().filter(|i| matches!(i, Index::Expr(_))).count();
                let n_new = indices.iter().filter(|i| matches!(i, Index::NewAxis(_))).count();
                let sliced = indices.iter().any(|i| !matches!(i, Index::Expr(_)));
                // A vector index (`A[vi]`, assembly level) keeps the element form.
                if indices.iter().any(|i| matches!(i, Index::Expr(x) if self.vidx_of(x).is_some())) {
                    return None;
                }
                let rest = (r + n_new).checked_sub(n_expr)?;
                if rest == 0 && !sliced { None } else { Some(rest) }
            }
            ExprKind::Attribute { value, attr } => match attr.name.as_str() {
                "T" => self.arank(value),
                _ => None,
            },
            ExprKind::Unary { operand, .. } => self.arank(operand),
            ExprKind::Binary {
                op: BinOp::MatMul,
                lhs,
                rhs,
            } => {
                let (a, b) = (self.arank(lhs)?, self.arank(rhs)?);
                Some(matmul_rank(a, b))
            }
            ExprKind::Binary { lhs, rhs, .. } => max_rank([self.arank(lhs), self.arank(rhs)]),
            ExprKind::Compare { first, rest } => {
                max_rank(std::iter::once(self.arank(first)).chain(rest.iter().map(|(_, x)| self.arank(x))))
            }
            ExprKind::Call { func, args, kwargs } => self.call_rank(func, args, kwargs),
            _ => None,
        }
    }

    /// The function a call refers to, and its receiver when it is an array method.
    pub(super) fn callee<'e>(&self, func: &'e Expr) -> Option<(&'static catalog::Func, Option<&'e Expr>)> {
        if let ExprKind::Attribute { value, attr } = &func.kind
            && self.arank(value).is_some()
        {
            return catalog::method(&attr.name).map(|f| (f, Some(&**value)));
        }
        let q = qualify(&self.imports, func)?;
        catalog::lookup(&q).map(|f| (f, None))
    }

    fn call_rank(&self, func: &Expr, args: &[Expr], kwargs: &[(Ident, Expr)]) -> Option<usize> {
        let (f, recv) = self.callee(func)?;
        let all: Vec<&Expr> = recv.into_iter().chain(args.iter()).collect();
        let ranks: Vec<Option<usize>> = all.iter().map(|a| self.arank(a)).collect();
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
            Rule::Alloc { torch, .. } => {
                let shape = args.first()?;
                if torch && args.len() > 1 && !matches!(shape.kind, ExprKind::Tuple(_)) {
                    // `torch.empty(M, N)`: the sizes are the positional arguments.
                    return Some(
                        args.len()
                            - usize::from(matches!(
                                f.rule,
                                Rule::Alloc {
                                    fill: catalog::Fill::Full,
                                    ..
                                }
                            )),
                    );
                }
                Some(self.shape_len(shape))
            }
            Rule::Like(_) => first,
            Rule::CopyTo | Rule::Len | Rule::Range | Rule::Print | Rule::Vidx | Rule::Atomic(_) | Rule::Math(_) => None,
        }
    }

    /// The number of entries of a shape argument: a tuple, `a.shape`, or one integer.
    pub(super) fn shape_len(&self, shape: &Expr) -> usize {
        match &shape.kind {
            ExprKind::Tuple(xs) => xs.len(),
            ExprKind::Attribute { value, attr } if attr.name == "shape" => self.arank(value).unwrap_or(1),
            ExprKind::Name(n) => match self.lookup(n) {
                Some(Binding::Val(V::Tuple(xs))) => xs.len(),
                _ => 1,
            },
            _ => 1,
        }
    }

    /// Whether `e` names elements of an existing array without computing anything: an
    /// array, a subscript of one that slices or leaves axes out, or its `.T`.
    pub(super) fn is_view_expr(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Name(_) => self.arank(e).is_some(),
            ExprKind::Subscript { value, indices } => {
                self.is_view_expr(value) && self.arank(e).is_some() && !indices.iter().any(|i| matches!(i, Index::NewAxis(_)))
            }
            ExprKind::Attribute { value, attr } => attr.name == "T" && self.is_view_expr(value),
            ExprKind::Call { func, args, .. } => {
                matches!(self.callee(func), Some((f, None)) if f.rule == Rule::Transpose) && args.len() == 1 && self.is_view_expr(&args[0])
            }
            _ => false,
        }
    }

    /// Whether a statement computes with arrays (a tensor statement): it uses slices or
    /// whole arrays as values.
    pub(super) fn is_array_stmt(&self, s: &Stmt) -> bool {
        match &s.kind {
            StmtKind::Assign { targets, value } => {
                targets.iter().any(|t| self.is_array_target(t)) || self.arank(value).is_some() || tensor::has_slices(value)
            }
            StmtKind::AugAssign { target, value, .. } => {
                self.is_array_target(target)
                    || (matches!(target.kind, ExprKind::Name(_)) && self.arank(target).is_some())
                    || self.arank(value).is_some()
                    || tensor::has_slices(value)
            }
            _ => false,
        }
    }

    /// A target that stores into several elements: a slice, a partial index, or a
    /// whole array name in an update (`B *= 2`).
    fn is_array_target(&self, t: &Expr) -> bool {
        match &t.kind {
            ExprKind::Subscript { .. } => self.arank(t).is_some() || tensor::has_slices(t),
            _ => false,
        }
    }
}

/// The rank of a matrix product of operands of ranks `a` and `b` (NumPy's `matmul`).
pub(super) fn matmul_rank(a: usize, b: usize) -> usize {
    match (a, b) {
        (1, 1) => 0,
        (2, 1) | (1, 2) => 1,
        (a, b) => a.max(b),
    }
}

fn max_rank(rs: impl IntoIterator<Item = Option<usize>>) -> Option<usize> {
    rs.into_iter().flatten().max()
}
