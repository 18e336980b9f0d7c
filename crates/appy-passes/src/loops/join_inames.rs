//! `appy-join-inames{outer=i inner=j}`: Loopy's `join_inames` for a perfect nest of two
//! parallel loops. `for i: for j: body` (both `parallel for`) becomes one parallel loop
//! `i_j` over `ni * nj` iterations, iteration `t` running `i = lbi + (t / nj) * sti`,
//! `j = lbj + (t % nj) * stj`. The schedule after it (strip-mining) then sees one
//! loop: one range of groups and threads instead of a grid of groups per row.
//!
//! Both loops being parallel, their iterations are independent already (the frontend's
//! race checker), so joining them is legal when it applies: `i`'s body is `j` alone
//! after pure computations, `j`'s bounds do not depend on `i`, and neither loop has
//! reductions. Anything else is refused at the outer loop's line.

use super::{Place, Select, no_such_loop, perfect_nest, replace_named};
use crate::analyses::within::Within;
use crate::util::{ParallelParts, emit_trip_count, make_parallel, split_parallel};
use crate::{OptKind, Pass, PassInfo, PassOpt, PassOptions};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::{INAMES, LoopKind, TAGS};
use std::collections::HashMap;

/// The pass.
pub struct JoinInames {
    /// The outer loop.
    pub outer: String,
    /// The loop directly inside it.
    pub inner: String,
    /// Only the loops this matches (Loopy's `within=`).
    pub within: Option<Within>,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-join-inames",
    description: "join a perfect nest of two parallel loops into one parallel loop (Loopy's join_inames)",
    options: &[
        PassOpt {
            name: "outer",
            kind: crate::OptKind::Loops,
            default: "",
            help: "the outer parallel loop",
        },
        PassOpt {
            name: "inner",
            kind: OptKind::Iname,
            default: "",
            help: "the parallel loop directly inside it",
        },
        PassOpt::WITHIN,
    ],
    file: file!(),
    make: |o| Ok(Box::new(JoinInames::from_options(o)?)),
};

impl JoinInames {
    /// The pass with the options of a pipeline (or of a `transform(join(...))` clause).
    pub fn from_options(o: &PassOptions) -> Result<JoinInames, String> {
        Ok(JoinInames {
            within: o.within()?,
            outer: o.loops("outer")?,
            inner: o.iname("inner")?,
        })
    }

    /// Joins the nest in one function's body.
    pub(crate) fn apply(&self, b: &mut Builder, func: &Op, ops: Vec<Op>) -> Result<Vec<Op>, IrError> {
        if self.outer.is_empty() || self.inner.is_empty() {
            return Err(IrError::user_at(
                func,
                "appy-join-inames needs the two loops: outer=NAME inner=NAME",
            ));
        }
        let sel = Select::new(func, &ops, &self.outer, self.within.as_ref());
        let (out, found) = replace_named(ops, &sel, Place::default(), &mut |op, _| self.join(b, op))?;
        if !found {
            // Nothing was replaced: `out` is the body as it was.
            return Err(no_such_loop(func, INFO.name, &sel, &out));
        }
        Ok(out)
    }

    fn join(&self, b: &mut Builder, outer: Op) -> Result<Vec<Op>, IrError> {
        let (i, j) = (&self.outer, &self.inner);
        let refuse = |why: String| Err(IrError::user_at(&outer, format!("cannot join `{i}` and `{j}`: {why}")));
        let parallel = |o: &Op| LoopKind::of(o) == Some(LoopKind::Workers) && o.tags().is_empty();
        if !parallel(&outer) || outer.operands.len() != 3 {
            return refuse(format!("`{i}` is not a parallel loop without reductions"));
        }
        let (li, dep) = match perfect_nest(&outer, j, "scf.reduce") {
            Ok(n) => n,
            Err(why) => return refuse(why),
        };
        let inner_op = &outer.regions[0].blocks[0].ops[li];
        if !parallel(inner_op) || inner_op.operands.len() != 3 {
            return refuse(format!("`{j}` is not a parallel loop without reductions"));
        }
        let loc = outer.loc.clone();
        b.loc = loc.clone();
        let attrs: Vec<(String, String)> = outer.attrs.iter().filter(|(k, _)| k != INAMES && k != TAGS).cloned().collect();
        let p = split_parallel(outer);
        let mut pre = p.body;
        let inner = pre.pop().expect("the inner loop");
        let (moved, hoisted): (Vec<Op>, Vec<Op>) = pre.into_iter().partition(|o| o.results.iter().any(|r| dep.contains(r)));
        let q = split_parallel(inner);
        let mut out = hoisted;
        // Trip counts, then the joined range.
        let ni = emit_trip_count(b, p.lbs[0], p.ubs[0], p.steps[0]);
        let nj = emit_trip_count(b, q.lbs[0], q.ubs[0], q.steps[0]);
        let total = b.bin("arith.muli", ni, nj);
        let c0 = b.index(0);
        let c1 = b.index(1);
        out.extend(b.take());
        let t = b.m.value("index");
        let qi = b.bin("arith.divsi", t, nj);
        let si = b.bin("arith.muli", qi, p.steps[0]);
        let ival = b.bin("arith.addi", p.lbs[0], si);
        let rj = b.bin("arith.remsi", t, nj);
        let sj = b.bin("arith.muli", rj, q.steps[0]);
        let jval = b.bin("arith.addi", q.lbs[0], sj);
        let mut jbody = b.take();
        let map = HashMap::from([(p.ivs[0], ival), (q.ivs[0], jval)]);
        for mut o in moved.into_iter().chain(q.body) {
            o.remap_uses(&map);
            jbody.push(o);
        }
        let parts = ParallelParts {
            lbs: vec![c0],
            ubs: vec![total],
            steps: vec![c1],
            inits: vec![],
            ivs: vec![t],
            body: jbody,
            reduce: q.reduce,
        };
        let mut joined = make_parallel(parts, vec![], &attrs);
        joined.loc = loc;
        joined.set_inames(&[format!("{i}_{j}")]);
        out.push(joined);
        Ok(out)
    }
}

impl Pass for JoinInames {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| rw.rewrite_functions(|b, func, ops| self.apply(b, func, ops)))
    }
}
