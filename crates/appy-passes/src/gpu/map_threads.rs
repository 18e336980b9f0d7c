//! `appy-gpu-map-threads`: the last of the three steps from the `loops` level to the
//! `gpu` level (after `appy-gpu-sink-loads` and `appy-gpu-outline`): the worker code in
//! each kernel runs on the threads of its block.
//!
//! * a lane of an `scf.parallel {appy.lanes}` loop is a thread (`min(MVL, 256)` threads
//!   per block; with a larger MVL each thread runs `MVL / 256` lanes in a loop, lanes a
//!   block apart, or consecutive with `contiguous=1`, the loop marked for
//!   `appy-gpu-unroll-and-jam` with `mark=1`); a
//!   reduction over lanes is a block reduction (`gpu.all_reduce`); a reduction over the
//!   chunks of a simd loop (`scf.for {appy.chunks}` with results) accumulates per
//!   thread across chunks and reduces across the block once;
//! * code of the worker outside lanes runs redundantly on every thread (all compute the
//!   same values); its stores to memory and its atomics are done by thread 0 only;
//! * barriers (`analyses::barriers::annotate_barriers`, printed by the test pass `appy-test-barriers`)
//!   separate a lanes loop that writes memory from the worker's other memory accesses,
//!   and surround thread 0's stores;
//! * the worker's updates of cross-worker reductions (`appy.worker_partial`, made by
//!   `appy-gpu-outline`) run on thread 0, once per block.

use crate::analyses::barriers::{annotate_barriers, is_chunk_reduction, kernels, private_slots, take_barriers};
use crate::analyses::nest::{index_constants, lanes_width};
use crate::gpu::outline::WORKER_PARTIAL;
use crate::gpu::sink_loads::SUNK;
use crate::util::*;
use crate::{OptKind, Pass, PassInfo, PassOpt};
use appy_ir::attrs::int_array;
use appy_ir::build::{Builder, IPred};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Region, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::TAGS;
use std::collections::{HashMap, HashSet};

/// The pass. Threads per block come from the kernel (`known_block_size`, which
/// `appy-gpu-outline` sets), lanes per loop from the loop's constant bound
/// (`analyses::nest::lanes_width`).
pub struct MapThreads {
    /// A thread's lanes are consecutive (`tid * per + k`, what vector loads need)
    /// rather than a block apart (`tid + k * T`, coalesced scalar accesses).
    pub contiguous: bool,
    /// Mark each loop over a thread's lanes with [`THREAD_LANES`].
    pub mark: bool,
}

/// The attribute on the loop over a thread's lanes (when a thread runs more than one
/// lane): what `appy-gpu-unroll-and-jam` unrolls and jams. Removed by that pass, or by
/// this one when nothing follows that would read it.
pub const THREAD_LANES: &str = "appy.thread_lanes";

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-gpu-map-threads",
    description: "gpu → gpu: map each kernel's worker code to threads (lanes = threads, block reductions, thread 0 for stores and atomics, barriers)",
    options: &[
        PassOpt {
            name: "contiguous",
            kind: OptKind::Bool,
            default: "0",
            help: "a thread's lanes are consecutive (tid*per+k; for vector loads) instead of a block apart (tid+k*T)",
        },
        PassOpt {
            name: "mark",
            kind: OptKind::Bool,
            default: "0",
            help: "mark each loop over a thread's lanes `appy.thread_lanes` (for appy-gpu-unroll-and-jam)",
        },
    ],
    file: file!(),
    make: |o| {
        Ok(Box::new(MapThreads {
            contiguous: o.flag("contiguous")?,
            mark: o.flag("mark")?,
        }))
    },
};

impl Pass for MapThreads {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| {
            rw.top
                .iter_mut()
                .filter(|o| o.name == "gpu.module")
                .flat_map(kernels)
                .try_for_each(|k| self.map_kernel(&mut rw.b, k))
        })?;
        // The tags are consumed: the kernels' code is what they said.
        for g in m.body_mut().iter_mut().filter(|o| o.name == "gpu.module") {
            g.walk_mut(&mut |o| {
                o.remove_attr(TAGS);
            });
        }
        resolve_aliases(m);
        Ok(())
    }
}

impl MapThreads {
    fn map_kernel(&self, b: &mut Builder, k: &mut Op) -> Result<(), IrError> {
        let loc = k.loc.clone();
        let threads = k
            .attr("known_block_size")
            .and_then(|t| int_array(t).first().copied())
            .filter(|t| *t > 0)
            .ok_or_else(|| IrError::located(loc.as_deref(), "a kernel without `known_block_size` (appy-gpu-outline sets it)"))?;
        let entry = &mut k.regions[0].blocks[0];
        // The thread id appy-gpu-outline made; a kernel without one has no worker code.
        let Some(tid) = entry
            .ops
            .iter()
            .find(|o| o.name == "gpu.thread_id" && o.attr("dimension").is_some_and(|d| d.contains('x')))
            .map(|o| o.results[0])
        else {
            return Ok(());
        };
        let mut ops = std::mem::take(&mut entry.ops);
        let private = private_slots(&ops);
        annotate_barriers(&mut ops, &private, true);
        b.loc = loc.clone();
        let consts = index_constants(&ops);
        let mut st = State {
            b,
            threads,
            contiguous: self.contiguous,
            mark: self.mark,
            consts,
            private,
        };
        let mut out = st.worker(ops, tid, true)?;
        fence_repeated_reductions(&mut out, false);
        for o in &mut out {
            if o.loc.is_none() {
                o.loc = loc.clone();
            }
        }
        entry.ops = out;
        Ok(())
    }
}

struct State<'a> {
    b: &'a mut Builder,
    /// Threads per block.
    threads: i64,
    /// A thread's lanes are consecutive ([`MapThreads::contiguous`]).
    contiguous: bool,
    /// Mark the loops over a thread's lanes ([`THREAD_LANES`]).
    mark: bool,
    /// The kernel's integer constants (the lanes loops' bounds among them).
    consts: HashMap<Value, i64>,
    /// The kernel's private scalar slots.
    private: HashSet<Value>,
}

impl State<'_> {
    /// Maps a worker's (uniform) code: lanes loops become per-thread code with block
    /// reductions; stores and atomics run on thread 0; barriers where
    /// [`annotate_barriers`] placed them. At the `top` level of a kernel, the loads
    /// marked `appy.sunk` stay as they are, and the worker's updates of cross-worker
    /// reductions (`appy.worker_partial`) run on thread 0, after everything else.
    fn worker(&mut self, ops: Vec<Op>, tid: Value, top: bool) -> Result<Vec<Op>, IrError> {
        let mut out = vec![];
        let mut ops = ops.into_iter().peekable();
        while let Some(mut op) = ops.next() {
            if top && op.remove_attr(SUNK).is_some() {
                out.push(op);
                continue;
            }
            if top && op.has_attr(WORKER_PARTIAL) {
                let mut group = vec![op];
                while let Some(next) = ops.next_if(|o| o.has_attr(WORKER_PARTIAL)) {
                    group.push(next);
                }
                let b = &mut *self.b;
                // The updates index their one-element buffers with a constant 0.
                let c0 = group[0].operands[2];
                let is0 = b.cmpi(IPred::Eq, tid, c0);
                out.extend(b.take());
                let mut then = vec![];
                for mut a in group {
                    a.remove_attr(WORKER_PARTIAL);
                    a.loc = b.loc.clone();
                    then.push(a);
                }
                then.push(Builder::yield_op(&[]));
                out.push(
                    Op::new("scf.if")
                        .with_operands([is0])
                        .with_region(Builder::region(vec![], then))
                        .with_region(Region::default()),
                );
                continue;
            }
            let (mut before, after) = take_barriers(&mut op);
            // A barrier with nothing but pure ops since the previous one orders nothing new.
            before &= !barrier_since_pure(&out);
            if is_lanes(&op) {
                if before {
                    out.push(Op::new("gpu.barrier").with_loc(op.loc.clone()));
                }
                let loc = op.loc.clone();
                self.lanes(op, tid, &mut out, false)?;
                if after {
                    out.push(Op::new("gpu.barrier").with_loc(loc));
                }
            } else if is_chunk_reduction(&op) {
                if before {
                    out.push(Op::new("gpu.barrier").with_loc(op.loc.clone()));
                }
                let loc = op.loc.clone();
                self.chunk_reduction(op, tid, &mut out)?;
                if after {
                    out.push(Op::new("gpu.barrier").with_loc(loc));
                }
            } else if op.name == "memref.store" && op.operands.get(1).is_some_and(|m| !self.private.contains(m)) {
                // Uniform code runs on every thread: one thread writes global memory.
                let b = &mut *self.b;
                let c0 = b.index(0);
                let is0 = b.cmpi(IPred::Eq, tid, c0);
                out.extend(b.take());
                let loc = op.loc.clone();
                if before {
                    out.push(Op::new("gpu.barrier").with_loc(loc.clone()));
                }
                out.push(
                    Op::new("scf.if")
                        .with_operands([is0])
                        .with_region(Builder::region(vec![], vec![op, Builder::yield_op(&[])]))
                        .with_region(Region::default())
                        .with_loc(loc.clone()),
                );
                if after {
                    out.push(Op::new("gpu.barrier").with_loc(loc));
                }
            } else if op.name == "memref.atomic_rmw" {
                let b = &mut *self.b;
                let c0 = b.index(0);
                let is0 = b.cmpi(IPred::Eq, tid, c0);
                out.extend(b.take());
                let loc = op.loc.clone();
                // The atomic's old value is not used by the frontend's code.
                let res = op.results.clone();
                let fresh: Vec<Value> = res.iter().map(|r| b.m.value(b.m.ty(*r).to_string())).collect();
                op.results = fresh;
                out.push(
                    Op::new("scf.if")
                        .with_operands([is0])
                        .with_region(Builder::region(vec![], vec![op, Builder::yield_op(&[])]))
                        .with_region(Region::default())
                        .with_loc(loc),
                );
            } else if is_parallel(&op) || is_simd(&op) {
                return Err(IrError::at(&op, "nested parallel loop left at the gpu level (compiler bug)"));
            } else {
                for r in &mut op.regions {
                    for blk in &mut r.blocks {
                        let inner = std::mem::take(&mut blk.ops);
                        blk.ops = self.worker(inner, tid, false)?;
                    }
                }
                out.push(op);
            }
        }
        Ok(out)
    }

    /// A reduction over the chunks of a simd loop: each thread accumulates its lanes'
    /// partial values across all chunks, and one block reduction combines the threads
    /// at the end (instead of one block reduction per chunk).
    fn chunk_reduction(&mut self, mut op: Op, tid: Value, out: &mut Vec<Op>) -> Result<(), IrError> {
        let loc = op.loc.clone();
        let nres = op.results.len();
        let body = std::mem::take(&mut op.regions[0].blocks[0].ops);
        let Some(li) = body.iter().position(is_lanes) else {
            return Err(IrError::located(loc.as_deref(), "chunk loop without lanes (compiler bug)"));
        };
        let lanes_inits: Vec<Value> = {
            let l = &body[li];
            let d = l.body(0).args.len();
            l.operands[3 * d..].to_vec()
        };
        let combiners: Vec<Region> = body[li].body(0).ops.last().expect("terminator").regions.clone();
        if lanes_inits.len() != nres || combiners.len() != nres {
            return Err(IrError::located(loc.as_deref(), "unexpected chunk loop shape (compiler bug)"));
        }
        // Per-thread accumulators start at the identity (the lanes loop's inits).
        let orig_inits: Vec<Value> = op.operands[3..].to_vec();
        for (k, v) in lanes_inits.iter().enumerate() {
            op.operands[3 + k] = *v;
        }
        let mut new_body = vec![];
        for (k, o) in body.into_iter().enumerate() {
            if k == li {
                self.lanes(o, tid, &mut new_body, true)?;
            } else {
                let mut v = self.worker(vec![o], tid, false)?;
                new_body.append(&mut v);
            }
        }
        op.regions[0].blocks[0].ops = new_body;
        let partials = op.results.clone();
        let fresh: Vec<Value> = partials.iter().map(|r| self.b.m.value(self.b.m.ty(*r).to_string())).collect();
        op.results = fresh.clone();
        out.push(op);
        let b = &mut *self.b;
        b.loc = loc.clone();
        for (((p, init), region), res) in fresh.iter().zip(&orig_inits).zip(&combiners).zip(&partials) {
            block_reduce(b, *p, *init, region, *res, &loc, out)?;
        }
        Ok(())
    }

    /// A lanes loop becomes the code of one thread (lane = thread id). With
    /// `per_thread`, its reduction results are the thread's own partial values;
    /// otherwise they are reduced across the block and combined with the inits.
    fn lanes(&mut self, op: Op, tid: Value, out: &mut Vec<Op>, per_thread: bool) -> Result<(), IrError> {
        let loc = op.loc.clone();
        let results = op.results.clone();
        let width = lanes_width(&op, &self.consts).ok_or_else(|| {
            IrError::located(
                loc.as_deref(),
                "a lanes loop whose bounds are not constants (the loops level gives each the range [0, MVL))",
            )
        })?;
        if width % self.threads != 0 {
            return Err(IrError::located(
                loc.as_deref(),
                format!("a lanes loop of {width} lanes in a block of {} threads", self.threads),
            ));
        }
        let p = split_parallel(op);
        let per = width / self.threads;
        let mut map = HashMap::new();
        // The thread's partial value of each reduction.
        let mut partials: Vec<Value> = vec![];
        if per == 1 {
            map.insert(p.ivs[0], tid);
            for mut o in p.body {
                o.remap_uses(&map);
                out.push(o);
            }
            partials = p.reduce.operands.iter().map(|v| *map.get(v).unwrap_or(v)).collect();
        } else {
            // Lanes tid, tid + T, tid + 2T, ... (or tid * per, tid * per + 1, ...
            // when contiguous): a loop the backend unrolls.
            let b = &mut *self.b;
            b.loc = loc.clone();
            let c0 = b.index(0);
            let c1 = b.index(1);
            let cper = b.index(per);
            let ct = b.index(width / per);
            out.extend(b.take());
            let k = b.m.value("index");
            let accs: Vec<Value> = p.inits.iter().map(|v| b.m.value(b.m.ty(*v).to_string())).collect();
            let l = if self.contiguous {
                let first = b.bin("arith.muli", tid, cper);
                b.bin("arith.addi", first, k)
            } else {
                let koff = b.bin("arith.muli", k, ct);
                b.bin("arith.addi", tid, koff)
            };
            let mut body = b.take();
            map.insert(p.ivs[0], l);
            for mut o in p.body {
                o.remap_uses(&map);
                body.push(o);
            }
            let mut next = vec![];
            for ((acc, part), region) in accs.iter().zip(&p.reduce.operands).zip(&p.reduce.regions) {
                next.push(emit_combine(b, region, *acc, *part));
            }
            body.extend(b.take());
            body.push(Builder::yield_op(&next));
            let res: Vec<Value> = accs.iter().map(|a| b.m.value(b.m.ty(*a).to_string())).collect();
            let mut lp = Op::new("scf.for")
                .with_operands([c0, cper, c1].into_iter().chain(p.inits.iter().copied()))
                .with_results(res.clone())
                .with_region(Builder::region(std::iter::once(k).chain(accs).collect(), body))
                .with_loc(loc.clone());
            if self.mark {
                lp.set_attr(THREAD_LANES, "unit");
            }
            out.push(lp);
            partials = res;
        }
        let b = &mut *self.b;
        b.loc = loc.clone();
        for (((part, init), region), res) in partials.iter().zip(&p.inits).zip(&p.reduce.regions).zip(&results) {
            let part = *part;
            if per_thread {
                out.push(Op::new("appy.alias").with_operands([part]).with_results([*res]));
                continue;
            }
            block_reduce(b, part, *init, region, *res, &loc, out)?;
        }
        Ok(())
    }
}

/// Reduces a thread's `part` across the block (`gpu.all_reduce`) and combines it with
/// `init`; the result stands for `res` (through an `appy.alias`).
fn block_reduce(
    b: &mut Builder,
    part: Value,
    init: Value,
    region: &Region,
    res: Value,
    loc: &Option<String>,
    out: &mut Vec<Op>,
) -> Result<(), IrError> {
    let ty = b.m.ty(part).to_string();
    let kind = reduction_of(region)
        .map(|(r, float)| r.all_reduce_kind(float))
        .ok_or_else(|| IrError::located(loc.as_deref(), "unsupported reduction operator in a simd loop"))?;
    let r = b.m.value(ty);
    b.push(
        Op::new("gpu.all_reduce")
            .with_operands([part])
            .with_results([r])
            .with_attr("op", format!("#gpu<all_reduce_op {kind}>"))
            .with_attr("uniform", "unit")
            .with_region(Region::default()),
    );
    let c = emit_combine(b, region, init, r);
    out.extend(b.take());
    out.push(Op::new("appy.alias").with_operands([c]).with_results([res]));
    Ok(())
}

/// MLIR lowers a `gpu.all_reduce` through a shared-memory buffer of its own, whose
/// result every thread reads at the end; the same reduction run again (inside a loop)
/// writes that buffer while slow threads may still read the previous result. A barrier
/// after each block reduction inside a loop orders those reads before the next writes
/// (a reduction that runs once per kernel needs none).
fn fence_repeated_reductions(ops: &mut Vec<Op>, in_loop: bool) {
    let mut k = 0;
    while k < ops.len() {
        let looping = in_loop || matches!(ops[k].name.as_str(), "scf.for" | "scf.while" | "scf.parallel");
        for r in &mut ops[k].regions {
            for blk in &mut r.blocks {
                fence_repeated_reductions(&mut blk.ops, looping);
            }
        }
        if in_loop && ops[k].name == "gpu.all_reduce" && ops.get(k + 1).is_none_or(|o| o.name != "gpu.barrier") {
            let loc = ops[k].loc.clone();
            ops.insert(k + 1, Op::new("gpu.barrier").with_loc(loc));
            k += 1;
        }
        k += 1;
    }
}

/// Whether the last ops of `out` are a `gpu.barrier` followed only by pure ops.
fn barrier_since_pure(out: &[Op]) -> bool {
    for o in out.iter().rev() {
        if o.name == "gpu.barrier" {
            return true;
        }
        if !appy_ir::effects::is_pure(o) {
            return false;
        }
    }
    false
}
