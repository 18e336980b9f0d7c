//! `appy-ilp`: the code generation of the `ilp` tag (Loopy's instruction-level
//! parallelism). A sequential loop so tagged, with constant bounds, becomes its
//! iterations *interleaved*: each op of the body is emitted for every iteration before
//! the next op is (unrolled and jammed), so the loads of all iterations come before
//! their arithmetic and their stores, and several are in flight at once. Plain
//! unrolling (`unr`, `appy-unroll`) keeps each iteration's ops together, and a load of
//! one iteration cannot move above a store of the one before when the two may alias.
//!
//! Interleaving is legal when no element of an array the body writes is touched by two
//! different iterations ([`crate::analyses::index::cross_iteration_conflict`]: every
//! array written is accessed at one subscript, affine in the loop variable with a
//! nonzero coefficient), the loop carries no values and updates no scalar defined
//! outside it (`super::carried_dependence`, by which `appy-tag-inames` and
//! `appy-split-iname` refuse those for `ilp`), and
//! nothing in the body may write memory other than its loads and stores. A body's own
//! scalars (allocated inside it) are private to each iteration. A loop that fails the
//! test is left to `appy-unroll`, which unrolls it in program order (always legal).
//! Loops inside are interleaved (or left) first.

use crate::analyses::index;
use crate::analyses::nest::{const_bounds, int_constants, trip_count};
use crate::{Pass, PassInfo, PassOpt};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::effects::effects;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::Tag;
use std::collections::{HashMap, HashSet};

/// The pass.
pub struct Ilp {
    /// The largest trip count interleaved.
    pub max: i64,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-ilp",
    description: "interleave the iterations of the sequential loops tagged ilp (unroll and jam: each op for every iteration in turn) where no element is shared between iterations",
    options: &[PassOpt {
        name: "max",
        kind: crate::OptKind::Int { min: 1, max: 4096 },
        default: "256",
        help: "the largest trip count interleaved (a larger loop is left to appy-unroll, which refuses it)",
    }],
    file: file!(),
    make: |o| Ok(Box::new(Ilp { max: o.int("max")? })),
};

impl Pass for Ilp {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| {
            rw.rewrite_functions(|b, _, ops| {
                let consts = int_constants(&ops);
                // The function's integer arithmetic: subscripts computed from values
                // defined outside a loop (constants, `i - 1`) keep their affine form.
                let arith = index::arith_ops(&ops);
                let outer: HashMap<Value, &Op> = arith.iter().map(|o| (o.results[0], o)).collect();
                Ok(self.block(b, ops, &consts, &outer))
            })
        })
    }
}

impl Ilp {
    /// Interleaves the tagged loops of a block (and of the blocks nested in it).
    fn block(&self, b: &mut Builder, ops: Vec<Op>, consts: &HashMap<Value, i64>, outer: &HashMap<Value, &Op>) -> Vec<Op> {
        let mut out = Vec::with_capacity(ops.len());
        for mut op in ops {
            for r in &mut op.regions {
                for blk in &mut r.blocks {
                    let inner = std::mem::take(&mut blk.ops);
                    blk.ops = self.block(b, inner, consts, outer);
                }
            }
            match self.bounds(&b.m, &op, consts, outer) {
                Some((lb, st, trip)) => {
                    b.loc = op.loc.clone();
                    out.extend(jam(b, &op, lb, st, trip));
                }
                None => out.push(op),
            }
        }
        out
    }

    /// The lower bound, step and trip count of a loop tagged `ilp` whose iterations may
    /// be interleaved; `None` for any other op.
    fn bounds(&self, m: &Module, op: &Op, consts: &HashMap<Value, i64>, outer: &HashMap<Value, &Op>) -> Option<(i64, i64, i64)> {
        if op.name != "scf.for" || op.tags().first() != Some(&Tag::Ilp) || super::carried_dependence(m, op).is_some() {
            return None;
        }
        let (lb, ub, st) = const_bounds(op, consts)?;
        let trip = trip_count(lb, ub, st);
        if st <= 0 || trip > self.max {
            return None;
        }
        let body = &op.regions[0].blocks[0];
        let iv = body.args[0];
        // The body's own allocations are private to each iteration.
        let mut own: HashSet<Value> = HashSet::new();
        let mut writes_other = false;
        for o in &body.ops {
            o.walk(&mut |x| {
                let e = effects(x);
                if e.allocates {
                    own.extend(x.results.iter().copied());
                } else if e.writes_any() && !matches!(x.name.as_str(), "memref.store") {
                    writes_other = true;
                }
            });
        }
        if writes_other {
            return None;
        }
        let acc: Vec<index::Access> = index::accesses_through(&body.ops, &[iv], outer)?
            .into_iter()
            .filter(|a| !own.contains(&a.mem))
            .collect();
        index::cross_iteration_conflict(&acc, &[iv]).is_none().then_some((lb, st, trip))
    }
}

/// The iterations of `op` (`trip` of them from `lb` by `st`) interleaved: op by op of
/// the body, each for every iteration.
fn jam(b: &mut Builder, op: &Op, lb: i64, st: i64, trip: i64) -> Vec<Op> {
    let body = &op.regions[0].blocks[0];
    let iv = body.args[0];
    let (_, body_ops) = body.ops.split_last().expect("scf.for has a terminator");
    let mut maps: Vec<HashMap<Value, Value>> = (0..trip).map(|k| HashMap::from([(iv, b.index(lb + k * st))])).collect();
    let mut out = b.take();
    for o in body_ops {
        for map in &mut maps {
            out.push(b.m.clone_op(o, map));
        }
    }
    out
}
