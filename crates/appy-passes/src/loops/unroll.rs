//! `appy-unroll`: the code generation of the `unr` tag, and of the `ilp` loops that
//! `appy-ilp` (which runs first) could not interleave. A sequential loop (`scf.for`) so
//! tagged, with constant bounds, becomes its iterations one after another, each with its induction variable a constant; the values it carries flow
//! from one copy to the next. Loops inside are unrolled first.
//!
//! A tagged loop whose trip count is not a constant, or above the `max` budget, is
//! refused at its source line with what to write instead (split it first).

use crate::analyses::nest::{const_bounds, int_constants, trip_count};
use crate::{Pass, PassInfo, PassOpt};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::Tag;
use std::collections::HashMap;

/// The pass.
pub struct Unroll {
    /// The largest trip count unrolled.
    pub max: i64,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-unroll",
    description: "unroll the sequential loops tagged unr, and those tagged ilp that appy-ilp left (constant trip counts)",
    options: &[PassOpt {
        name: "max",
        kind: crate::OptKind::Int { min: 1, max: 4096 },
        default: "256",
        help: "the largest trip count unrolled (a larger one is refused)",
    }],
    file: file!(),
    make: |o| Ok(Box::new(Unroll { max: o.int("max")? })),
};

impl Pass for Unroll {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| {
            rw.rewrite_functions(|b, _, ops| {
                let consts = int_constants(&ops);
                let mut map = HashMap::new();
                self.block(b, ops, &consts, &mut map)
            })
        })
    }
}

impl Unroll {
    /// Unrolls the tagged loops of a block; `map` takes each unrolled loop's results to
    /// the values that replace them, for the ops after it.
    fn block(
        &self,
        b: &mut Builder,
        ops: Vec<Op>,
        consts: &HashMap<Value, i64>,
        map: &mut HashMap<Value, Value>,
    ) -> Result<Vec<Op>, IrError> {
        let mut out = Vec::with_capacity(ops.len());
        for mut op in ops {
            op.remap_uses(map);
            for r in &mut op.regions {
                for blk in &mut r.blocks {
                    let inner = std::mem::take(&mut blk.ops);
                    blk.ops = self.block(b, inner, consts, map)?;
                }
            }
            let tagged = op.name == "scf.for" && matches!(op.tags().first(), Some(Tag::Unr | Tag::Ilp));
            if !tagged {
                out.push(op);
                continue;
            }
            let name = op.inames().first().cloned().unwrap_or_else(|| "loop".into());
            let Some((lb, ub, st)) = const_bounds(&op, consts) else {
                return Err(IrError::user_at(
                    &op,
                    format!(
                        "loop `{name}` is tagged to unroll but its trip count is not a constant: split it first and unroll the inner loop (`split({name}, 4, inner=unr)` in a pragma's transform(...), appy-split-iname{{iname={name} factor=4 inner-tag=unr}} in a pipeline)"
                    ),
                ));
            };
            if st <= 0 {
                return Err(IrError::user_at(
                    &op,
                    format!("loop `{name}` has step {st}: only positive steps unroll"),
                ));
            }
            let trip = trip_count(lb, ub, st);
            if trip > self.max {
                return Err(IrError::user_at(
                    &op,
                    format!(
                        "loop `{name}` has {trip} iterations, more than the unrolling budget of {}: split it first and unroll the inner loop",
                        self.max
                    ),
                ));
            }
            b.loc = op.loc.clone();
            let body = &op.regions[0].blocks[0];
            let (iv, accs) = (body.args[0], &body.args[1..]);
            let (yield_op, body_ops) = body.ops.split_last().expect("scf.for has a terminator");
            let mut cur: Vec<Value> = op.operands[3..].to_vec();
            for k in 0..trip {
                let i = b.index(lb + k * st);
                out.extend(b.take());
                let mut local: HashMap<Value, Value> = HashMap::from([(iv, i)]);
                local.extend(accs.iter().copied().zip(cur.iter().copied()));
                for o in body_ops {
                    out.push(b.m.clone_op(o, &mut local));
                }
                cur = yield_op.operands.iter().map(|v| local.get(v).copied().unwrap_or(*v)).collect();
            }
            map.extend(op.results.iter().copied().zip(cur));
        }
        Ok(out)
    }
}
