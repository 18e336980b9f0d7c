//! `appy-split-iname{iname=j factor=4 outer-tag=for inner-tag=unr}`: Loopy's
//! `split_iname`. The loop named `j` becomes a loop `j_outer` over chunks of `factor`
//! iterations around a loop `j_inner` over the iterations of a chunk, each tagged.
//!
//! Two splits are supported:
//! - a sequential loop (`scf.for`), outer tag `for` or `ord`, inner tag `unr`, `ilp`,
//!   `for` or `ord`. The full chunks run first, iteration `j = j_outer + j_inner*step`
//!   with no bounds test, then the iterations left (fewer than `factor`) run in a loop
//!   `j_tail` tagged `for` (Loopy's slabs), left out when the trip count is a known
//!   multiple of `factor` (constant bounds, or `appy-assume`). Values carried from one iteration to the next stay carried,
//!   in order. `ilp` is refused for a loop that carries values: its iterations are not
//!   independent.
//! - a parallel loop of workers that is not inside another one, outer tag `g.0` and
//!   inner tag `l.0`: groups of `factor` threads (a power of two up to 4096), which is
//!   what strip-mining does with `mvl=factor`. The schedule of that loop then no longer
//!   depends on the vector length.
//!
//! A split keeps the order of a sequential loop's iterations and only regroups a
//! parallel loop's, so it is legal whenever it applies; anything else is refused with
//! what is supported.

use super::assume::multiple_of;
use super::strip_mine::StripMine;
use super::{Place, Select, carried_dependence, no_such_loop, replace_named};
use crate::analyses::nest::{const_bounds, int_constants, trip_count};
use crate::analyses::within::Within;
use crate::util::{contains, emit_trip_count, is_parallel};
use crate::{Pass, PassInfo, PassOpt, PassOptions};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::{INAMES, LoopKind, MULTIPLE, TAGS, Tag};
use std::collections::HashMap;

/// The pass.
pub struct SplitIname {
    /// The loop to split.
    pub iname: String,
    /// Iterations per chunk.
    pub factor: i64,
    /// The tag of the loop over chunks.
    pub outer: Tag,
    /// The tag of the loop inside a chunk.
    pub inner: Tag,
    /// Only the loops this matches (Loopy's `within=`).
    pub within: Option<Within>,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-split-iname",
    description: "split the loop named `iname` into `iname_outer` over chunks of `factor` iterations and `iname_inner`, tagged (Loopy's split_iname)",
    options: &[
        PassOpt {
            name: "iname",
            kind: crate::OptKind::Loops,
            default: "",
            help: "the loop to split",
        },
        PassOpt {
            name: "factor",
            kind: crate::OptKind::Int { min: 1, max: 4096 },
            default: "4",
            help: "iterations per chunk",
        },
        PassOpt {
            name: "outer-tag",
            kind: crate::OptKind::Tag,
            default: "for",
            help: "the tag of the loop over chunks",
        },
        PassOpt {
            name: "inner-tag",
            kind: crate::OptKind::Tag,
            default: "for",
            help: "the tag of the loop inside a chunk",
        },
        PassOpt::WITHIN,
    ],
    file: file!(),
    make: |o| Ok(Box::new(SplitIname::from_options(o)?)),
};

impl SplitIname {
    /// The pass with the options of a pipeline (or of a `transform(split(...))` clause).
    pub fn from_options(o: &PassOptions) -> Result<SplitIname, String> {
        Ok(SplitIname {
            within: o.within()?,
            iname: o.loops("iname")?,
            factor: o.int("factor")?,
            outer: o.tag("outer-tag")?,
            inner: o.tag("inner-tag")?,
        })
    }

    /// Splits the loop in one function's body.
    pub(crate) fn apply(&self, b: &mut Builder, func: &Op, ops: Vec<Op>) -> Result<Vec<Op>, IrError> {
        if self.iname.is_empty() {
            return Err(IrError::user_at(func, "appy-split-iname needs the loop to split: iname=NAME"));
        }
        let consts = int_constants(&ops);
        let sel = Select::new(func, &ops, &self.iname, self.within.as_ref());
        let (out, found) = replace_named(ops, &sel, Place::default(), &mut |op, place| self.split(b, op, place, &consts))?;
        if !found {
            // Nothing was replaced: `out` is the body as it was.
            return Err(no_such_loop(func, INFO.name, &sel, &out));
        }
        Ok(out)
    }

    fn split(&self, b: &mut Builder, op: Op, place: Place, consts: &HashMap<Value, i64>) -> Result<Vec<Op>, IrError> {
        let n = &self.iname;
        if !op.tags().is_empty() {
            let tags: Vec<String> = op.tags().iter().map(|t| t.to_string()).collect();
            return Err(IrError::user_at(
                &op,
                format!(
                    "loop `{n}` is already scheduled (tagged {}); split the loops it was split into",
                    tags.join(", ")
                ),
            ));
        }
        let (outer, inner) = (self.outer, self.inner);
        match LoopKind::of(&op) {
            Some(LoopKind::Workers) if outer == Tag::Group(0) && inner == Tag::Local(0) => {
                if place.in_workers {
                    return Err(IrError::user_at(
                        &op,
                        format!(
                            "loop `{n}` is inside another parallel loop: only a parallel loop outside any other splits into groups and threads"
                        ),
                    ));
                }
                if contains(&op, &is_parallel) {
                    return Err(IrError::user_at(
                        &op,
                        format!("loop `{n}` has parallel loops inside it: split the innermost, or a single parallel loop"),
                    ));
                }
                if self.factor & (self.factor - 1) != 0 {
                    return Err(IrError::user_at(
                        &op,
                        format!(
                            "a parallel loop splits into groups of a power of two threads (up to 4096), not {}",
                            self.factor
                        ),
                    ));
                }
                let mut pre = vec![];
                let sm = StripMine { mvl: self.factor };
                let new = sm.strip_parallel(b, op, &mut pre)?;
                pre.push(new);
                Ok(pre)
            }
            Some(LoopKind::Simd | LoopKind::Lanes) => Err(IrError::user_at(
                &op,
                format!(
                    "loop `{n}` is a vector loop (simd): its lanes are a group's threads already, and splitting it is not supported yet"
                ),
            )),
            Some(LoopKind::Workers) => Err(IrError::user_at(
                &op,
                format!("loop `{n}` is parallel: it splits with outer-tag=g.0 inner-tag=l.0 only (asked: outer {outer}, inner {inner})"),
            )),
            Some(_) if op.name == "scf.for" => {
                if !matches!(outer, Tag::For | Tag::Ord) || !matches!(inner, Tag::Unr | Tag::Ilp | Tag::For | Tag::Ord) {
                    return Err(IrError::user_at(
                        &op,
                        format!(
                            "loop `{n}` is sequential: its chunks run in order (outer-tag for or ord) and a chunk's iterations are unrolled or run in order (inner-tag unr, ilp, for or ord); asked: outer {outer}, inner {inner}"
                        ),
                    ));
                }
                if inner == Tag::Ilp
                    && let Some(why) = carried_dependence(&b.m, &op)
                {
                    return Err(IrError::user_at(
                        &op,
                        format!("the iterations of loop `{n}` are not independent as `ilp` requires ({why}): unroll it with `unr` instead"),
                    ));
                }
                Ok(split_for(b, op, self.factor, outer, inner, consts))
            }
            _ => Err(IrError::user_at(
                &op,
                format!("`{n}` is not a loop that appy-split-iname can split"),
            )),
        }
    }
}

impl Pass for SplitIname {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| rw.rewrite_functions(|b, func, ops| self.apply(b, func, ops)))
    }
}

/// Splits `scf.for %j = %lb to %ub step %st iter_args(...)` into the full chunks,
/// `scf.for %base = %lb to %mid step %st*F` around `scf.for %k = 0 to F` whose body
/// runs iteration `%base + %k*%st`, then the rest, `scf.for %j = %mid to %ub` (`j_tail`,
/// tagged `for`), which is left out when the trip count is a known multiple of `F`.
/// Carried values flow from the chunks into the rest.
fn split_for(b: &mut Builder, op: Op, factor: i64, outer: Tag, inner: Tag, consts: &HashMap<Value, i64>) -> Vec<Op> {
    let loc = op.loc.clone();
    b.loc = loc.clone();
    let name = op.inames().first().cloned().unwrap_or_default();
    let (lb, ub, st) = (op.operands[0], op.operands[1], op.operands[2]);
    let inits = op.operands[3..].to_vec();
    let results = op.results.clone();
    let tys: Vec<String> = results.iter().map(|r| b.m.ty(*r).to_string()).collect();
    // A trip count that is a known multiple of the factor needs no rest.
    // (or, by `appy-assume`, a multiple of a multiple of it).
    let exact = matches!(const_bounds(&op, consts), Some((l, u, s)) if s > 0 && trip_count(l, u, s) % factor == 0)
        || multiple_of(&op).is_some_and(|k| k % factor == 0);
    let tail_src = (!exact).then(|| b.m.clone_op(&op, &mut HashMap::new()));
    let attrs: Vec<(String, String)> = op
        .attrs
        .iter()
        .filter(|(k, _)| k != INAMES && k != TAGS && k != MULTIPLE)
        .cloned()
        .collect();
    let mut op = op;
    let block = std::mem::take(&mut op.regions[0].blocks[0]);
    let (iv, accs) = (block.args[0], block.args[1..].to_vec());
    let mut body = block.ops;
    let f = b.index(factor);
    let chunk = b.bin("arith.muli", st, f);
    // The end of the full chunks: lb + (max(0, ceil((ub - lb) / st)) / F) * st * F.
    let mid = if exact {
        ub
    } else {
        let trip = emit_trip_count(b, lb, ub, st);
        let full = b.bin("arith.divsi", trip, f);
        let len = b.bin("arith.muli", full, chunk);
        b.bin("arith.addi", lb, len)
    };
    let c0 = b.index(0);
    let c1 = b.index(1);
    let mut out = b.take();
    let base = b.m.value("index");
    let k = b.m.value("index");
    let accs_o: Vec<Value> = tys.iter().map(|t| b.m.value(t.clone())).collect();
    let accs_i: Vec<Value> = tys.iter().map(|t| b.m.value(t.clone())).collect();
    let off = b.bin("arith.muli", k, st);
    let i = b.bin("arith.addi", base, off);
    let mut map: HashMap<Value, Value> = HashMap::from([(iv, i)]);
    map.extend(accs.iter().copied().zip(accs_i.iter().copied()));
    for o in &mut body {
        o.remap_uses(&map);
    }
    let mut inner_body = b.take();
    inner_body.extend(body);
    let inner_results: Vec<Value> = tys.iter().map(|t| b.m.value(t.clone())).collect();
    let mut inner_loop = Op::new("scf.for")
        .with_operands([c0, f, c1].into_iter().chain(accs_o.iter().copied()))
        .with_results(inner_results.clone())
        .with_region(Builder::region(std::iter::once(k).chain(accs_i).collect(), inner_body))
        .with_tags(&[inner])
        .with_loc(loc.clone());
    let main_results: Vec<Value> = if exact {
        results.clone()
    } else {
        tys.iter().map(|t| b.m.value(t.clone())).collect()
    };
    if !name.is_empty() {
        inner_loop.set_inames(&[format!("{name}_inner")]);
    }
    let mut outer_loop = Op::new("scf.for")
        .with_operands([lb, mid, chunk].into_iter().chain(inits))
        .with_results(main_results.clone())
        .with_region(Builder::region(
            std::iter::once(base).chain(accs_o).collect(),
            vec![inner_loop, Builder::yield_op(&inner_results).with_loc(loc.clone())],
        ))
        .with_loc(loc);
    for (key, v) in attrs {
        outer_loop.set_attr(key, v);
    }
    outer_loop.set_tags(&[outer]);
    if !name.is_empty() {
        outer_loop.set_inames(&[format!("{name}_outer")]);
    }
    out.push(outer_loop);
    if let Some(mut tail) = tail_src {
        tail.operands[0] = mid;
        tail.operands.truncate(3);
        tail.operands.extend(main_results);
        tail.results = results;
        tail.set_tags(&[Tag::For]);
        // The rest runs `trip mod factor` iterations: not the assumed multiple.
        tail.remove_attr(MULTIPLE);
        if !name.is_empty() {
            tail.set_inames(&[format!("{name}_tail")]);
        }
        out.push(tail);
    }
    out
}
