//! `appy-cpu-openmp`: the CPU back end's mapping of loops (the `appy` level, after the
//! tensor passes) to OpenMP parallel regions and sequential loops LLVM vectorises.
//!
//! The CPU starts from the `appy` level after the tensor passes (not from the
//! strip-mined `loops` level: MVL-wide masked lanes are a GPU shape; on the CPU, LLVM's
//! loop vectoriser strip-mines a plain loop itself and masks only the remainder).
//!
//! * The outermost parallel loop (`scf.parallel {appy.parallel}`) becomes one OpenMP
//!   parallel region: `omp.parallel { omp.wsloop { omp.loop_nest } }`, statically
//!   scheduled over the threads. Its reductions (`shared`, detected ones) become
//!   `omp.declare_reduction`s: each thread combines into a private partial value, and
//!   the partial values are combined once at the end (`__kmpc_reduce`). A loop whose
//!   body has no inner loop runs on several threads only from 4096 iterations (below,
//!   a sequential copy of it runs, without the OpenMP runtime). With reductions, the
//!   threads share the loop in chunks, each a sequential loop carrying its partial
//!   values in registers. Parallel loops nested in it run sequentially, as loops LLVM
//!   vectorises (collapsing a nest would give LLVM one loop with a division per
//!   iteration instead of a vectorisable inner loop).
//! * Atomic updates: see [`crate::cpu::atomics`] (plain outside regions, thread-private
//!   copies of small arrays inside).
//! * Arrays the function allocates are cache-line aligned and freed before it returns,
//!   unless returned or freed already.
//! * Every other `scf.parallel` (simd loops, parallel loops nested in a worker, simd
//!   loops outside any parallel loop) becomes a sequential `scf.for` with the
//!   reductions as iteration arguments: a plain loop that LLVM vectorises. The
//!   combining operation of a floating-point reduction carries `fastmath<reassoc>`,
//!   which allows the vectoriser to keep one partial value per vector lane (the
//!   reassociation a `simd` loop permits).
//! * Loads of scalar slots defined outside a parallel region and never written inside
//!   it are done once before the region, so the loop body sees plain values.
//! * `appy.mvl` becomes the constant `mvl`.
//! * The module gets the unit attribute `appy.cpu` (the `cpu` level's mark).
//!
//! With `openmp=0` parallel loops become sequential loops too (the back end uses this
//! when no OpenMP runtime is available).

use crate::cpu::atomics;
use crate::util::{builder_for, emit_combine, emit_combine_with, emit_identity, finish, is_parallel, split_parallel};
use crate::{OptKind, Pass, PassInfo, PassOpt};
use appy_ir::build::{Builder, IPred};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Region, Value};
use std::collections::{HashMap, HashSet};

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-cpu-openmp",
    description: "CPU: the outermost parallel loops become OpenMP regions (omp.parallel/wsloop, reductions), every other loop a vectorisable scf.for",
    options: &[
        PassOpt::MVL,
        PassOpt {
            name: "openmp",
            kind: OptKind::Bool,
            default: "1",
            help: "parallel loops as OpenMP regions (0: sequential loops)",
        },
    ],
    file: file!(),
    make: |o| {
        Ok(Box::new(CpuOpenMp {
            mvl: o.mvl()?,
            openmp: o.flag("openmp")?,
        }))
    },
};

/// The pass: see the module documentation.
pub struct CpuOpenMp {
    /// The value of `appy.MVL`.
    pub mvl: i64,
    /// Map the outermost parallel loops to OpenMP (else run them sequentially).
    pub openmp: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// Host code: a parallel loop here starts a parallel region.
    Host,
    /// Inside a loop made sequential outside any parallel region: one thread.
    Seq,
    /// Inside a parallel region: every loop is sequential, atomics stay atomic.
    Region,
}

/// What the pass collects while rewriting one function.
struct State {
    /// `omp.declare_reduction` ops (module level), with the text that identifies them.
    decls: Vec<(String, String, Op)>,
    /// Ops to put at the start of the function's entry block (reduction accumulators).
    entry: Vec<Op>,
    /// A constant 1 (i64) defined in `entry`, for `llvm.alloca`.
    one: Option<Value>,
}

impl Pass for CpuOpenMp {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        // Lowers from the kernel level (`appy-kernel-form{cpu=1}`): checked, then its
        // attributes are dropped.
        appy_ir::kernel::verify(m)?;
        appy_ir::kernel::strip(m);
        // The mark of the `cpu` level (a module without parallel loops has no OpenMP
        // operations to tell it by).
        m.op.set_attr("appy.cpu", "unit");
        m.op.walk_mut(&mut |o| {
            if o.name == "appy.mvl" {
                o.name = "arith.constant".into();
                o.set_attr("value", format!("{} : i64", self.mvl));
            }
        });
        let mut st = State {
            decls: vec![],
            entry: vec![],
            one: None,
        };
        let mut body = std::mem::take(m.body_mut());
        let mut result = Ok(());
        for f in &mut body {
            if f.name == "func.func" && !f.regions.is_empty() && !f.regions[0].blocks.is_empty() {
                let mut b = builder_for(m);
                let ops = std::mem::take(&mut f.regions[0].blocks[0].ops);
                st.entry.clear();
                st.one = None;
                let r = self.lower(&mut b, ops, Ctx::Host, &mut st).map(|ops| {
                    let mut entry = std::mem::take(&mut st.entry);
                    entry.extend(ops);
                    free_temporaries(&mut b, entry)
                });
                finish(&mut b, m);
                match r {
                    Ok(ops) => f.regions[0].blocks[0].ops = ops,
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
        }
        let decls: Vec<Op> = st.decls.into_iter().map(|(_, _, d)| d).collect();
        body.splice(0..0, decls);
        *m.body_mut() = body;
        result
    }
}

impl CpuOpenMp {
    fn lower(&self, b: &mut Builder, ops: Vec<Op>, ctx: Ctx, st: &mut State) -> Result<Vec<Op>, IrError> {
        let mut out = vec![];
        for mut op in ops {
            if op.name == "scf.parallel" {
                if ctx == Ctx::Host && is_parallel(&op) && self.openmp {
                    self.to_openmp(b, op, st, &mut out)?;
                } else {
                    let inner = if ctx == Ctx::Region { Ctx::Region } else { Ctx::Seq };
                    out.extend(self.sequential(b, op, inner, st)?);
                }
                continue;
            }
            // Outside parallel regions nothing runs concurrently: an atomic update is a
            // plain one.
            if op.name == "memref.atomic_rmw"
                && ctx != Ctx::Region
                && let Some(plain) = atomics::plain(b, &op, op.operands[1])
            {
                out.extend(plain);
                continue;
            }
            for r in &mut op.regions {
                for blk in &mut r.blocks {
                    let inner = std::mem::take(&mut blk.ops);
                    blk.ops = self.lower(b, inner, ctx, st)?;
                }
            }
            out.push(op);
        }
        Ok(out)
    }

    /// An `scf.parallel` as nested `scf.for` loops (one per dimension) carrying its
    /// reductions as iteration arguments.
    fn sequential(&self, b: &mut Builder, op: Op, ctx: Ctx, st: &mut State) -> Result<Vec<Op>, IrError> {
        let loc = op.loc.clone();
        let attrs: Vec<(String, String)> = op.attrs.iter().filter(|(k, _)| k.starts_with("appy.")).cloned().collect();
        let results = op.results.clone();
        let p = split_parallel(op);
        let tys: Vec<String> = results.iter().map(|r| b.m.ty(*r).to_string()).collect();
        let body = self.lower(b, p.body, ctx, st)?;
        let d = p.ivs.len();
        // Innermost loop first: its body is the parallel body plus the combination of
        // the partial values into the accumulators.
        let accs: Vec<Value> = tys.iter().map(|t| b.m.value(t.clone())).collect();
        b.loc = loc.clone();
        b.begin();
        let mut next = vec![];
        for ((acc, part), region) in accs.iter().zip(&p.reduce.operands).zip(&p.reduce.regions) {
            next.push(combine_reassoc(b, region, *acc, *part));
        }
        let combine = b.end();
        let mut inner = body;
        inner.extend(combine);
        inner.push(Builder::yield_op(&next).with_loc(loc.clone()));
        let mut level_accs = accs;
        let mut level_body = inner;
        let mut loop_op = None;
        for k in (0..d).rev() {
            let (inits, res) = if k == 0 {
                (p.inits.clone(), results.clone())
            } else {
                let outer: Vec<Value> = tys.iter().map(|t| b.m.value(t.clone())).collect();
                let res: Vec<Value> = tys.iter().map(|t| b.m.value(t.clone())).collect();
                (outer, res)
            };
            let mut f = Op::new("scf.for")
                .with_operands([p.lbs[k], p.ubs[k], p.steps[k]].into_iter().chain(inits.iter().copied()))
                .with_results(res.clone())
                .with_region(Builder::region(
                    std::iter::once(p.ivs[k]).chain(level_accs.iter().copied()).collect(),
                    level_body,
                ))
                .with_loc(loc.clone());
            for (n, v) in &attrs {
                f.set_attr(n.clone(), v.clone());
            }
            if k == 0 {
                loop_op = Some(f);
                break;
            }
            // The enclosing level passes its accumulators through this loop.
            level_body = vec![f, Builder::yield_op(&res).with_loc(loc.clone())];
            level_accs = inits;
        }
        Ok(vec![loop_op.expect("at least one dimension")])
    }

    /// The outermost parallel loop as an OpenMP parallel region (a parallel loop nested
    /// in it runs sequentially, as a loop LLVM vectorises).
    fn to_openmp(&self, b: &mut Builder, op: Op, st: &mut State, out: &mut Vec<Op>) -> Result<(), IrError> {
        let loc = op.loc.clone();
        let results = op.results.clone();
        // A body without inner loops runs on several threads only from PARALLEL_MIN
        // iterations; below that, starting the threads costs more than the loop, which
        // then runs as a sequential copy without the OpenMP runtime.
        let has_loops = op
            .body(0)
            .ops
            .iter()
            .any(|o| o.walk_any(&|x| matches!(x.name.as_str(), "scf.for" | "scf.while" | "scf.parallel")));
        let seq = (!has_loops).then(|| b.m.clone_op(&op, &mut HashMap::new()));
        let p = split_parallel(op);
        let tys: Vec<String> = results.iter().map(|r| b.m.ty(*r).to_string()).collect();
        b.loc = loc.clone();
        // Scalar slots read (never written) inside the region: load them once before it.
        let mut body = p.body;
        hoist_slot_loads(b, &mut body, out);
        let body = self.lower(b, body, Ctx::Region, st)?;
        b.loc = loc.clone();
        // Reductions: an accumulator per reduction (in the function's entry block),
        // initialised before the region and read after it.
        let mut accs = vec![];
        let mut syms = vec![];
        for (k, ty) in tys.iter().enumerate() {
            let region = &p.reduce.regions[k];
            let sym = declare_reduction(b, st, region, ty).map_err(|e| IrError::located(loc.as_deref(), e))?;
            syms.push(sym);
            let one = match st.one {
                Some(v) => v,
                None => {
                    let v = b.m.value("i64");
                    st.entry.push(
                        Op::new("llvm.mlir.constant")
                            .with_results([v])
                            .with_attr("value", "1 : i64")
                            .with_loc(loc.clone()),
                    );
                    st.one = Some(v);
                    v
                }
            };
            let acc = b.m.value("!llvm.ptr");
            st.entry.push(
                Op::new("llvm.alloca")
                    .with_operands([one])
                    .with_results([acc])
                    .with_attr("elem_type", ty.clone())
                    .with_loc(loc.clone()),
            );
            accs.push(acc);
        }
        // The trip count, and (without inner loops) whether it is large enough.
        b.begin();
        let d = p.ivs.len();
        let mut trip = b.index(1);
        for k in 0..d {
            let span = b.bin("arith.subi", p.ubs[k], p.lbs[k]);
            let n = b.bin("arith.ceildivsi", span, p.steps[k]);
            let zero = b.index(0);
            let n = b.bin("arith.maxsi", n, zero);
            trip = b.bin("arith.muli", trip, n);
        }
        let parallel = seq.is_some().then(|| {
            let min = b.index(PARALLEL_MIN);
            b.cmpi(appy_ir::build::IPred::Sge, trip, min)
        });
        out.extend(b.end());
        // The parallel version: reductions initialised, the region, the results read.
        let whole = out;
        let mut region_ops = vec![];
        let out = &mut region_ops;
        for (k, acc) in accs.iter().enumerate() {
            out.push(
                Op::new("llvm.store")
                    .with_operands([p.inits[k], *acc])
                    .with_attr("ordering", "0 : i64")
                    .with_loc(loc.clone()),
            );
        }
        // With reductions, the work-sharing loop runs over chunks of iterations, each a
        // sequential loop carrying its partial values in registers (LLVM vectorises it),
        // combined into the thread's copy once per chunk.
        let (lbs, ubs, steps, ivs, partials, body) = if accs.is_empty() || d != 1 {
            (
                p.lbs.clone(),
                p.ubs.clone(),
                p.steps.clone(),
                p.ivs,
                p.reduce.operands.clone(),
                body,
            )
        } else {
            b.begin();
            let c = chunked(b, &p.lbs, &p.ubs, &p.steps, &p.ivs, &p.reduce, &tys, trip, body, &loc)
                .map_err(|e| IrError::located(loc.as_deref(), e))?;
            out.extend(b.end());
            c
        };
        let r = RegionSpec {
            lbs: &lbs,
            ubs: &ubs,
            steps: &steps,
            regions: &p.reduce.regions,
            tys: &tys,
            accs: &accs,
            syms: &syms,
            loc: loc.clone(),
        };
        let arrays = atomics::privatisable(&body);
        if arrays.is_empty() {
            out.push(r.build(b, ivs, &partials, body, vec![], vec![]));
        } else {
            // Two versions of the region: updates of thread-private copies when the
            // arrays are small next to the loop, atomic updates otherwise.
            b.begin();
            let ok = atomics::worth_it(b, &arrays, trip);
            out.extend(b.end());
            let mut map = HashMap::new();
            let ivs2: Vec<Value> = ivs
                .iter()
                .map(|v| {
                    let n = b.m.value(b.m.ty(*v).to_string());
                    map.insert(*v, n);
                    n
                })
                .collect();
            let body2: Vec<Op> = body.iter().map(|o| b.m.clone_op(o, &mut map)).collect();
            let parts2: Vec<Value> = partials.iter().map(|v| *map.get(v).unwrap_or(v)).collect();
            let (pro, body2, epi) = atomics::privatise(b, body2, &arrays);
            let private = r.build(b, ivs2, &parts2, body2, pro, epi);
            let atomic = r.build(b, ivs, &partials, body, vec![], vec![]);
            let yield_op = || Builder::yield_op(&[]).with_loc(loc.clone());
            out.push(
                Op::new("scf.if")
                    .with_operands([ok])
                    .with_region(Builder::region(vec![], vec![private, yield_op()]))
                    .with_region(Builder::region(vec![], vec![atomic, yield_op()]))
                    .with_loc(loc.clone()),
            );
        }
        let Some(seq) = seq else {
            for (acc, res) in accs.iter().zip(&results) {
                out.push(
                    Op::new("llvm.load")
                        .with_operands([*acc])
                        .with_results([*res])
                        .with_attr("ordering", "0 : i64")
                        .with_loc(loc.clone()),
                );
            }
            whole.extend(region_ops);
            return Ok(());
        };
        let mut par_results = vec![];
        for (acc, ty) in accs.iter().zip(&tys) {
            let r = b.m.value(ty.clone());
            out.push(
                Op::new("llvm.load")
                    .with_operands([*acc])
                    .with_results([r])
                    .with_attr("ordering", "0 : i64")
                    .with_loc(loc.clone()),
            );
            par_results.push(r);
        }
        region_ops.push(Builder::yield_op(&par_results).with_loc(loc.clone()));
        let seq_results = seq.results.clone();
        let mut seq_ops = self.sequential(b, seq, Ctx::Seq, st)?;
        seq_ops.push(Builder::yield_op(&seq_results).with_loc(loc.clone()));
        whole.push(
            Op::new("scf.if")
                .with_operands(parallel)
                .with_results(results)
                .with_region(Builder::region(vec![], region_ops))
                .with_region(Builder::region(vec![], seq_ops))
                .with_loc(loc),
        );
        Ok(())
    }
}

/// Arrays the function allocates (`np.empty`, tensor temporaries: `memref.alloc` in the
/// entry block) are aligned to a cache line, and freed before the function returns
/// unless it returns them (the caller then owns them). An array whose name the program
/// rebinds (carried through a loop or an `if`: `a, w = w, a`) may or may not be what
/// it returns: it is freed only if its address is none of the returned arrays'.
fn free_temporaries(b: &mut Builder, mut ops: Vec<Op>) -> Vec<Op> {
    let returned: HashSet<Value> = ops
        .iter()
        .filter(|o| o.name == "func.return")
        .flat_map(|o| o.operands.iter().copied())
        .collect();
    // Buffers the function frees itself (the frontend's one-element arrays of shared
    // scalars) are not freed again.
    let mut freed: HashSet<Value> = HashSet::new();
    for o in &ops {
        o.walk(&mut |x| {
            if x.name == "memref.dealloc" {
                freed.extend(x.operands.iter().copied());
            }
        });
    }
    let mut temps = vec![];
    for o in ops.iter_mut() {
        if o.name == "memref.alloc" {
            o.set_attr("alignment", "64 : i64");
            if !returned.contains(&o.results[0]) && !freed.contains(&o.results[0]) {
                temps.push(o.results[0]);
            }
        }
    }
    let Some(ret) = ops.iter().position(|o| o.name == "func.return") else {
        return ops;
    };
    let loc = ops[ret].loc.clone();
    // Values carried by loops and branches (rebound array names).
    let mut carried: HashSet<Value> = HashSet::new();
    for o in &ops {
        o.walk(&mut |x| {
            if matches!(x.name.as_str(), "scf.for" | "scf.yield") {
                carried.extend(x.operands.iter().copied());
            }
        });
    }
    let returned_arrays: Vec<Value> = ops[ret]
        .operands
        .iter()
        .copied()
        .filter(|v| b.m.ty(*v).starts_with("memref<"))
        .collect();
    let mut frees = vec![];
    for t in temps {
        if !carried.contains(&t) || returned_arrays.is_empty() {
            frees.push(Op::new("memref.dealloc").with_operands([t]).with_loc(loc.clone()));
            continue;
        }
        // Freed when no returned array is this buffer.
        let ptr = |b: &mut Builder, v: Value| b.op1("memref.extract_aligned_pointer_as_index", &[v], "index", &[]);
        let mine = ptr(b, t);
        let mut other = None;
        for r in &returned_arrays {
            let theirs = ptr(b, *r);
            let ne = b.cmpi(IPred::Ne, mine, theirs);
            other = Some(match other {
                None => ne,
                Some(acc) => b.bin("arith.andi", acc, ne),
            });
        }
        let cond = other.expect("a returned array");
        let mut guard = b.take();
        let free = vec![
            Op::new("memref.dealloc").with_operands([t]).with_loc(loc.clone()),
            Builder::yield_op(&[]),
        ];
        b.if_op(cond, free, None);
        guard.extend(b.take());
        frees.extend(guard.into_iter().map(|o| o.with_loc(loc.clone())));
    }
    for o in frees.into_iter().rev() {
        ops.insert(ret, o);
    }
    ops
}

/// The fewest iterations of a loop without inner loops that run on several threads.
const PARALLEL_MIN: i64 = 4096;

/// Chunks per parallel loop with reductions (work-sharing granularity), and the fewest
/// iterations per chunk.
const CHUNKS: i64 = 64;
const MIN_CHUNK: i64 = 256;

/// A 1-D parallel loop with reductions as a loop over chunks (emitting the chunk size
/// computation in `b`): returns the chunk loop's bounds, its induction variable, the
/// per-chunk partial values and the body (`scf.for` over the chunk's iterations with
/// the reductions as iteration arguments).
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn chunked(
    b: &mut Builder,
    lbs: &[Value],
    ubs: &[Value],
    steps: &[Value],
    ivs: &[Value],
    reduce: &Op,
    tys: &[String],
    trip: Value,
    body: Vec<Op>,
    loc: &Option<String>,
) -> Result<(Vec<Value>, Vec<Value>, Vec<Value>, Vec<Value>, Vec<Value>, Vec<Op>), String> {
    let (lb, ub, st) = (lbs[0], ubs[0], steps[0]);
    let chunks = b.index(CHUNKS);
    let min = b.index(MIN_CHUNK);
    let per = b.bin("arith.ceildivsi", trip, chunks);
    let per = b.bin("arith.maxsi", per, min);
    let n = b.bin("arith.ceildivsi", trip, per);
    let span = b.bin("arith.muli", per, st);
    let c0 = b.index(0);
    let c1 = b.index(1);
    // Inside the chunk loop: the chunk's range, then the sequential loop.
    let c = b.m.value("index");
    b.begin();
    let off = b.bin("arith.muli", c, span);
    let lo = b.bin("arith.addi", lb, off);
    let end = b.bin("arith.addi", lo, span);
    let hi = b.bin("arith.minsi", end, ub);
    let mut ids = vec![];
    for (r, t) in reduce.regions.iter().zip(tys) {
        ids.push(emit_identity(b, r, t)?);
    }
    let accs: Vec<Value> = tys.iter().map(|t| b.m.value(t.clone())).collect();
    b.begin();
    let mut next = vec![];
    for ((acc, part), region) in accs.iter().zip(&reduce.operands).zip(&reduce.regions) {
        next.push(combine_reassoc(b, region, *acc, *part));
    }
    let mut inner = body;
    inner.extend(b.end());
    inner.push(Builder::yield_op(&next).with_loc(loc.clone()));
    let results: Vec<Value> = tys.iter().map(|t| b.m.value(t.clone())).collect();
    b.push(
        Op::new("scf.for")
            .with_operands([lo, hi, st].into_iter().chain(ids))
            .with_results(results.clone())
            .with_region(Builder::region(std::iter::once(ivs[0]).chain(accs).collect(), inner))
            .with_loc(loc.clone()),
    );
    let new_body = b.end();
    Ok((vec![c0], vec![n], vec![c1], vec![c], results, new_body))
}

/// What an OpenMP region is made of, besides its body.
struct RegionSpec<'a> {
    lbs: &'a [Value],
    ubs: &'a [Value],
    steps: &'a [Value],
    /// The reductions' combining regions, types, accumulators and declarations.
    regions: &'a [Region],
    tys: &'a [String],
    accs: &'a [Value],
    syms: &'a [String],
    loc: Option<String>,
}

impl RegionSpec<'_> {
    /// `omp.parallel { prologue; omp.wsloop { omp.loop_nest { body } }; epilogue }`;
    /// `partials` are the body's values of the reductions.
    fn build(&self, b: &mut Builder, ivs: Vec<Value>, partials: &[Value], mut body: Vec<Op>, prologue: Vec<Op>, epilogue: Vec<Op>) -> Op {
        let loc = &self.loc;
        // Inside the loop: combine each partial value into the thread's private copy.
        let privs: Vec<Value> = self.accs.iter().map(|_| b.m.value("!llvm.ptr")).collect();
        b.begin();
        for (k, ty) in self.tys.iter().enumerate() {
            let old = b.op1("llvm.load", &[privs[k]], ty, &[("ordering", "0 : i64".into())]);
            let new = combine_reassoc(b, &self.regions[k], old, partials[k]);
            b.op0("llvm.store", &[new, privs[k]], &[("ordering", "0 : i64".into())]);
        }
        body.extend(b.end());
        body.push(Op::new("omp.yield").with_loc(loc.clone()));
        let d = ivs.len();
        let nest = Op::new("omp.loop_nest")
            .with_operands(self.lbs.iter().chain(self.ubs).chain(self.steps).copied())
            .with_attr("collapse_num_loops", format!("{d} : i64"))
            .with_region(Builder::region(ivs, body))
            .with_loc(loc.clone());
        let n = self.accs.len();
        let mut ws = Op::new("omp.wsloop")
            .with_operands(self.accs.iter().copied())
            .with_attr("operandSegmentSizes", format!("array<i32: 0, 0, 0, 0, 0, {n}, 0>"))
            .with_region(Builder::region(privs, vec![nest]))
            .with_loc(loc.clone());
        if n > 0 {
            ws.set_attr("reduction_byref", format!("array<i1: {}>", vec!["false"; n].join(", ")));
            ws.set_attr(
                "reduction_syms",
                format!("[{}]", self.syms.iter().map(|s| format!("@{s}")).collect::<Vec<_>>().join(", ")),
            );
        }
        let mut ops = prologue;
        ops.push(ws);
        ops.extend(epilogue);
        ops.push(Op::new("omp.terminator").with_loc(loc.clone()));
        Op::new("omp.parallel")
            .with_attr("operandSegmentSizes", "array<i32: 0, 0, 0, 0, 0, 0>")
            .with_region(Builder::region(vec![], ops))
            .with_loc(loc.clone())
    }
}

/// `combine(acc, part)` cloned from a reduction region; floating-point combining ops
/// get `fastmath<reassoc>` (the reduction may be reassociated: vector lanes, threads).
fn combine_reassoc(b: &mut Builder, r: &Region, acc: Value, part: Value) -> Value {
    emit_combine_with(b, r, acc, part, |c| {
        if is_float_arith(&c.name) {
            c.set_attr("fastmath", "#arith.fastmath<reassoc>");
        }
    })
}

fn is_float_arith(name: &str) -> bool {
    matches!(
        name,
        "arith.addf" | "arith.mulf" | "arith.maximumf" | "arith.minimumf" | "arith.maxnumf" | "arith.minnumf"
    )
}

/// Declares (once per combiner and type) an `omp.declare_reduction` with the region's
/// identity as initial value and the region as combiner; returns its symbol.
fn declare_reduction(b: &mut Builder, st: &mut State, region: &Region, ty: &str) -> Result<String, String> {
    // The combiner's text, with value ids renumbered, identifies it.
    let mut key = String::new();
    let mut ids: HashMap<Value, usize> = HashMap::new();
    for o in &region.blocks[0].ops {
        key.push_str(&o.name);
        for a in &o.attrs {
            key.push_str(&format!("{a:?}"));
        }
        for v in o.operands.iter() {
            let n = ids.len();
            key.push_str(&format!(" {}", ids.get(v).copied().unwrap_or(n + 1000)));
        }
        for v in &o.results {
            let n = ids.len();
            ids.insert(*v, n);
        }
        key.push(';');
    }
    if let Some((_, _, d)) = st.decls.iter().find(|(t, k, _)| t == ty && *k == key) {
        return Ok(d.attr("sym_name").unwrap_or("").trim_matches('"').to_string());
    }
    let sym = format!("_appy_red{}", st.decls.len());
    // init: the identity.
    let x = b.m.value(ty);
    b.begin();
    let id = emit_identity(b, region, ty)?;
    let mut init = b.end();
    init.push(Op::new("omp.yield").with_operands([id]));
    // combiner: the region's ops.
    let (l, r) = (b.m.value(ty), b.m.value(ty));
    b.begin();
    let res = emit_combine(b, region, l, r);
    let mut comb = b.end();
    comb.push(Op::new("omp.yield").with_operands([res]));
    let decl = Op::new("omp.declare_reduction")
        .with_attr("sym_name", format!("\"{sym}\""))
        .with_attr("type", ty.to_string())
        .with_region(Region::default())
        .with_region(Builder::region(vec![x], init))
        .with_region(Builder::region(vec![l, r], comb))
        .with_region(Region::default())
        .with_region(Region::default())
        .with_region(Region::default());
    st.decls.push((ty.to_string(), key, decl));
    Ok(sym)
}

/// Replaces loads of scalar slots defined outside `body` that `body` never writes by
/// one load placed in `out` (before the loop).
fn hoist_slot_loads(b: &mut Builder, body: &mut Vec<Op>, out: &mut Vec<Op>) {
    let mut defined = HashSet::new();
    let mut written = HashSet::new();
    let mut loaded = vec![];
    for o in body.iter() {
        o.walk(&mut |x| {
            defined.extend(x.results.iter().copied());
            for r in &x.regions {
                for blk in &r.blocks {
                    defined.extend(blk.args.iter().copied());
                }
            }
            match x.name.as_str() {
                "memref.load" if x.operands.len() == 1 => loaded.push(x.operands[0]),
                "memref.load" => {}
                // A store, an atomic, or anything else that takes the slot may write it.
                _ => written.extend(x.operands.iter().copied()),
            }
        });
    }
    let mut map: HashMap<Value, Value> = HashMap::new();
    for slot in loaded {
        if defined.contains(&slot) || written.contains(&slot) || map.contains_key(&slot) {
            continue;
        }
        let ty = b.m.ty(slot).trim_start_matches("memref<").trim_end_matches('>').to_string();
        if ty.contains(['x', '<', ',']) {
            continue;
        }
        let v = b.m.value(ty);
        out.push(
            Op::new("memref.load")
                .with_operands([slot])
                .with_results([v])
                .with_loc(b.loc.clone()),
        );
        map.insert(slot, v);
    }
    if map.is_empty() {
        return;
    }
    // Every `memref.load %slot[]` of a hoisted slot becomes the hoisted value.
    let mut repl: HashMap<Value, Value> = HashMap::new();
    for o in body.iter() {
        o.walk(&mut |x| {
            if x.name == "memref.load"
                && x.operands.len() == 1
                && let Some(v) = map.get(&x.operands[0])
            {
                repl.insert(x.results[0], *v);
            }
        });
    }
    body.retain(|y| !(y.name == "memref.load" && y.results.iter().any(|v| repl.contains_key(v))));
    for o in body.iter_mut() {
        o.remap_uses(&repl);
        o.walk_mut(&mut |x| {
            for r in &mut x.regions {
                for blk in &mut r.blocks {
                    blk.ops
                        .retain(|y| !(y.name == "memref.load" && y.results.iter().any(|v| repl.contains_key(v))));
                }
            }
        });
    }
}
