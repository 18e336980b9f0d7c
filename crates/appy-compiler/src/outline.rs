//! `appy-gpu-outline`: the step from the `loops` level to the `gpu` level.
//!
//! Each top-level parallel nest (`scf.parallel {appy.parallel}`, a perfect
//! rectangular nest is one grid) becomes a `gpu.func` kernel in the module's
//! `gpu.module @_appy_kernels`, and the host function launches it with
//! `gpu.launch_func` (seed 001 §5: one kernel per top-level parallel loop). The mapping:
//!
//! * a worker (one iteration of the nest) is a thread block; the block id is decoded
//!   into the nest's induction variables;
//! * a lane of an `scf.parallel {appy.lanes}` loop is a thread (MVL threads per block);
//!   a reduction over lanes is a block reduction (`gpu.all_reduce`, warp shuffles and
//!   shared memory);
//! * code of the worker outside lanes runs redundantly on every thread (all compute the
//!   same values); atomics there are done by thread 0 only; barriers separate a lanes
//!   loop that writes memory from the worker's other memory accesses;
//! * reductions across workers (`shared(s)`) are combined with one atomic per block
//!   into a one-element device buffer, which the host then combines with the initial
//!   value.

use appy_ir::build::{Builder, IPred};
use appy_ir::ir::{Block, Module, Op, Region, Value};
use appy_passes::strip_mine::nest_depth;
use appy_passes::util::*;
use appy_passes::{Pass, PassError};
use std::collections::HashMap;

/// The pass.
pub struct Outline {
    /// Threads per block (the MVL the loops level was strip-mined for).
    pub mvl: i64,
}

/// The name of the GPU module holding all kernels.
pub const KERNEL_MODULE: &str = "_appy_kernels";

impl Pass for Outline {
    fn name(&self) -> &'static str {
        "appy-gpu-outline"
    }
    fn run(&self, m: &mut Module) -> Result<(), PassError> {
        let mut body = std::mem::take(m.body_mut());
        let mut kernels = vec![];
        for f in &mut body {
            if f.name != "func.func" || f.regions.is_empty() || f.regions[0].blocks.is_empty() {
                continue;
            }
            let fname = f.attr("sym_name").unwrap_or("\"f\"").trim_matches('"').to_string();
            let mut b = builder_for(m);
            let ops = std::mem::take(&mut f.regions[0].blocks[0].ops);
            let mut st = State {
                b: &mut b,
                kernels: &mut kernels,
                fname,
                mvl: self.mvl,
                consts: HashMap::new(),
                loads: HashMap::new(),
                host_allocas: Default::default(),
                private: Default::default(),
            };
            let r = st.host(ops);
            finish(&mut b, m);
            f.regions[0].blocks[0].ops = r?;
        }
        if !kernels.is_empty() {
            let gm = Op::new("gpu.module")
                .with_attr("sym_name", format!("\"{KERNEL_MODULE}\""))
                .with_region(Region::single(Block {
                    args: vec![],
                    ops: kernels,
                }));
            body.insert(0, gm);
            m.op.set_attr("gpu.container_module", "unit");
        }
        *m.body_mut() = body;
        resolve_aliases(m);
        Ok(())
    }
}

struct State<'a> {
    b: &'a mut Builder,
    /// Host constants seen so far: rematerialised inside kernels instead of passed.
    consts: HashMap<Value, Op>,
    /// Host loads of array elements (`x = a[i]`) with no write to memory since: a kernel
    /// that only needs the value loads it itself, so the host need not wait for the
    /// device to read it (e.g. `ey[0, :] = fict[t]` in a time loop).
    loads: HashMap<Value, Op>,
    /// Host-side `memref.alloca`s seen so far.
    host_allocas: std::collections::HashSet<Value>,
    /// Private scalar slots (`memref.alloca`) of the kernel being built.
    private: std::collections::HashSet<Value>,
    kernels: &'a mut Vec<Op>,
    fname: String,
    mvl: i64,
}

/// Most threads per block; with a larger MVL each thread runs several lanes
/// (`MVL / MAX_THREADS`, independent memory accesses in flight per thread).
pub const MAX_THREADS: i64 = 256;

impl State<'_> {
    fn threads(&self) -> i64 {
        self.mvl.min(MAX_THREADS)
    }

    fn host(&mut self, ops: Vec<Op>) -> Result<Vec<Op>, PassError> {
        let mut out = vec![];
        for mut op in ops {
            if op.name == "arith.constant" {
                self.consts.insert(op.results[0], op.clone());
            }
            if op.name == "memref.alloca" {
                self.host_allocas.extend(op.results.iter().copied());
            }
            // (A host-side `alloca` lives in host memory: a kernel could not read it.)
            let array_load =
                op.name == "memref.load" && op.operands.len() >= 2 && op.results.len() == 1 && !self.host_allocas.contains(&op.operands[0]);
            // Loads before a write may not move past it, nor loads from before a loop
            // into its iterations (a later iteration runs after the loop's writes); the
            // ops of a conditional's regions are walked in order below.
            let writes = !array_load && may_write(&op);
            if writes && !is_parallel(&op) && op.name != "scf.if" {
                self.loads.clear();
            }
            if array_load {
                self.loads.insert(op.results[0], op.clone());
            }
            if is_parallel(&op) {
                self.launch(op, &mut out)?;
                self.loads.clear();
            } else if is_simd(&op) || is_lanes(&op) {
                return Err(PassError::new(
                    "vector loop outside a parallel loop at the gpu level (run appy-strip-mine first)",
                    op.loc.clone(),
                ));
            } else {
                let before = self.loads.clone();
                for r in &mut op.regions {
                    for blk in &mut r.blocks {
                        // Each region starts from what held before the op.
                        self.loads = before.clone();
                        let inner = std::mem::take(&mut blk.ops);
                        blk.ops = self.host(inner)?;
                    }
                }
                if writes {
                    self.loads.clear();
                } else {
                    self.loads = before;
                }
                out.push(op);
            }
        }
        Ok(out)
    }

    /// Replaces a top-level parallel nest by a kernel and its launch.
    fn launch(&mut self, root: Op, out: &mut Vec<Op>) -> Result<(), PassError> {
        let loc = root.loc.clone();
        self.b.loc = loc.clone();
        let depth = nest_depth(&root);
        // Array loads whose values the kernel uses run in the kernel: their memrefs and
        // indices become arguments instead of the values.
        let mut free_all = vec![];
        let mut sunk: Vec<Op> = vec![];
        for v in root.free_values() {
            match self.loads.get(&v) {
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
                return Err(PassError::new(
                    "multi-dimensional scf.parallel is not supported at the gpu level",
                    loc.clone(),
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
            let id = emit_identity(b, region, t).map_err(|e| PassError::new(e, loc.clone()))?;
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
            if ty.starts_with("memref<") && !ty.contains('x') {
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
        let has_lanes = worker_body.iter().any(|o| o.walk_any(&is_lanes)) || pre_ops.iter().flatten().any(|o| o.walk_any(&is_lanes));
        let nthreads = if has_lanes { self.mvl.min(MAX_THREADS) } else { 1 };
        let threads = b.index(nthreads);
        out.extend(take(b));
        let kname = format!("_appy_{}_k{}", self.fname, self.kernels.len());
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
        out.extend(take(b));
        for (((buf, init), region), res) in bufs.iter().zip(&inits).zip(&reduce.regions).zip(&root_results) {
            let v = b.load(*buf, &[zero]);
            let r = emit_combine(b, region, *init, v);
            b.op0("memref.dealloc", &[*buf], &[]);
            out.extend(take(b));
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
            let r = b.m.value(b.m.ty(l.results[0]).to_string());
            map.insert(l.results[0], r);
            l2.results = vec![r];
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
        let tid = b.op1("gpu.thread_id", &[], "index", &[("dimension", "#gpu<dim x>".into())]);
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
        kops.extend(take(b));
        let mut ivmap = map.clone();
        for (d, (lb, _, st, iv)) in levels.iter().enumerate() {
            let lb = *map.get(lb).unwrap_or(lb);
            let st = *map.get(st).unwrap_or(st);
            let s = b.bin("arith.muli", idxs[d], st);
            let i = b.bin("arith.addi", lb, s);
            ivmap.insert(*iv, i);
        }
        kops.extend(take(b));
        let mut body: Vec<Op> = pre_ops.into_iter().flatten().collect();
        body.extend(worker_body);
        for o in &mut body {
            o.remap_uses(&ivmap);
        }
        let mut partials: Vec<Value> = reduce.operands.iter().map(|v| *ivmap.get(v).unwrap_or(v)).collect();
        self.private.clear();
        let body = self.worker(body, tid, true)?;
        let b = &mut *self.b;
        kops.extend(body);
        // Partials may be defined in the body; remap done above.
        for p in &mut partials {
            *p = *ivmap.get(p).unwrap_or(p);
        }
        if !partials.is_empty() {
            let c0 = b.index(0);
            let is0 = b.cmpi(IPred::Eq, tid, c0);
            let mut then = vec![];
            b.begin();
            for ((p, buf), region) in partials.iter().zip(&kbufs).zip(&reduce.regions) {
                let ty = b.m.ty(*p).to_string();
                let kind = atomic_kind(combiner_kind(region).unwrap_or(""))
                    .ok_or_else(|| PassError::new("unsupported reduction operator for a parallel loop", loc.clone()))?;
                b.op1("memref.atomic_rmw", &[*p, *buf, c0], &ty, &[("kind", format!("{kind} : i64"))]);
            }
            then.extend(b.end());
            then.push(Builder::yield_op(&[]));
            kops.extend(take(b));
            kops.push(
                Op::new("scf.if")
                    .with_operands([is0])
                    .with_region(Builder::region(vec![], then))
                    .with_region(Region::default()),
            );
        }
        kops.push(Op::new("gpu.return"));
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
            .with_attr("workgroup_attributions", "0 : i64")
            .with_attr("known_block_size", format!("array<i32: {nthreads}, 1, 1>"))
            .with_region(Builder::region(kargs, kops))
            .with_loc(loc);
        self.kernels.push(kernel);
        Ok(())
    }

    /// Maps a worker's (uniform) code: lanes loops become per-thread code with block
    /// reductions; atomics run on thread 0; barriers around lanes loops that write
    /// shared (global) memory.
    fn worker(&mut self, ops: Vec<Op>, tid: Value, top: bool) -> Result<Vec<Op>, PassError> {
        let mut private = std::collections::HashSet::new();
        for o in &ops {
            o.walk(&mut |x| {
                if x.name == "memref.alloca" {
                    private.extend(x.results.iter().copied());
                }
            });
        }
        self.private.extend(private);
        let global = |o: &Op, private: &std::collections::HashSet<Value>, writes_only: bool| {
            let mut hit = false;
            o.walk(&mut |x| {
                let (is, mem) = match x.name.as_str() {
                    "memref.store" => (true, x.operands.get(1)),
                    "memref.atomic_rmw" => (true, x.operands.get(1)),
                    "memref.load" => (!writes_only, x.operands.first()),
                    _ => (false, None),
                };
                if is && mem.is_some_and(|m| !private.contains(m)) {
                    hit = true;
                }
            });
            hit
        };
        let mem_positions: Vec<usize> = ops
            .iter()
            .enumerate()
            .filter(|(_, o)| global(o, &self.private, false))
            .map(|(i, _)| i)
            .collect();
        let first_mem = mem_positions.first().copied();
        let last_mem = mem_positions.last().copied();
        let mut out = vec![];
        for (i, mut op) in ops.into_iter().enumerate() {
            if is_lanes(&op) {
                // `appy.nosync` (appy-tensor-sync): every thread only touches the
                // elements it writes; no barrier.
                let writes = global(&op, &self.private, true) && !op.has_attr("appy.nosync");
                let before = writes && (!top || first_mem != Some(i));
                let after = writes && (!top || last_mem != Some(i));
                if before {
                    out.push(Op::new("gpu.barrier").with_loc(op.loc.clone()));
                }
                let loc = op.loc.clone();
                self.lanes(op, tid, &mut out, false)?;
                if after {
                    out.push(Op::new("gpu.barrier").with_loc(loc));
                }
            } else if op.name == "scf.for" && op.has_attr("appy.chunks") && !op.results.is_empty() {
                let writes = global(&op, &self.private, true) && !op.has_attr("appy.nosync");
                if writes && (!top || first_mem != Some(i)) {
                    out.push(Op::new("gpu.barrier").with_loc(op.loc.clone()));
                }
                let loc = op.loc.clone();
                self.chunk_reduction(op, tid, &mut out)?;
                if writes && (!top || last_mem != Some(i)) {
                    out.push(Op::new("gpu.barrier").with_loc(loc));
                }
            } else if op.name == "memref.store" && op.operands.get(1).is_some_and(|m| !self.private.contains(m)) {
                // Uniform code runs on every thread: one thread writes global memory,
                // between barriers so that no thread reads a value from the future or
                // the past.
                let b = &mut *self.b;
                let c0 = b.index(0);
                let is0 = b.cmpi(IPred::Eq, tid, c0);
                out.extend(take(b));
                let loc = op.loc.clone();
                out.push(Op::new("gpu.barrier").with_loc(loc.clone()));
                out.push(
                    Op::new("scf.if")
                        .with_operands([is0])
                        .with_region(Builder::region(vec![], vec![op, Builder::yield_op(&[])]))
                        .with_region(Region::default())
                        .with_loc(loc.clone()),
                );
                out.push(Op::new("gpu.barrier").with_loc(loc));
            } else if op.name == "memref.atomic_rmw" {
                let b = &mut *self.b;
                let c0 = b.index(0);
                let is0 = b.cmpi(IPred::Eq, tid, c0);
                out.extend(take(b));
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
                return Err(PassError::new(
                    "nested parallel loop left at the gpu level (compiler bug)",
                    op.loc.clone(),
                ));
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
    fn chunk_reduction(&mut self, mut op: Op, tid: Value, out: &mut Vec<Op>) -> Result<(), PassError> {
        let loc = op.loc.clone();
        let nres = op.results.len();
        let body = std::mem::take(&mut op.regions[0].blocks[0].ops);
        let Some(li) = body.iter().position(is_lanes) else {
            return Err(PassError::new("chunk loop without lanes (compiler bug)", loc));
        };
        let lanes_inits: Vec<Value> = {
            let l = &body[li];
            let d = l.body(0).args.len();
            l.operands[3 * d..].to_vec()
        };
        let combiners: Vec<Region> = body[li].body(0).ops.last().expect("terminator").regions.clone();
        if lanes_inits.len() != nres || combiners.len() != nres {
            return Err(PassError::new("unexpected chunk loop shape (compiler bug)", loc));
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
    fn lanes(&mut self, op: Op, tid: Value, out: &mut Vec<Op>, per_thread: bool) -> Result<(), PassError> {
        let loc = op.loc.clone();
        let results = op.results.clone();
        let p = split_parallel(op);
        let per = self.mvl / self.threads();
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
            // Lanes tid, tid + T, tid + 2T, ...: a loop the backend unrolls.
            let b = &mut *self.b;
            b.loc = loc.clone();
            let c0 = b.index(0);
            let c1 = b.index(1);
            let cper = b.index(per);
            let ct = b.index(self.mvl / per);
            out.extend(take(b));
            let k = b.m.value("index");
            let accs: Vec<Value> = p.inits.iter().map(|v| b.m.value(b.m.ty(*v).to_string())).collect();
            let koff = b.bin("arith.muli", k, ct);
            let l = b.bin("arith.addi", tid, koff);
            let mut body = take(b);
            map.insert(p.ivs[0], l);
            for mut o in p.body {
                o.remap_uses(&map);
                body.push(o);
            }
            let mut next = vec![];
            for ((acc, part), region) in accs.iter().zip(&p.reduce.operands).zip(&p.reduce.regions) {
                next.push(emit_combine(b, region, *acc, *part));
            }
            body.extend(take(b));
            body.push(Builder::yield_op(&next));
            let res: Vec<Value> = accs.iter().map(|a| b.m.value(b.m.ty(*a).to_string())).collect();
            out.push(
                Op::new("scf.for")
                    .with_operands([c0, cper, c1].into_iter().chain(p.inits.iter().copied()))
                    .with_results(res.clone())
                    .with_region(Builder::region(std::iter::once(k).chain(accs).collect(), body))
                    .with_loc(loc.clone()),
            );
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

/// Whether `op` (or anything inside it) may write (or free) memory that a host load reads.
fn may_write(op: &Op) -> bool {
    op.walk_any(&|o| {
        matches!(
            o.name.as_str(),
            "memref.store" | "memref.atomic_rmw" | "memref.copy" | "memref.dealloc" | "func.call" | "scf.parallel" | "gpu.launch_func"
        ) || o.name.starts_with("appy.")
    })
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
) -> Result<(), PassError> {
    let ty = b.m.ty(part).to_string();
    let kind = all_reduce_kind(combiner_kind(region).unwrap_or(""))
        .ok_or_else(|| PassError::new("unsupported reduction operator in a simd loop", loc.clone()))?;
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
    out.extend(take(b));
    out.push(Op::new("appy.alias").with_operands([c]).with_results([res]));
    Ok(())
}

fn all_reduce_kind(comb: &str) -> Option<&'static str> {
    Some(match comb {
        "arith.addf" | "arith.addi" => "add",
        "arith.mulf" | "arith.muli" => "mul",
        "arith.maximumf" => "maximumf",
        "arith.minimumf" => "minimumf",
        "arith.maxnumf" => "maxnumf",
        "arith.minnumf" => "minnumf",
        "arith.maxsi" => "maxsi",
        "arith.minsi" => "minsi",
        "arith.andi" => "and",
        "arith.ori" => "or",
        "arith.xori" => "xor",
        _ => return None,
    })
}

fn atomic_kind(comb: &str) -> Option<i64> {
    Some(match comb {
        "arith.addf" => 0,
        "arith.addi" => 1,
        "arith.maximumf" | "arith.maxnumf" => 4,
        "arith.maxsi" => 6,
        "arith.minimumf" | "arith.minnumf" => 8,
        "arith.minsi" => 10,
        "arith.mulf" => 12,
        "arith.muli" => 13,
        _ => return None,
    })
}

/// Removes the `appy.alias` pseudo-ops by renaming their results to their operands
/// throughout the module.
pub fn resolve_aliases(m: &mut Module) {
    let mut map = HashMap::new();
    m.op.walk(&mut |o| {
        if o.name == "appy.alias" {
            map.insert(o.results[0], o.operands[0]);
        }
    });
    if map.is_empty() {
        return;
    }
    // Chase chains.
    let keys: Vec<Value> = map.keys().copied().collect();
    for k in keys {
        let mut v = map[&k];
        while let Some(n) = map.get(&v) {
            v = *n;
        }
        map.insert(k, v);
    }
    fn strip(op: &mut Op) {
        for r in &mut op.regions {
            for b in &mut r.blocks {
                b.ops.retain(|o| o.name != "appy.alias");
                for o in &mut b.ops {
                    strip(o);
                }
            }
        }
    }
    strip(&mut m.op);
    m.op.remap_uses(&map);
}
