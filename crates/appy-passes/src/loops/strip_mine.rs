//! `appy-strip-mine`: the step from the `appy` level to the `loops` level
//! ("assembly-level APPy", seed 001 §3.2 and §5.1).
//!
//! Every piece of vector work becomes explicit lanes of an MVL-wide vector:
//!
//! * a `simd` loop inside a worker becomes a sequential `scf.for` over chunks of MVL
//!   iterations, each chunk an `scf.parallel {appy.lanes}` over `[0, MVL)` with a
//!   bounds mask (`scf.if i < ub`); reductions are reduced across the lanes of a chunk
//!   and carried across chunks;
//! * a parallel loop with no vector work inside (and `parallel for simd`) is split into
//!   workers of MVL iterations: `scf.parallel {appy.parallel}` over chunks around an
//!   `scf.parallel {appy.lanes}`;
//! * a `simd` loop outside any parallel loop runs as a single worker;
//! * vector loops nested inside lanes run sequentially within the lane.
//!
//! Rectangular perfect nests of parallel loops (no reductions except on the innermost
//! loop) stay nests: they become a multi-dimensional grid of workers.
//!
//! Each split is Loopy's `split_iname` with tags: a parallel loop `i` becomes workers
//! `i_outer` tagged `g.0` around lanes `i_inner` tagged `l.0` (what
//! `appy-split-iname{iname=i factor=MVL outer-tag=g.0 inner-tag=l.0}` makes), a vector
//! loop becomes chunks tagged `for` around lanes tagged `l.0`. Code generation reads the
//! tags. Loops that already have tags (scheduled by a transform) are left as they are.

use crate::analyses::nest::nest_depth;
use crate::util::*;
use crate::{Pass, PassInfo, PassOpt};
use appy_ir::build::{Builder, IPred};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::{LE, LoopKind, Mark, RESERVED_PREFIX, Tag};
use std::collections::HashMap;

/// The pass; `mvl` is the number of lanes.
pub struct StripMine {
    /// Maximum vector length.
    pub mvl: i64,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-strip-mine",
    description: "appy → loops: strip-mine simd and parallel loops into MVL-wide lanes (scf.parallel {appy.lanes})",
    options: &[PassOpt::MVL],
    file: file!(),
    make: |o| Ok(Box::new(StripMine { mvl: o.mvl()? })),
};

impl Pass for StripMine {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        // `appy.mvl` becomes the chosen constant.
        m.op.walk_mut(&mut |o| {
            if o.name == "appy.mvl" {
                o.name = "arith.constant".into();
                o.set_attr("value", format!("{} : i64", self.mvl));
            }
        });
        rewrite(m, |rw| rw.rewrite_functions(|b, _, ops| self.process(b, ops, Ctx::Host)))
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ctx {
    Host,
    Worker,
    Lanes,
}

impl StripMine {
    fn process(&self, b: &mut Builder, ops: Vec<Op>, ctx: Ctx) -> Result<Vec<Op>, IrError> {
        let mut out = vec![];
        for mut op in ops {
            // A scheduled loop (one with tags) is already split.
            let is_loop = op.name == "scf.parallel" && (is_parallel(&op) || is_simd(&op)) && op.tags().is_empty();
            if ctx == Ctx::Host && op.name == "scf.for" && op.has_mark(Mark::Sequential) && !contains(&op, &is_parallel) {
                // `sequential for` outside parallel loops: one worker runs all iterations
                // (seed 001 §3.1), so the data stays where the kernels run; simd loops
                // inside run on the worker's lanes.
                let w = wrap_sequential(b, op, &mut out);
                let mut pre = vec![];
                let root = self.worker_root(b, w, 1, &mut pre)?;
                out.extend(pre);
                out.push(root);
                continue;
            }
            if is_loop && ctx == Ctx::Host {
                if is_simd(&op) {
                    op = wrap_single_worker(b, op, &mut out);
                }
                let depth = nest_depth(&op);
                let mut pre = vec![];
                let root = self.worker_root(b, op, depth, &mut pre)?;
                out.extend(pre);
                out.push(root);
            } else if is_loop && ctx == Ctx::Worker {
                self.strip_simd(b, op, &mut out)?;
            } else if is_loop && ctx == Ctx::Lanes {
                sequentialize(b, op, &mut out, self)?;
            } else {
                // Inside lanes (of a loop split by a transform), vector loops run in
                // each lane.
                let inner_ctx = if LoopKind::of(&op) == Some(LoopKind::Lanes) {
                    Ctx::Lanes
                } else {
                    ctx
                };
                for r in &mut op.regions {
                    for blk in &mut r.blocks {
                        let inner = std::mem::take(&mut blk.ops);
                        blk.ops = self.process(b, inner, inner_ctx)?;
                    }
                }
                out.push(op);
            }
        }
        Ok(out)
    }

    /// A top-level parallel nest: strip-mine its innermost level or the vector
    /// loops inside it.
    fn worker_root(&self, b: &mut Builder, mut op: Op, depth: usize, pre: &mut Vec<Op>) -> Result<Op, IrError> {
        if !op.tags().is_empty() {
            // Split by a transform already.
            return Ok(op);
        }
        if depth > 1 {
            let body = &mut op.regions[0].blocks[0].ops;
            let idx = body.iter().position(|o| o.name == "scf.parallel").expect("inner loop");
            let inner = body.remove(idx);
            let new = self.worker_root(b, inner, depth - 1, pre)?;
            op.regions[0].blocks[0].ops.insert(idx, new);
            return Ok(op);
        }
        let has_vector_work = contains(&op, &|o| o.name == "scf.parallel");
        if op.has_mark(Mark::Simd) || !has_vector_work {
            // Thread-mapped: workers of MVL iterations.
            // The worker-count computation only uses the loop's bounds, which a
            // rectangular nest defines outside the whole nest: hoist it.
            return self.strip_parallel(b, op, pre);
        }
        let body = std::mem::take(&mut op.regions[0].blocks[0].ops);
        op.regions[0].blocks[0].ops = self.process(b, body, Ctx::Worker)?;
        Ok(op)
    }

    /// `scf.parallel {appy.parallel}` (1-D) → workers (`g.0`) × lanes (`l.0`) of
    /// `self.mvl` iterations each; the workers' count is computed into `pre`.
    pub(crate) fn strip_parallel(&self, b: &mut Builder, op: Op, pre: &mut Vec<Op>) -> Result<Op, IrError> {
        let attrs = op.attrs.clone();
        let name = op.inames().into_iter().next();
        let loc = op.loc.clone();
        let results = op.results.clone();
        let p = split_parallel(op);
        if p.ivs.len() != 1 {
            return Err(IrError::located(
                loc.as_deref(),
                "multi-dimensional scf.parallel is not supported by appy-strip-mine",
            ));
        }
        b.loc = loc.clone();
        let (lb, ub, st) = (p.lbs[0], p.ubs[0], p.steps[0]);
        let mvl = b.index(self.mvl);
        let chunk = b.bin("arith.muli", st, mvl);
        let span = b.bin("arith.subi", ub, lb);
        let nw = b.bin("arith.ceildivsi", span, chunk);
        let c0 = b.index(0);
        let c1 = b.index(1);
        pre.extend(b.take());
        // Worker body: the lanes loop.
        let w = b.m.value("index");
        let tys: Vec<String> = results.iter().map(|r| b.m.ty(*r).to_string()).collect();
        let mut ids = vec![];
        for (r, t) in p.reduce.regions.iter().zip(&tys) {
            ids.push(emit_identity(b, r, t).map_err(|e| IrError::located(loc.as_deref(), e))?);
        }
        let wbase = b.bin("arith.muli", w, chunk);
        let wpre = b.take();
        let (lpre, lanes) = self.lanes_loop(
            b,
            LanesSpec {
                base: wbase,
                lb: Some(lb),
                ub,
                st,
                iv: p.ivs[0],
                body: p.body,
                reduce: &p.reduce,
                ids: &ids,
                tys: &tys,
                loc: loc.clone(),
                iname: name.as_ref().map(|n| format!("{n}_inner")),
            },
        )?;
        let lane_results = lanes.results.clone();
        let mut wbody = wpre;
        wbody.extend(lpre);
        wbody.push(lanes);
        let mut red = Op::new("scf.reduce").with_operands(lane_results).with_loc(loc.clone());
        red.regions = p.reduce.regions.clone();
        let parts = ParallelParts {
            lbs: vec![c0],
            ubs: vec![nw],
            steps: vec![c1],
            inits: p.inits,
            ivs: vec![w],
            body: wbody,
            reduce: red,
        };
        let mut out = make_parallel(parts, results, &attrs);
        out.loc = loc;
        out.clear_mark(Mark::Simd);
        if let Some(n) = &name {
            out.set_inames(&[format!("{n}_outer")]);
        }
        out.set_tags(&[Tag::Group(0)]);
        Ok(out)
    }

    /// A simd loop inside a worker → `scf.for` over chunks of lanes.
    fn strip_simd(&self, b: &mut Builder, op: Op, out: &mut Vec<Op>) -> Result<(), IrError> {
        let loc = op.loc.clone();
        let results = op.results.clone();
        let nosync = op.has_mark(Mark::NoSync);
        let name = op.inames().into_iter().next();
        // `le(c)` with c ≤ MVL: the whole dimension is one vector (no chunk loop).
        let small = op.le_bound().is_some_and(|c| c > 0 && c <= self.mvl);
        let p = split_parallel(op);
        if p.ivs.len() != 1 {
            return Err(IrError::located(loc.as_deref(), "multi-dimensional simd loops are not supported"));
        }
        b.loc = loc.clone();
        let (lb, ub, st) = (p.lbs[0], p.ubs[0], p.steps[0]);
        let mvl = b.index(self.mvl);
        let chunk = b.bin("arith.muli", st, mvl);
        let tys: Vec<String> = results.iter().map(|r| b.m.ty(*r).to_string()).collect();
        let mut ids = vec![];
        for (r, t) in p.reduce.regions.iter().zip(&tys) {
            ids.push(emit_identity(b, r, t).map_err(|e| IrError::located(loc.as_deref(), e))?);
        }
        out.extend(b.take());
        // A single vector (`le`) starts at the loop's lower bound; otherwise each chunk
        // starts at the chunk loop's induction variable.
        let base = if small { lb } else { b.m.value("index") };
        let reduce = p.reduce.clone();
        let (lpre, mut lanes) = self.lanes_loop(
            b,
            LanesSpec {
                base,
                lb: None,
                ub,
                st,
                iv: p.ivs[0],
                body: p.body,
                reduce: &p.reduce,
                ids: &ids,
                tys: &tys,
                loc: loc.clone(),
                // A single vector is the whole dimension: the lanes keep its name.
                iname: name.as_ref().map(|n| if small { n.clone() } else { format!("{n}_inner") }),
            },
        )?;
        if nosync {
            lanes.set_mark(Mark::NoSync);
        }
        if small {
            // The lanes are the whole `le` dimension (a unit flag here, for readers).
            lanes.set_attr(LE, "unit");
            let lres = lanes.results.clone();
            out.extend(lpre);
            out.push(lanes);
            let mut map = HashMap::new();
            for (((init, r), region), res) in p.inits.iter().zip(&lres).zip(&reduce.regions).zip(&results) {
                let v = emit_combine(b, region, *init, *r);
                map.insert(*res, v);
            }
            // The combined values take the loop results' ids.
            let mut ops = b.take();
            for o in &mut ops {
                for r in &mut o.results {
                    if let Some((res, _)) = map.iter().find(|(_, v)| **v == *r) {
                        *r = *res;
                    }
                }
            }
            out.extend(ops);
            return Ok(());
        }
        let accs: Vec<Value> = tys.iter().map(|t| b.m.value(t.clone())).collect();
        let lres = lanes.results.clone();
        let mut fbody = lpre;
        fbody.push(lanes);
        let mut next = vec![];
        for ((acc, r), region) in accs.iter().zip(&lres).zip(&reduce.regions) {
            next.push(emit_combine(b, region, *acc, *r));
        }
        fbody.extend(b.take());
        fbody.push(Builder::yield_op(&next).with_loc(loc.clone()));
        let mut fop = Op::new("scf.for")
            .with_operands([lb, ub, chunk].into_iter().chain(p.inits))
            .with_results(results)
            .with_region(Builder::region(std::iter::once(base).chain(accs).collect(), fbody))
            .with_mark(Mark::Chunks)
            .with_loc(loc);
        if nosync {
            fop.set_mark(Mark::NoSync);
        }
        if let Some(n) = &name {
            fop.set_inames(&[format!("{n}_outer")]);
        }
        fop.set_tags(&[Tag::For]);
        out.push(fop);
        Ok(())
    }

    /// `scf.parallel {appy.lanes} (%l) = 0 to MVL`: lane `l` runs iteration
    /// `i = lb + base + l*st` (or `base + l*st` for chunk loops) when `i < ub`.
    fn lanes_loop(&self, b: &mut Builder, s: LanesSpec<'_>) -> Result<(Vec<Op>, Op), IrError> {
        let l = b.m.value("index");
        b.loc = s.loc.clone();
        let off = b.bin("arith.muli", l, s.st);
        let rel = b.bin("arith.addi", s.base, off);
        let i = match s.lb {
            Some(lb) => b.bin("arith.addi", lb, rel),
            None => rel,
        };
        let inb = b.cmpi(IPred::Slt, i, s.ub);
        let mut pre = b.take();
        let mut map = HashMap::new();
        map.insert(s.iv, i);
        let mut body = s.body;
        for o in &mut body {
            o.remap_uses(&map);
        }
        let body = self.process(b, body, Ctx::Lanes)?;
        let mut then = body;
        let partials = s.reduce.operands.clone();
        let part_res: Vec<Value> = s.tys.iter().map(|t| b.m.value(t.clone())).collect();
        then.push(Builder::yield_op(&partials).with_loc(s.loc.clone()));
        let mut ifop = Op::new("scf.if")
            .with_operands([inb])
            .with_results(part_res.clone())
            .with_region(Builder::region(vec![], then))
            .with_loc(s.loc.clone());
        if s.tys.is_empty() {
            ifop.regions.push(appy_ir::ir::Region::default());
        } else {
            ifop.regions
                .push(Builder::region(vec![], vec![Builder::yield_op(s.ids).with_loc(s.loc.clone())]));
        }
        pre.push(ifop);
        let mut red = Op::new("scf.reduce").with_operands(part_res).with_loc(s.loc.clone());
        red.regions = s.reduce.regions.clone();
        pre.push(red);
        let c0 = b.index(0);
        let c1 = b.index(1);
        let mvl = b.index(self.mvl);
        // Constants must precede the loop: the caller collects them with `take`.
        let results: Vec<Value> = s.tys.iter().map(|t| b.m.value(t.clone())).collect();
        let parts = ParallelParts {
            lbs: vec![c0],
            ubs: vec![mvl],
            steps: vec![c1],
            inits: s.ids.to_vec(),
            ivs: vec![l],
            body: pre,
            reduce: Op::new("scf.yield"),
        };
        // make_parallel appends `reduce`; we already have the real terminator in `body`.
        let mut op = make_parallel(parts, results, &[(Mark::Lanes.attr().into(), "unit".into())]);
        op.regions[0].blocks[0].ops.pop();
        op.loc = s.loc;
        if let Some(n) = &s.iname {
            op.set_inames(&[n]);
        }
        op.set_tags(&[Tag::Local(0)]);
        Ok((b.take(), op))
    }
}

struct LanesSpec<'a> {
    base: Value,
    /// The loop's lower bound, added to `base`; `None` when `base` already includes it
    /// (chunk loops start at `lb`).
    lb: Option<Value>,
    ub: Value,
    st: Value,
    iv: Value,
    body: Vec<Op>,
    reduce: &'a Op,
    ids: &'a [Value],
    tys: &'a [String],
    loc: Option<String>,
    /// The lanes loop's name (`i_inner` for a loop `i` split into chunks).
    iname: Option<String>,
}

/// A simd loop outside any parallel loop: one worker runs it.
fn wrap_single_worker(b: &mut Builder, op: Op, out: &mut Vec<Op>) -> Op {
    let loc = op.loc.clone();
    b.loc = loc.clone();
    let c0 = b.index(0);
    let c1 = b.index(1);
    let tys: Vec<String> = op.results.iter().map(|r| b.m.ty(*r).to_string()).collect();
    let d = op.body(0).args.len();
    let k = op.operands.len() - 3 * d;
    let inits = op.operands[3 * d..].to_vec();
    let mut ids = vec![];
    for (r, t) in op.body(0).ops.last().expect("terminator").regions.iter().zip(&tys) {
        ids.push(emit_identity(b, r, t).unwrap_or(inits[0]));
    }
    out.extend(b.take());
    let mut inner = op;
    let outer_results = std::mem::take(&mut inner.results);
    let inner_results: Vec<Value> = tys.iter().map(|t| b.m.value(t.clone())).collect();
    inner.results = inner_results.clone();
    inner.operands.truncate(3 * d);
    inner.operands.extend(ids);
    let _ = k;
    let combiners = inner.body(0).ops.last().expect("terminator").regions.clone();
    let mut red = Op::new("scf.reduce").with_operands(inner_results).with_loc(loc.clone());
    red.regions = combiners;
    let w = b.m.value("index");
    let parts = ParallelParts {
        lbs: vec![c0],
        ubs: vec![c1],
        steps: vec![c1],
        inits,
        ivs: vec![w],
        body: vec![inner],
        reduce: red,
    };
    let mut p = make_parallel(parts, outer_results, &[(Mark::Parallel.attr().into(), "unit".into())]);
    p.loc = loc;
    name_worker(&mut p);
    p
}

/// Names a one-worker loop after the loop it wraps: `_appy_w_i` for `i`.
fn name_worker(p: &mut Op) {
    let inner = p.body(0).ops.iter().find_map(|o| o.inames().into_iter().next());
    if let Some(n) = inner {
        p.set_inames(&[format!("{RESERVED_PREFIX}w_{n}")]);
    }
}

/// Wraps a sequential loop into a parallel loop of one worker.
fn wrap_sequential(b: &mut Builder, op: Op, out: &mut Vec<Op>) -> Op {
    let loc = op.loc.clone();
    b.loc = loc.clone();
    let c0 = b.index(0);
    let c1 = b.index(1);
    out.extend(b.take());
    let w = b.m.value("index");
    let parts = ParallelParts {
        lbs: vec![c0],
        ubs: vec![c1],
        steps: vec![c1],
        inits: vec![],
        ivs: vec![w],
        body: vec![op],
        reduce: Op::new("scf.reduce").with_loc(loc.clone()),
    };
    let mut p = make_parallel(parts, vec![], &[(Mark::Parallel.attr().into(), "unit".into())]);
    p.loc = loc;
    name_worker(&mut p);
    p
}

/// A vector loop inside lanes runs sequentially: `scf.for` with the reductions as
/// iteration arguments.
fn sequentialize(b: &mut Builder, op: Op, out: &mut Vec<Op>, sm: &StripMine) -> Result<(), IrError> {
    let loc = op.loc.clone();
    let results = op.results.clone();
    let names = op.inames();
    let p = split_parallel(op);
    if p.ivs.len() != 1 {
        return Err(IrError::located(loc.as_deref(), "multi-dimensional loops are not supported here"));
    }
    b.loc = loc.clone();
    let tys: Vec<String> = results.iter().map(|r| b.m.ty(*r).to_string()).collect();
    let accs: Vec<Value> = tys.iter().map(|t| b.m.value(t.clone())).collect();
    let mut body = sm.process(b, p.body, Ctx::Lanes)?;
    let mut next = vec![];
    for ((acc, part), region) in accs.iter().zip(&p.reduce.operands).zip(&p.reduce.regions) {
        next.push(emit_combine(b, region, *acc, *part));
    }
    body.extend(b.take());
    body.push(Builder::yield_op(&next).with_loc(loc.clone()));
    let mut fop = Op::new("scf.for")
        .with_operands([p.lbs[0], p.ubs[0], p.steps[0]].into_iter().chain(p.inits))
        .with_results(results)
        .with_region(Builder::region(std::iter::once(p.ivs[0]).chain(accs).collect(), body))
        .with_loc(loc);
    if !names.is_empty() {
        fop.set_inames(&names);
    }
    out.push(fop);
    Ok(())
}
