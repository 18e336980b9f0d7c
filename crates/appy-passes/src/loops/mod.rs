//! `appy` → `loops`: the schedule. Strip-mining into MVL-wide lanes
//! (`appy-strip-mine`, today's default schedule), and Loopy's transforms addressed by
//! iname (`appy-split-iname`, `appy-tag-inames`, `appy-reorder`, `appy-join-inames`,
//! `appy-assume`, `appy-privatize`, `appy-add-prefetch`), with the code generation of the tags
//! that need it (`appy-unroll` for `unr` and `ilp`). `appy-schedule` runs the
//! transforms a program asks for in its pragmas (`transform(...)`).

pub mod add_prefetch;
pub mod assume;
pub mod join_inames;
pub mod privatize;
pub mod reorder;
pub mod schedule;
pub mod split_iname;
pub mod strip_mine;
pub mod tag_inames;
pub mod unroll;

use appy_ir::diag::IrError;
use appy_ir::effects::is_pure;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::schedule::LoopKind;
use appy_ir::types::MemRefType;
use std::collections::HashSet;

/// Where a loop is in its function.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Place {
    /// Inside a loop of workers.
    pub in_workers: bool,
}

/// A rewrite of one loop into the ops that replace it.
pub(crate) type LoopRewrite<'a> = dyn FnMut(Op, Place) -> Result<Vec<Op>, IrError> + 'a;

/// Replaces the loop named `iname` (its only dimension's name) in `ops`, at any depth,
/// by what `f` returns. Returns the new ops and whether the loop was found.
pub(crate) fn replace_named(ops: Vec<Op>, iname: &str, place: Place, f: &mut LoopRewrite<'_>) -> Result<(Vec<Op>, bool), IrError> {
    let mut out = Vec::with_capacity(ops.len());
    let mut found = false;
    for mut op in ops {
        if !found && LoopKind::of(&op).is_some() && op.inames().first().map(String::as_str) == Some(iname) {
            if op.inames().len() != 1 {
                return Err(IrError::user_at(
                    &op,
                    format!(
                        "loop `{iname}` has {} dimensions; a transform addresses one-dimensional loops",
                        op.inames().len()
                    ),
                ));
            }
            out.extend(f(op, place)?);
            found = true;
            continue;
        }
        if !found {
            let inner = Place {
                in_workers: place.in_workers || LoopKind::of(&op) == Some(LoopKind::Workers),
            };
            for r in &mut op.regions {
                for blk in &mut r.blocks {
                    if found {
                        break;
                    }
                    let (ops, hit) = replace_named(std::mem::take(&mut blk.ops), iname, inner, f)?;
                    blk.ops = ops;
                    found |= hit;
                }
            }
        }
        out.push(op);
    }
    Ok((out, found))
}

/// Why the iterations of the sequential loop `op` are not independent, as `ilp` needs:
/// it carries values from one iteration to the next, or it updates a scalar defined
/// outside it (a rank-0 slot: `s += ...`). `None` when neither. The unrolled code keeps
/// the iterations in program order either way, so this only keeps the tag honest.
pub(crate) fn carried_dependence(m: &Module, op: &Op) -> Option<&'static str> {
    if op.operands.len() > 3 {
        return Some("it carries values from one iteration to the next");
    }
    let outside = op.free_values();
    let mut slot = false;
    op.walk(&mut |x| {
        if x.name == "memref.store"
            && let Some(mem) = x.operands.get(1)
            && outside.contains(mem)
            && MemRefType::parse(m.ty(*mem)).is_some_and(|t| t.rank() == 0)
        {
            slot = true;
        }
    });
    slot.then_some("it updates a scalar defined outside it in every iteration")
}

/// The nest `outer { pure ops; inner; terminator }` of two loops (`inner` named so):
/// the inner loop's position in `outer`'s body, and the values of that body that depend
/// on `outer`'s variable (the variable, and the pure ops computed from it). An error
/// (the reason, to finish "cannot ... `j` and `k`: ") when it is not a perfect nest, or
/// the inner loop's bounds depend on the outer variable.
pub(crate) fn perfect_nest(outer: &Op, inner: &str, terminator: &str) -> Result<(usize, HashSet<Value>), String> {
    let j = outer.inames().first().cloned().unwrap_or_default();
    let iv = outer.regions[0].blocks[0].args[0];
    let body = &outer.regions[0].blocks[0].ops;
    let Some(li) = body.iter().position(|o| o.inames().first().map(String::as_str) == Some(inner)) else {
        return Err(format!("`{inner}` is not directly inside `{j}`"));
    };
    let nested = li + 2 == body.len() && body[li + 1].name == terminator;
    if !nested || !body[..li].iter().all(is_pure) {
        return Err(format!(
            "`{j}`'s body must be `{inner}` alone, after pure computations (a perfect nest)"
        ));
    }
    let mut dep: HashSet<Value> = HashSet::from([iv]);
    for o in &body[..li] {
        if o.operands.iter().any(|v| dep.contains(v)) {
            dep.extend(o.results.iter().copied());
        }
    }
    let bounds = &body[li].operands;
    if bounds.iter().take(3).any(|v| dep.contains(v)) {
        return Err(format!("the bounds of `{inner}` depend on `{j}` (the nest is not a rectangle)"));
    }
    Ok((li, dep))
}

/// The names of the loops in `ops`, in order (for "no loop named ..." errors).
pub(crate) fn inames_in(ops: &[Op]) -> Vec<String> {
    let mut out = vec![];
    for o in ops {
        o.walk(&mut |x| {
            if LoopKind::of(x).is_some() {
                out.extend(x.inames());
            }
        });
    }
    out
}

/// The error for a transform of a loop that the function does not have.
pub(crate) fn no_such_loop(func: &Op, pass: &str, iname: &str, ops: &[Op]) -> IrError {
    let names = inames_in(ops);
    let known = if names.is_empty() {
        "it has no named loops".to_string()
    } else {
        format!("its loops: {}", names.join(", "))
    };
    IrError::user_at(func, format!("{pass}: no loop named `{iname}` in this function ({known})"))
}
