//! Which names a piece of code assigns and reads.

use crate::ast::*;
use appy_ir::diag::Span;

pub(crate) fn ast_names_assigned(stmts: &[Stmt], out: &mut Vec<(String, Span)>) {
    fn target(e: &Expr, out: &mut Vec<(String, Span)>) {
        match &e.kind {
            ExprKind::Name(n) => out.push((n.clone(), e.span)),
            ExprKind::Tuple(es) => es.iter().for_each(|x| target(x, out)),
            _ => {}
        }
    }
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { targets, .. } => targets.iter().for_each(|t| target(t, out)),
            StmtKind::AugAssign { target: t, .. } => target(t, out),
            StmtKind::For { var, body, stop, .. } => {
                out.push((var.name.clone(), var.span));
                if let Some(f) = stop {
                    out.push((f.clone(), var.span));
                }
                ast_names_assigned(body, out);
            }
            StmtKind::While { body, .. } => ast_names_assigned(body, out),
            StmtKind::If { then, orelse, .. } => {
                ast_names_assigned(then, out);
                ast_names_assigned(orelse, out);
            }
            _ => {}
        }
    }
}

pub(crate) fn expr_names(e: &Expr, out: &mut Vec<(String, Span)>) {
    match &e.kind {
        ExprKind::Name(n) => out.push((n.clone(), e.span)),
        _ => e.for_each_child(&mut |c| expr_names(c, out)),
    }
}

/// Names read in statements (targets of plain assignment to a name excluded).
pub(crate) fn ast_names_read(stmts: &[Stmt], out: &mut Vec<(String, Span)>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { targets, value } => {
                for t in targets {
                    if !matches!(t.kind, ExprKind::Name(_) | ExprKind::Tuple(_)) {
                        expr_names(t, out);
                    }
                }
                expr_names(value, out);
            }
            StmtKind::AugAssign { target, value, .. } => {
                expr_names(target, out);
                expr_names(value, out);
            }
            StmtKind::For { iter, body, stop, .. } => {
                expr_names(iter, out);
                if let Some(f) = stop {
                    out.push((f.clone(), iter.span));
                }
                ast_names_read(body, out);
            }
            StmtKind::While { cond, body } => {
                expr_names(cond, out);
                ast_names_read(body, out);
            }
            StmtKind::If { cond, then, orelse } => {
                expr_names(cond, out);
                ast_names_read(then, out);
                ast_names_read(orelse, out);
            }
            StmtKind::Return(Some(e)) | StmtKind::Expr(e) => expr_names(e, out),
            _ => {}
        }
    }
}

pub(crate) fn is_name(e: &Expr, n: &str) -> bool {
    matches!(&e.kind, ExprKind::Name(x) if x == n)
}
