//! Reduction detection (seed 000): scalars updated by one reduction operator, and
//! array updates that are reductions across the iterations of a loop.

use super::Reduction;
use super::names::*;
use super::resolve::*;
use crate::ast::*;

/// If every assignment to `name` in `body` is a reduction with one operator and `name`
/// is not otherwise read, returns that operator.
pub(crate) fn reduction_op(name: &str, body: &[Stmt], imports: &Imports) -> Option<Reduction> {
    let mut ops: Vec<Reduction> = vec![];
    let mut reads_in_forms = 0usize;
    let mut ok = true;
    fn walk(name: &str, stmts: &[Stmt], imports: &Imports, ops: &mut Vec<Reduction>, rf: &mut usize, ok: &mut bool) {
        for s in stmts {
            match &s.kind {
                StmtKind::AugAssign { target, op, .. } if is_name(target, name) => match op {
                    BinOp::Add | BinOp::Sub => ops.push(Reduction::Sum),
                    BinOp::Mul => ops.push(Reduction::Prod),
                    _ => *ok = false,
                },
                StmtKind::Assign { targets, value } if targets.iter().any(|t| is_name(t, name)) => {
                    if targets.len() != 1 {
                        *ok = false;
                        continue;
                    }
                    match &value.kind {
                        ExprKind::Binary { op, lhs, rhs } => {
                            let l = is_name(lhs, name);
                            let r = is_name(rhs, name);
                            match op {
                                BinOp::Add | BinOp::Mul if l || r => {
                                    ops.push(if *op == BinOp::Add { Reduction::Sum } else { Reduction::Prod });
                                    *rf += 1;
                                }
                                BinOp::Sub if l => {
                                    ops.push(Reduction::Sum);
                                    *rf += 1;
                                }
                                _ => *ok = false,
                            }
                        }
                        ExprKind::Call { func, args, .. } if args.len() == 2 && (is_name(&args[0], name) || is_name(&args[1], name)) => {
                            match qualify(imports, func).as_deref().and_then(super::catalog::max_min) {
                                Some(op) => ops.push(op),
                                None => *ok = false,
                            }
                            *rf += 1;
                        }
                        _ => *ok = false,
                    }
                }
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => walk(name, body, imports, ops, rf, ok),
                StmtKind::If { then, orelse, .. } => {
                    walk(name, then, imports, ops, rf, ok);
                    walk(name, orelse, imports, ops, rf, ok);
                }
                _ => {}
            }
        }
    }
    walk(name, body, imports, &mut ops, &mut reads_in_forms, &mut ok);
    if !ok || ops.is_empty() || ops.iter().any(|o| *o != ops[0]) {
        return None;
    }
    let mut reads = vec![];
    ast_names_read(body, &mut reads);
    // AugAssign targets count as reads in ast_names_read; so do the forms' operands.
    let aug = count_aug(name, body);
    let total = reads.iter().filter(|(n, _)| n == name).count();
    if total != reads_in_forms + aug {
        return None;
    }
    Some(ops[0])
}

pub(crate) fn count_aug(name: &str, stmts: &[Stmt]) -> usize {
    stmts
        .iter()
        .map(|s| match &s.kind {
            StmtKind::AugAssign { target, .. } if is_name(target, name) => 1,
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => count_aug(name, body),
            StmtKind::If { then, orelse, .. } => count_aug(name, then) + count_aug(name, orelse),
            _ => 0,
        })
        .sum()
}

/// How many `target op= ...` updates (by source text of the target) `stmts` contain.
pub(crate) fn count_target_updates(stmts: &[Stmt], key: &str, text: &str) -> usize {
    stmts
        .iter()
        .map(|s| match &s.kind {
            StmtKind::AugAssign { target, .. } => {
                let k: String = text
                    .get(target.span.start..target.span.end)
                    .unwrap_or("")
                    .split_whitespace()
                    .collect();
                usize::from(k == key)
            }
            StmtKind::If { then, orelse, .. } => count_target_updates(then, key, text) + count_target_updates(orelse, key, text),
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => count_target_updates(body, key, text),
            _ => 0,
        })
        .sum()
}
