//! `appy-reorder{outer=j inner=k}`: loop interchange, Loopy's `prioritize_loops` for a
//! perfect nest of two sequential loops. `for j: for k: body` becomes `for k: for j:
//! body`.
//!
//! Legal when the order of the iterations cannot change a result, which the pass proves
//! from the subscripts ([`crate::analyses::index`]):
//! - `k`'s bounds do not depend on `j` (a rectangle), and neither loop carries values;
//! - every subscript is affine in `j` and `k`;
//! - every array the body writes is accessed at one subscript only, which touches a
//!   different element in every iteration (its coefficients of `j` and `k` have rank 2),
//!   so no element is written in one iteration and read or written in another;
//! - the body updates no scalar defined outside it and calls nothing that may write
//!   memory.
//!
//! Anything else is refused at the outer loop's line, with the reason.

use super::{Place, Select, no_such_loop, perfect_nest, replace_named};
use crate::analyses::index;
use crate::analyses::within::Within;
use crate::{OptKind, Pass, PassInfo, PassOpt, PassOptions};
use appy_ir::diag::IrError;
use appy_ir::effects::{Access, effects};
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::types::MemRefType;

/// The pass.
pub struct Reorder {
    /// The loop that becomes the inner one.
    pub outer: String,
    /// The loop that becomes the outer one.
    pub inner: String,
    /// Only the loops this matches (Loopy's `within=`).
    pub within: Option<Within>,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-reorder",
    description: "interchange a perfect nest of two sequential loops `outer` and `inner` (when no result can change)",
    options: &[
        PassOpt {
            name: "outer",
            kind: crate::OptKind::Loops,
            default: "",
            help: "the outer loop of the nest",
        },
        PassOpt {
            name: "inner",
            kind: OptKind::Iname,
            default: "",
            help: "the loop directly inside it",
        },
        PassOpt::WITHIN,
    ],
    file: file!(),
    make: |o| Ok(Box::new(Reorder::from_options(o)?)),
};

impl Reorder {
    /// The pass with the options of a pipeline (or of a `transform(reorder(...))` clause).
    pub fn from_options(o: &PassOptions) -> Result<Reorder, String> {
        Ok(Reorder {
            within: o.within()?,
            outer: o.loops("outer")?,
            inner: o.iname("inner")?,
        })
    }

    /// Interchanges the nest in one function's body.
    pub(crate) fn apply(&self, m: &Module, func: &Op, ops: Vec<Op>) -> Result<Vec<Op>, IrError> {
        if self.outer.is_empty() || self.inner.is_empty() {
            return Err(IrError::user_at(func, "appy-reorder needs the two loops: outer=NAME inner=NAME"));
        }
        let sel = Select::new(func, &ops, &self.outer, self.within.as_ref());
        let (out, found) = replace_named(ops, &sel, Place::default(), &mut |op, _| self.interchange(m, op))?;
        if !found {
            // Nothing was replaced: `out` is the body as it was.
            return Err(no_such_loop(func, INFO.name, &sel, &out));
        }
        Ok(out)
    }

    /// `for j { pre; for k { body } }` → `pre'; for k { for j { pre''; body } }`, where
    /// `pre` are pure ops (the inner loop's bounds, `j`'s conversions): those that do not
    /// depend on `j` go before the nest (`pre'`), the others into the new inner loop.
    fn interchange(&self, m: &Module, mut outer: Op) -> Result<Vec<Op>, IrError> {
        let (j, k) = (&self.outer, &self.inner);
        let refuse = |why: String| Err(IrError::user_at(&outer, format!("cannot reorder `{j}` and `{k}`: {why}")));
        if outer.name != "scf.for" || outer.operands.len() != 3 {
            return refuse(format!("`{j}` is not a sequential loop without carried values"));
        }
        let jv = outer.regions[0].blocks[0].args[0];
        let (li, dep) = match perfect_nest(&outer, k, "scf.yield") {
            Ok(n) => n,
            Err(why) => return refuse(why),
        };
        let body = &outer.regions[0].blocks[0].ops;
        let inner = &body[li];
        if inner.name != "scf.for" || inner.operands.len() != 3 {
            return refuse(format!("`{k}` is not a sequential loop without carried values"));
        }
        let kv = inner.regions[0].blocks[0].args[0];
        // The subscripts follow `j` through the computations before the inner loop.
        let mut seen: Vec<Op> = body[..li].to_vec();
        seen.extend(inner.regions[0].blocks[0].ops.iter().cloned());
        if let Some(why) = order_matters(m, &seen, jv, kv) {
            return refuse(why);
        }
        let mut ops = std::mem::take(&mut outer.regions[0].blocks[0].ops);
        ops.pop(); // scf.yield
        let mut inner = ops.pop().expect("the inner loop");
        let (moved, hoisted): (Vec<Op>, Vec<Op>) = ops.into_iter().partition(|o| o.results.iter().any(|r| dep.contains(r)));
        let mut jbody = moved;
        jbody.extend(std::mem::take(&mut inner.regions[0].blocks[0].ops));
        outer.regions[0].blocks[0].ops = jbody;
        let yield_op = Op::new("scf.yield").with_loc(outer.loc.clone());
        inner.regions[0].blocks[0].ops = vec![outer, yield_op];
        let mut out = hoisted;
        out.push(inner);
        Ok(out)
    }
}

/// Why the order of the iterations `(j, k)` of `body` may change a result; `None` when
/// it cannot (module docs).
fn order_matters(m: &Module, body: &[Op], jv: Value, kv: Value) -> Option<String> {
    let mut unknown = false;
    let mut scalar = false;
    for o in body {
        o.walk(&mut |x| {
            let e = effects(x);
            unknown |= e.writes == Access::Any;
            if x.name == "memref.store"
                && let Some(mem) = x.operands.get(1)
            {
                scalar |= MemRefType::parse(m.ty(*mem)).is_some_and(|t| t.rank() == 0);
            }
        });
    }
    if unknown {
        return Some("the body calls something that may write memory".into());
    }
    if scalar {
        return Some("the body updates a scalar in every iteration, and the order of the updates would change".into());
    }
    let Some(acc) = index::accesses(body, &[jv, kv]) else {
        return Some("a subscript is not affine in the loop variables".into());
    };
    if let Some(why) = index::cross_iteration_conflict(&acc, &[jv, kv]) {
        return Some(why.into());
    }
    None
}

impl Pass for Reorder {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| rw.rewrite_functions(|b, func, ops| self.apply(&b.m, func, ops)))
    }
}
