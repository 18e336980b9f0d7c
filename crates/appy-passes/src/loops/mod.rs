//! `appy` → `loops`: the schedule. Strip-mining into MVL-wide lanes
//! (`appy-strip-mine`, today's default schedule), and Loopy's transforms addressed by
//! iname (`appy-split-iname`, `appy-tag-inames`, `appy-reorder`, `appy-join-inames`,
//! `appy-assume`, `appy-privatize`, `appy-add-prefetch`), with the code generation of the tags
//! that need it (`appy-ilp` interleaves the iterations of `ilp` loops, `appy-unroll` unrolls `unr` loops and the `ilp` loops it could not interleave). `appy-schedule` runs the
//! transforms a program asks for in its pragmas (`transform(...)`).

pub mod add_prefetch;
pub mod assume;
pub mod ilp;
pub mod join_inames;
pub mod privatize;
pub mod reorder;
pub mod schedule;
pub mod split_iname;
pub mod strip_mine;
pub mod tag_inames;
pub mod unroll;

use crate::analyses::within::{Within, array_names, glob, loop_facts};
use appy_ir::attrs::parse_str;
use appy_ir::diag::IrError;
use appy_ir::effects::is_pure;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::schedule::LoopKind;
use appy_ir::types::MemRefType;
use std::collections::{HashMap, HashSet};

/// Where a loop is in its function.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Place {
    /// Inside a loop of workers.
    pub in_workers: bool,
}

/// A rewrite of one loop into the ops that replace it.
pub(crate) type LoopRewrite<'a> = dyn FnMut(Op, Place) -> Result<Vec<Op>, IrError> + 'a;

/// The loops a transform addresses in one function: those whose name matches `name`
/// (an iname or a glob) and that `within` matches ([`crate::analyses::within`]).
pub(crate) struct Select<'a> {
    name: &'a str,
    within: Option<&'a Within>,
    func: String,
    arrays: HashMap<Value, String>,
}

impl<'a> Select<'a> {
    /// The selection in function `func` whose body is `ops`.
    pub fn new(func: &Op, ops: &[Op], name: &'a str, within: Option<&'a Within>) -> Select<'a> {
        Select {
            name,
            within,
            func: func.attr("sym_name").map(parse_str).unwrap_or("").to_string(),
            arrays: if within.is_some() { array_names(func, ops) } else { HashMap::new() },
        }
    }

    fn matches(&self, op: &Op, names: &[String], enclosing: &[String]) -> bool {
        LoopKind::of(op).is_some()
            && names.first().is_some_and(|n| glob(self.name, n))
            && self
                .within
                .is_none_or(|w| w.matches(&loop_facts(op, &self.func, enclosing, &self.arrays)))
    }

    /// `named `j`` or `named `j` within `writes:b``, for messages.
    pub fn describe(&self) -> String {
        match self.within {
            Some(w) => format!("named `{}` within `{}`", self.name, w.text()),
            None => format!("named `{}`", self.name),
        }
    }
}

/// Replaces every loop `sel` selects in `ops` (whose only dimension's name matches), at
/// any depth, by what `f` returns; a selected loop's body is not searched further.
/// Returns the new ops and whether a loop was selected.
pub(crate) fn replace_named(ops: Vec<Op>, sel: &Select<'_>, place: Place, f: &mut LoopRewrite<'_>) -> Result<(Vec<Op>, bool), IrError> {
    let mut n = 0;
    let out = replace_in(ops, sel, place, f, &mut vec![], &mut n)?;
    Ok((out, n > 0))
}

fn replace_in(
    ops: Vec<Op>,
    sel: &Select<'_>,
    place: Place,
    f: &mut LoopRewrite<'_>,
    enclosing: &mut Vec<String>,
    n: &mut usize,
) -> Result<Vec<Op>, IrError> {
    let mut out = Vec::with_capacity(ops.len());
    for mut op in ops {
        let names = op.inames();
        if sel.matches(&op, &names, enclosing) {
            if names.len() != 1 {
                return Err(IrError::user_at(
                    &op,
                    format!(
                        "loop `{}` has {} dimensions; a transform addresses one-dimensional loops",
                        names[0],
                        names.len()
                    ),
                ));
            }
            let actual = names[0].clone();
            // A refusal names the loop, not the pattern that selected it.
            out.extend(f(op, place).map_err(|mut e| {
                if sel.name != actual {
                    e.message = e.message.replace(&format!("`{}`", sel.name), &format!("`{actual}`"));
                }
                e
            })?);
            *n += 1;
            continue;
        }
        let inner = Place {
            in_workers: place.in_workers || LoopKind::of(&op) == Some(LoopKind::Workers),
        };
        let depth = enclosing.len();
        if LoopKind::of(&op).is_some() {
            enclosing.extend(names);
        }
        for r in &mut op.regions {
            for blk in &mut r.blocks {
                blk.ops = replace_in(std::mem::take(&mut blk.ops), sel, inner, f, enclosing, n)?;
            }
        }
        enclosing.truncate(depth);
        out.push(op);
    }
    Ok(out)
}

/// Why the iterations of the sequential loop `op` are not independent, as `ilp` needs:
/// it carries values from one iteration to the next, or it updates a scalar defined
/// outside it (a rank-0 slot: `s += ...`). `None` when neither. `appy-ilp` interleaves
/// the iterations only after its own test of the arrays the body writes; a loop it
/// leaves is unrolled in program order.
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
pub(crate) fn no_such_loop(func: &Op, pass: &str, sel: &Select<'_>, ops: &[Op]) -> IrError {
    let names = inames_in(ops);
    let known = if names.is_empty() {
        "it has no named loops".to_string()
    } else {
        format!("its loops: {}", names.join(", "))
    };
    IrError::user_at(func, format!("{pass}: no loop {} in this function ({known})", sel.describe()))
}
