//! `appy-gpu-outline`: the second of the three steps from the `loops` level to the
//! `gpu` level (after `appy-gpu-sink-loads`, before `appy-gpu-map-threads`).
//!
//! Each top-level parallel nest (`scf.parallel {appy.parallel}`, a perfect
//! rectangular nest is one grid) becomes a `gpu.func` kernel in the module's
//! `gpu.module @_appy_kernels`, and the host function launches it with
//! `gpu.launch_func` (seed 001 §5: one kernel per top-level parallel loop):
//!
//! * the host computes the trip count of every level; the grid has one block per
//!   worker (one iteration of the nest), the block id is decoded into the nest's
//!   induction variables; a worker with vector work gets `min(MVL, 256)` threads, one
//!   without (e.g. a `sequential for`) one thread;
//! * the kernel's arguments are the nest's free values (an `i1` travels as `i32`; a
//!   host scalar slot as a one-element device copy, copied back after the launch), the
//!   trip counts, one buffer per cross-worker reduction and a block offset (0 here: a
//!   runtime that splits a launch into tiles launches the kernel once per range of
//!   blocks); host constants are rematerialised in the kernel; the loads
//!   `appy-gpu-sink-loads` copied into the nest (`appy.sunk`) become the kernel's
//!   first ops, and their memrefs and indices arguments;
//! * reductions across workers (`shared(s)`): each worker adds its partial value to a
//!   one-element device buffer with an atomic, marked `appy.worker_partial`, which the
//!   host then combines with the initial value (`appy-gpu-keep-reductions`, next, moves
//!   that combination into the later kernels when only they use the result).
//!
//! The worker's body is copied into the kernel as it is: its lanes loops, stores and
//! atomics are still worker-level code, which `appy-gpu-map-threads` maps to threads.

use crate::analyses::nest::{index_constants, lanes_width, nest_depth};
use crate::gpu::sink_loads::SUNK;
use crate::util::*;
use crate::{Pass, PassInfo};
use appy_ir::attrs::{parse_str, str_attr};
use appy_ir::build::{Builder, IPred};
use appy_ir::diag::IrError;
use appy_ir::ir::{Block, Module, Op, Region, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::{BUFFER, BUFFER_BYTES};
use appy_ir::types::MemRefType;
use std::collections::HashMap;

/// The pass. The lanes per worker come from the module: the bound of its lanes loops
/// (`analyses::nest::lanes_width`).
pub struct Outline;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-gpu-outline",
    description: "loops → gpu: one gpu.func kernel per top-level parallel nest (grid = its workers), launched from the host function",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(Outline)),
};

/// The name of the GPU module holding all kernels.
pub const KERNEL_MODULE: &str = "_appy_kernels";

/// The attribute marking a worker's atomic update of a cross-worker reduction's buffer
/// (the kernel never reads the buffer).
pub const WORKER_PARTIAL: &str = "appy.worker_partial";

/// Most threads per block; with a larger MVL each thread runs several lanes
/// (`MVL / MAX_THREADS`, independent memory accesses in flight per thread).
pub const MAX_THREADS: i64 = 256;

impl Pass for Outline {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        // Lowers from the kernel level: a hand-edited one is checked first, and its
        // attributes are gone from the `gpu` level.
        appy_ir::kernel::verify(m)?;
        let mut kernels = vec![];
        let outlined = rewrite(m, |rw| {
            rw.rewrite_functions(|b, f, ops| {
                let fname = f.attr("sym_name").map(parse_str).unwrap_or("f").to_string();
                let mut st = State {
                    b,
                    kernels: &mut kernels,
                    fname,
                    consts: HashMap::new(),
                };
                st.host(ops)
            })?;
            let outlined = !kernels.is_empty();
            if outlined {
                let gm = Op::new("gpu.module")
                    .with_attr("sym_name", str_attr(KERNEL_MODULE))
                    .with_region(Region::single(Block {
                        args: vec![],
                        ops: std::mem::take(&mut kernels),
                    }));
                rw.top.insert(0, gm);
            }
            Ok::<bool, IrError>(outlined)
        })?;
        if outlined {
            m.op.set_attr("gpu.container_module", "unit");
        }
        appy_ir::kernel::strip(m);
        resolve_aliases(m);
        Ok(())
    }
}

struct State<'a> {
    b: &'a mut Builder,
    /// Host constants seen so far: rematerialised inside kernels instead of passed.
    consts: HashMap<Value, Op>,
    kernels: &'a mut Vec<Op>,
    fname: String,
}

impl State<'_> {
    fn host(&mut self, ops: Vec<Op>) -> Result<Vec<Op>, IrError> {
        let mut out = vec![];
        for mut op in ops {
            if op.name == "arith.constant" {
                self.consts.insert(op.results[0], op.clone());
            }
            if is_parallel(&op) {
                self.launch(op, &mut out)?;
            } else if is_simd(&op) || is_lanes(&op) {
                return Err(IrError::at(
                    &op,
                    "vector loop outside a parallel loop at the gpu level (run appy-strip-mine first)",
                ));
            } else {
                for r in &mut op.regions {
                    for blk in &mut r.blocks {
                        let inner = std::mem::take(&mut blk.ops);
                        blk.ops = self.host(inner)?;
                    }
                }
                out.push(op);
            }
        }
        Ok(out)
    }

    /// Replaces a top-level parallel nest by a kernel and its launch.
    fn launch(&mut self, mut root: Op, out: &mut Vec<Op>) -> Result<(), IrError> {
        let loc = root.loc.clone();
        // The kernel level names the kernel (`appy-kernel-form`).
        let given = root.attr(appy_ir::kernel::KERNEL).map(|n| parse_str(n).to_string());
        self.b.loc = loc.clone();
        // The loads appy-gpu-sink-loads copied into the nest run first in the kernel:
        // their memrefs and indices become arguments instead of the values.
        let (marked, rest): (Vec<Op>, Vec<Op>) = std::mem::take(&mut root.body_mut(0).ops)
            .into_iter()
            .partition(|o| o.has_attr(SUNK));
        root.body_mut(0).ops = rest;
        let loaded: HashMap<Value, Op> = marked.into_iter().map(|o| (o.results[0], o)).collect();
        let depth = nest_depth(&root);
        let mut free_all = vec![];
        let mut sunk: Vec<Op> = vec![];
        for v in root.free_values() {
            match loaded.get(&v) {
                Some(l) => sunk.push(l.clone()),
                None => free_all.push(v),
            }
        }
        for l in &sunk {
            for x in &l.operands {
                if !free_all.contains(x) {
                    free_all.push(*x);
                }
            }
        }
        let consts: Vec<Op> = free_all.iter().filter_map(|v| self.consts.get(v).cloned()).collect();
        let free: Vec<Value> = free_all.into_iter().filter(|v| !self.consts.contains_key(v)).collect();
        let root_results = root.results.clone();
        let red_tys: Vec<String> = root_results.iter().map(|r| self.b.m.ty(*r).to_string()).collect();
        // Unroll the nest into levels.
        let mut levels: Vec<(Value, Value, Value, Value)> = vec![]; // lb, ub, st, iv
        let mut pre_ops: Vec<Vec<Op>> = vec![];
        let mut cur = root;
        let inits;
        let worker_body;
        let reduce;
        loop {
            let d = cur.body(0).args.len();
            if d != 1 {
                return Err(IrError::located(
                    loc.as_deref(),
                    "multi-dimensional scf.parallel is not supported at the gpu level",
                ));
            }
            let level_depth = levels.len() + 1;
            let p = split_parallel(cur);
            levels.push((p.lbs[0], p.ubs[0], p.steps[0], p.ivs[0]));
            if level_depth == depth {
                inits = p.inits;
                worker_body = p.body;
                reduce = p.reduce;
                break;
            }
            let mut body = p.body;
            let idx = body.iter().position(|o| o.name == "scf.parallel").expect("nest");
            let inner = body.remove(idx);
            pre_ops.push(body);
            cur = inner;
        }
        // ---- host: trip counts, reduction buffers, launch ----
        let b = &mut *self.b;
        let zero = b.index(0);
        let mut total = b.index(1);
        let mut trips = vec![];
        for (lb, ub, st, _) in &levels {
            let span = b.bin("arith.subi", *ub, *lb);
            let n = b.bin("arith.ceildivsi", span, *st);
            let n = b.bin("arith.maxsi", n, zero);
            total = b.bin("arith.muli", total, n);
            trips.push(n);
        }
        let mut bufs = vec![];
        for (t, region) in red_tys.iter().zip(&reduce.regions) {
            let buf = b.op1(
                "memref.alloc",
                &[],
                &format!("memref<1x{t}>"),
                &[("operandSegmentSizes", "array<i32: 0, 0>".into())],
            );
            let id = emit_identity(b, region, t).map_err(|e| IrError::located(loc.as_deref(), e))?;
            b.store(id, buf, &[zero]);
            bufs.push(buf);
        }
        // Kernel arguments: free values (i1 travels as i32), trip counts, buffers.
        // Host scalar slots (rank-0 memrefs) travel as one-element device copies.
        let mut host_args = vec![];
        let mut arg_kinds = vec![];
        let mut slot_copies = vec![];
        for v in &free {
            let ty = b.m.ty(*v).to_string();
            if MemRefType::parse(&ty).is_some_and(|m| m.rank() == 0) {
                let d = b.op1("memref.alloc", &[], &ty, &[("operandSegmentSizes", "array<i32: 0, 0>".into())]);
                let x = b.load(*v, &[]);
                b.store(x, d, &[]);
                host_args.push(d);
                arg_kinds.push((*v, false));
                slot_copies.push((*v, d));
            } else if ty == "i1" {
                let w = b.op1("arith.extui", &[*v], "i32", &[]);
                host_args.push(w);
                arg_kinds.push((*v, true));
            } else {
                host_args.push(*v);
                arg_kinds.push((*v, false));
            }
        }
        host_args.extend(trips.iter().copied());
        host_args.extend(bufs.iter().copied());
        // The last parameter of every kernel is a block offset (0 here): a runtime that
        // splits a launch into tiles launches the kernel once per range of blocks.
        host_args.push(zero);
        let has_work = b.cmpi(IPred::Sgt, total, zero);
        let one = b.index(1);
        // A worker without vector work (e.g. a `sequential for`) is one thread.
        // A block has a thread per lane (at most MAX_THREADS): the width of the worker's
        // lanes loops, which the loops level gives as their constant bound.
        let mut ints = index_constants(worker_body.iter().chain(pre_ops.iter().flatten()));
        ints.extend(index_constants(self.consts.values()));
        let mut width = None;
        for o in worker_body.iter().chain(pre_ops.iter().flatten()) {
            o.walk(&mut |x| {
                if is_lanes(x) && width.is_none() {
                    width = Some(lanes_width(x, &ints));
                }
            });
        }
        let nthreads = match width {
            None => 1,
            Some(Some(w)) => w.min(MAX_THREADS),
            Some(None) => {
                return Err(IrError::located(
                    loc.as_deref(),
                    "a lanes loop whose bounds are not constants: the loops level gives each lanes loop the range [0, MVL) with constant bounds",
                ));
            }
        };
        let threads = b.index(nthreads);
        out.extend(b.take());
        let kname = given.unwrap_or_else(|| format!("_appy_{}_k{}", self.fname, self.kernels.len()));
        let n_args = host_args.len();
        let mut launch_operands = vec![total, one, one, threads, one, one];
        launch_operands.extend(host_args.iter().copied());
        let launch = Op::new("gpu.launch_func")
            .with_operands(launch_operands)
            .with_attr("kernel", format!("@{KERNEL_MODULE}::@{kname}"))
            .with_attr(
                "operandSegmentSizes",
                format!("array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, {n_args}, 0>"),
            )
            .with_loc(loc.clone());
        let ifop = Op::new("scf.if")
            .with_operands([has_work])
            .with_region(Builder::region(vec![], vec![launch, Builder::yield_op(&[])]))
            .with_region(Region::default())
            .with_loc(loc.clone());
        out.push(ifop);
        for (slot, d) in &slot_copies {
            let x = b.load(*d, &[]);
            b.store(x, *slot, &[]);
            b.op0("memref.dealloc", &[*d], &[]);
        }
        out.extend(b.take());
        for (((buf, init), region), res) in bufs.iter().zip(&inits).zip(&reduce.regions).zip(&root_results) {
            let v = b.load(*buf, &[zero]);
            let r = emit_combine(b, region, *init, v);
            b.op0("memref.dealloc", &[*buf], &[]);
            out.extend(b.take());
            // Rename: uses of the nest's result now use `r`.
            out.push(Op::new("appy.alias").with_operands([r]).with_results([*res]));
        }

        // ---- kernel ----
        let mut kargs = vec![];
        let mut map: HashMap<Value, Value> = HashMap::new();
        let mut kops = vec![];
        for c in &consts {
            let mut c2 = c.clone();
            let r = b.m.value(b.m.ty(c.results[0]).to_string());
            map.insert(c.results[0], r);
            c2.results = vec![r];
            kops.push(c2);
        }
        for (v, widened) in &arg_kinds {
            let ty = b.m.ty(*v).to_string();
            if *widened {
                let a = b.m.value("i32");
                kargs.push(a);
                let t = b.op1("arith.trunci", &[a], "i1", &[]);
                map.insert(*v, t);
            } else {
                let a = b.m.value(ty);
                kargs.push(a);
                map.insert(*v, a);
            }
        }
        for l in &sunk {
            let mut l2 = l.clone();
            l2.remap_uses(&map);
            kops.push(l2);
        }
        let ktrips: Vec<Value> = trips.iter().map(|_| b.m.value("index")).collect();
        kargs.extend(ktrips.iter().copied());
        let kbufs: Vec<Value> = red_tys.iter().map(|t| b.m.value(format!("memref<1x{t}>"))).collect();
        kargs.extend(kbufs.iter().copied());
        let koff = b.m.value("index");
        kargs.push(koff);
        let bid0 = b.op1("gpu.block_id", &[], "index", &[("dimension", "#gpu<dim x>".into())]);
        let bid = b.bin("arith.addi", bid0, koff);
        // The thread id: appy-gpu-map-threads maps lanes to it.
        b.op1("gpu.thread_id", &[], "index", &[("dimension", "#gpu<dim x>".into())]);
        let mut rem = bid;
        let mut idxs = vec![Value(0); levels.len()];
        for d in (0..levels.len()).rev() {
            if d == 0 {
                idxs[0] = rem;
            } else {
                idxs[d] = b.bin("arith.remsi", rem, ktrips[d]);
                rem = b.bin("arith.divsi", rem, ktrips[d]);
            }
        }
        kops.extend(b.take());
        let mut ivmap = map.clone();
        for (d, (lb, _, st, iv)) in levels.iter().enumerate() {
            let lb = *map.get(lb).unwrap_or(lb);
            let st = *map.get(st).unwrap_or(st);
            let s = b.bin("arith.muli", idxs[d], st);
            let i = b.bin("arith.addi", lb, s);
            ivmap.insert(*iv, i);
        }
        kops.extend(b.take());
        let mut body: Vec<Op> = pre_ops.into_iter().flatten().collect();
        body.extend(worker_body);
        for o in &mut body {
            o.remap_uses(&ivmap);
        }
        kops.extend(body);
        if !reduce.operands.is_empty() {
            let c0 = b.index(0);
            for ((p, buf), region) in reduce.operands.iter().zip(&kbufs).zip(&reduce.regions) {
                let p = *ivmap.get(p).unwrap_or(p);
                let ty = b.m.ty(p).to_string();
                let kind = reduction_of(region)
                    .map(|(r, float)| r.atomic_kind(float))
                    .ok_or_else(|| IrError::located(loc.as_deref(), "unsupported reduction operator for a parallel loop"))?;
                b.op1(
                    "memref.atomic_rmw",
                    &[p, *buf, c0],
                    &ty,
                    &[("kind", kind.attr()), (WORKER_PARTIAL, "unit".into())],
                );
            }
            kops.extend(b.take());
        }
        kops.push(Op::new("gpu.return"));
        let shared = group_buffers(b, &mut kops, loc.as_deref())?;
        for o in &mut kops {
            if o.loc.is_none() {
                o.loc = loc.clone();
            }
        }
        let ftype = format!(
            "({}) -> ()",
            kargs.iter().map(|v| b.m.ty(*v).to_string()).collect::<Vec<_>>().join(", ")
        );
        let kernel = Op::new("gpu.func")
            .with_attr("function_type", ftype)
            .with_attr("sym_name", format!("\"{kname}\""))
            .with_attr("gpu.kernel", "unit")
            .with_attr("workgroup_attributions", format!("{} : i64", shared.len()))
            .with_attr("known_block_size", format!("array<i32: {nthreads}, 1, 1>"))
            .with_region(Builder::region(kargs.into_iter().chain(shared).collect(), kops))
            .with_loc(loc);
        self.kernels.push(kernel);
        Ok(())
    }
}

/// The number of workgroup attributions (shared-memory scratchpads) of kernel `k`: the
/// last arguments of its entry block, after its parameters.
pub fn workgroup_attributions(k: &Op) -> usize {
    k.attr("workgroup_attributions")
        .and_then(|s| s.split(':').next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// The group's scratchpads: each `appy.buffer` allocation at the worker's level (one
/// parallel iteration per group: APPy's group mode) becomes a workgroup attribution of
/// the kernel, shared memory, in place of the allocation and its cast to the dynamic
/// array type. Returns the attributions, in order. A buffer inside lanes (a parallel
/// loop run one iteration per lane) stays a private array. At most
/// [`BUFFER_BYTES`] in all.
fn group_buffers(b: &mut Builder, kops: &mut Vec<Op>, loc: Option<&str>) -> Result<Vec<Value>, IrError> {
    let mut shared = vec![];
    let mut map = HashMap::new();
    let mut bytes = 0i64;
    let mut kept = Vec::with_capacity(kops.len());
    for o in std::mem::take(kops) {
        if o.name == "memref.alloca" && o.has_attr(BUFFER) {
            let ty = b.m.ty(o.results[0]).to_string();
            let t = MemRefType::parse(&ty).filter(|t| t.rank() == 1);
            let Some((n, size)) = t.and_then(|t| Some((t.shape[0]?, t.elem.size()))) else {
                return Err(IrError::located(
                    loc,
                    format!("a scratchpad of type {ty}: appy.buffer has a constant size"),
                ));
            };
            bytes += (n * size) as i64;
            let w =
                b.m.value(format!("{}, #gpu.address_space<workgroup>>", ty.trim_end().trim_end_matches('>')));
            map.insert(o.results[0], w);
            shared.push(w);
            continue;
        }
        if o.name == "memref.cast"
            && let Some(w) = o.operands.first().and_then(|a| map.get(a)).copied()
        {
            map.insert(o.results[0], w);
            continue;
        }
        kept.push(o);
    }
    if bytes > BUFFER_BYTES {
        return Err(IrError::user_at(
            &Op::new("gpu.func").with_loc(loc.map(String::from)),
            format!("the scratchpads (appy.buffer) of this parallel loop take {bytes} bytes; a GPU group has {BUFFER_BYTES}"),
        ));
    }
    for o in &mut kept {
        o.remap_uses(&map);
    }
    let left = kept
        .iter()
        .any(|o| o.walk_any(&|x| x.operands.iter().any(|v| shared.contains(v) && x.name == "memref.cast")));
    if left {
        return Err(IrError::located(loc, "a scratchpad (appy.buffer) used other than through its cast"));
    }
    *kops = kept;
    Ok(shared)
}
