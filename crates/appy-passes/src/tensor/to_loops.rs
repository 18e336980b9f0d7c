//! `appy-tensor-to-loops` (seed 001 §5.1.3): every `appy.assign` becomes a loop nest.
//!
//! One loop per target dimension, in the pragma's order; a dimension marked `parallel`
//! becomes `scf.parallel {appy.parallel}` (outside workers; perfectly nested parallel
//! dimensions form one grid), `simd` becomes `scf.parallel {appy.simd}` (the lanes of a
//! worker), any other dimension an `scf.for`. The innermost body evaluates the value
//! at the point, element by element, fusing every element-wise op into the nest (no
//! intermediate result is stored), and stores it. A reduction evaluated at a point
//! is a nested reduction loop over its dimensions (`scf.parallel` with `scf.reduce`
//! when simd, `scf.for` over a private accumulator otherwise).
//!
//! When the pragma orders a reduced dimension outside a target dimension (e.g.
//! `:M=>reduce :N=>parallel` for a column sum), the target is initialised and then
//! updated in place over the whole nest (atomically when the reduced dimension runs in
//! parallel). `le(c)` is kept on the loop (`appy.le`) and `appy.nosync` (from
//! `appy-tensor-sync`) on the simd loops.

use crate::tensor::*;
use crate::{Pass, PassInfo, PassOpt};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::reduction::Reduction;
use appy_ir::schedule::{LoopKind, Mark, RESERVED_PREFIX, unique_iname};
use std::collections::{HashMap, HashSet};

/// The pass.
pub struct TensorToLoops {
    /// CPU: column reductions (`np.sum(A, axis=0)`) walk rows over blocks of columns
    /// ([`crate::tensor::columns`]).
    pub cpu: bool,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-tensor-to-loops",
    description: "lower appy.assign and the tensor ops to fused loop nests (seed 001 §5.1.3); cpu=1: column reductions over blocks of columns",
    options: &[PassOpt::CPU],
    file: file!(),
    make: |o| Ok(Box::new(TensorToLoops { cpu: o.flag("cpu")? })),
};

impl Pass for TensorToLoops {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let cpu = self.cpu;
        let mut stmt = 0;
        rewrite_module(m, &mut |b, ops, in_worker| lower_block(b, ops, in_worker, cpu, &mut stmt))
    }
}

/// The provisional name `mark` gives a loop over dimension `d` of the statement being
/// lowered; [`name_loops`] makes it the statement's.
const DIM: &str = "_appy_d";

/// Names the loops of statement number `stmt` (`appy_ir::schedule::INAMES`): a loop
/// over dimension `d` is `_appy_t{stmt}_d{d}` (a second loop over it, `..._1`), a loop of
/// no dimension `_appy_t{stmt}_l{n}`.
fn name_loops(ops: &mut [Op], stmt: usize) {
    let mut used: HashSet<String> = HashSet::new();
    let mut n = 0;
    for o in ops {
        o.walk_mut(&mut |x| {
            if LoopKind::of(x).is_none() {
                return;
            }
            let base = match x.inames().first() {
                Some(p) if p.starts_with(DIM) => format!("{RESERVED_PREFIX}t{stmt}_d{}", &p[DIM.len()..]),
                Some(_) => return,
                None => {
                    let l = n;
                    n += 1;
                    format!("{RESERVED_PREFIX}t{stmt}_l{l}")
                }
            };
            let name = unique_iname(&base, |c| used.contains(c));
            used.insert(name.clone());
            x.set_inames(&[name]);
        });
    }
}

fn lower_block(b: &mut Builder, ops: Vec<Op>, in_worker: bool, cpu: bool, stmt: &mut usize) -> Result<Vec<Op>, IrError> {
    if !ops.iter().any(|o| o.name == "appy.assign" || is_tensor_op(o)) {
        return Ok(ops);
    }
    let mut defs: HashMap<Value, Op> = HashMap::new();
    let mut out = vec![];
    for op in ops {
        if is_tensor_op(&op) {
            defs.insert(op.results[0], op);
        } else if op.name == "appy.assign" {
            b.begin();
            b.loc = op.loc.clone();
            let r = lower_assign(b, &op, &defs, in_worker, cpu);
            let mut ops = b.end();
            r?;
            name_loops(&mut ops, *stmt);
            *stmt += 1;
            out.extend(ops);
        } else {
            out.push(op);
        }
    }
    Ok(out)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Ctx {
    /// Host code, outside any loop of the statement.
    Host,
    /// Inside parallel loops of the statement only (a further parallel loop extends
    /// the grid).
    Grid,
    /// Inside a worker.
    Worker,
    /// Inside a simd loop (lanes).
    Lanes,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Parallel,
    Simd,
    Seq,
}

pub(crate) struct Gen<'a> {
    pub(crate) a: Assign,
    pub(crate) defs: &'a HashMap<Value, Op>,
    pub(crate) ext: Vec<Value>,
    pub(crate) c0: Value,
    pub(crate) c1: Value,
    nosync: bool,
    pub(crate) loc: Option<String>,
}

pub(crate) type Env = HashMap<usize, Value>;

impl Gen<'_> {
    pub(crate) fn err(&self, msg: impl Into<String>) -> IrError {
        IrError::located(self.loc.as_deref(), msg)
    }

    fn kind(&self, d: usize, ctx: Ctx, reduction: bool) -> (Kind, Ctx) {
        let (par, simd) = (self.a.parallel[d], self.a.simd[d]);
        match ctx {
            Ctx::Host if par => (Kind::Parallel, if reduction { Ctx::Worker } else { Ctx::Grid }),
            Ctx::Grid if par && !reduction => (Kind::Parallel, Ctx::Grid),
            Ctx::Host if simd => (Kind::Simd, Ctx::Lanes),
            Ctx::Host => (Kind::Seq, Ctx::Host),
            Ctx::Grid | Ctx::Worker if par || simd => (Kind::Simd, Ctx::Lanes),
            Ctx::Grid | Ctx::Worker => (Kind::Seq, Ctx::Worker),
            Ctx::Lanes => (Kind::Seq, Ctx::Lanes),
        }
    }

    fn mark(&self, op: &mut Op, d: usize, k: Kind) {
        op.set_inames(&[format!("{DIM}{d}")]);
        match k {
            Kind::Parallel => op.set_mark(Mark::Parallel),
            Kind::Simd => {
                op.set_mark(Mark::Simd);
                if self.nosync {
                    op.set_mark(Mark::NoSync);
                }
            }
            Kind::Seq => {}
        }
        if self.a.le[d] > 0 {
            op.set_le_bound(self.a.le[d]);
        }
    }

    /// A loop nest over `dims` (in order) whose innermost body is `body(env)`.
    fn nest(
        &self,
        b: &mut Builder,
        dims: &[usize],
        ctx: Ctx,
        env: &Env,
        body: &mut dyn FnMut(&mut Builder, &Env, Ctx) -> Result<(), IrError>,
    ) -> Result<(), IrError> {
        let Some((&d, rest)) = dims.split_first() else {
            return body(b, env, ctx);
        };
        let (k, inner) = self.kind(d, ctx, false);
        let iv = b.m.value("index");
        let mut env2 = env.clone();
        env2.insert(d, iv);
        b.begin();
        let r = self.nest(b, rest, inner, &env2, body);
        let mut ops = b.end();
        r?;
        let mut op = match k {
            Kind::Seq => {
                ops.push(Builder::yield_op(&[]));
                Op::new("scf.for").with_operands([self.c0, self.ext[d], self.c1])
            }
            _ => {
                ops.push(Op::new("scf.reduce").with_loc(self.loc.clone()));
                Op::new("scf.parallel")
                    .with_operands([self.c0, self.ext[d], self.c1])
                    .with_attr("operandSegmentSizes", "array<i32: 1, 1, 1, 0>")
            }
        };
        op = op.with_region(Builder::region(vec![iv], ops)).with_loc(self.loc.clone());
        self.mark(&mut op, d, k);
        b.push(op);
        Ok(())
    }

    /// A reduction `red` of `input` over `dims` (in loop order) at `env`.
    #[allow(clippy::too_many_arguments)]
    fn reduce(
        &self,
        b: &mut Builder,
        input: Value,
        red: Reduction,
        ty: &str,
        dims: &[usize],
        ctx: Ctx,
        env: &Env,
        memo: &HashMap<Value, Value>,
    ) -> Result<Value, IrError> {
        let Some((&d, rest)) = dims.split_first() else {
            return self.eval(b, input, env, ctx, memo);
        };
        let (k, inner) = self.kind(d, ctx, true);
        let iv = b.m.value("index");
        let mut env2 = env.clone();
        env2.insert(d, iv);
        let e = |s: String| self.err(s);
        match k {
            Kind::Seq => {
                let (alloca, slot) = b.alloca_op(ty);
                b.push(alloca);
                let id = b.identity(red, ty).map_err(e)?;
                b.store(id, slot, &[]);
                b.begin();
                let r = self.reduce(b, input, red, ty, rest, inner, &env2, memo);
                let v = ended_on_error(b, r)?;
                let acc = b.load(slot, &[]);
                let n = b.combine(red, acc, v);
                b.store(n, slot, &[]);
                b.push(Builder::yield_op(&[]));
                let ops = b.end();
                let mut op = Op::new("scf.for")
                    .with_operands([self.c0, self.ext[d], self.c1])
                    .with_region(Builder::region(vec![iv], ops))
                    .with_loc(self.loc.clone());
                self.mark(&mut op, d, k);
                b.push(op);
                Ok(b.load(slot, &[]))
            }
            _ => {
                let id = b.identity(red, ty).map_err(e)?;
                b.begin();
                let r = self.reduce(b, input, red, ty, rest, inner, &env2, memo);
                let v = ended_on_error(b, r)?;
                let mut reduce = Op::new("scf.reduce").with_operands([v]).with_loc(self.loc.clone());
                reduce.regions.push(b.combiner(red, ty));
                b.push(reduce);
                let ops = b.end();
                let res = b.m.value(ty);
                let mut op = Op::new("scf.parallel")
                    .with_operands([self.c0, self.ext[d], self.c1, id])
                    .with_results([res])
                    .with_attr("operandSegmentSizes", "array<i32: 1, 1, 1, 1>")
                    .with_region(Builder::region(vec![iv], ops))
                    .with_loc(self.loc.clone());
                self.mark(&mut op, d, k);
                b.push(op);
                Ok(res)
            }
        }
    }

    /// The index of an array axis at `env`: `lo + step * iv` (sliced) or the scalar
    /// index.
    fn index(&self, b: &mut Builder, lo: Value, d: i64, step: i64, env: &Env) -> Result<Value, IrError> {
        if d < 0 {
            return Ok(b.to_index(lo));
        }
        let iv = *env
            .get(&(d as usize))
            .ok_or_else(|| self.err("a tensor dimension is used outside its loop (compiler bug)"))?;
        let mut i = b.to_i64(iv);
        if step != 1 {
            let st = b.int(step, "i64");
            i = b.bin("arith.muli", i, st);
        }
        let s = b.bin("arith.addi", lo, i);
        Ok(b.to_index(s))
    }

    /// The element of `v` at `env`.
    pub(crate) fn eval(&self, b: &mut Builder, v: Value, env: &Env, ctx: Ctx, memo: &HashMap<Value, Value>) -> Result<Value, IrError> {
        let mut memo = memo.clone();
        self.eval_m(b, v, env, ctx, &mut memo)
    }

    fn eval_m(&self, b: &mut Builder, v: Value, env: &Env, ctx: Ctx, memo: &mut HashMap<Value, Value>) -> Result<Value, IrError> {
        if let Some(x) = memo.get(&v) {
            return Ok(*x);
        }
        let Some(op) = self.defs.get(&v) else { return Ok(v) };
        let elem = tensor_type(b.m.ty(v))
            .map(|(_, e)| e)
            .ok_or_else(|| self.err("tensor op without a tensor type"))?;
        let r = match op.name.as_str() {
            "appy.view" => {
                let dims = op.attr("dims").map(int_array).unwrap_or_default();
                let steps = steps_of(op, dims.len());
                let mut idx = vec![];
                for ((lo, d), s) in op.operands[1..].iter().zip(&dims).zip(steps) {
                    idx.push(self.index(b, *lo, *d, s, env)?);
                }
                let x = b.load(op.operands[0], &idx);
                if elem == "i1" && b.m.ty(x) == "i8" {
                    // Booleans are stored as bytes.
                    b.op1("arith.trunci", &[x], "i1", &[])
                } else {
                    x
                }
            }
            "appy.iota" => {
                // The index of the statement dimension, as i64.
                let d = op.attr("dims").map(int_array).unwrap_or_default();
                let [d] = d.as_slice() else {
                    return Err(self.err("appy.iota needs one dimension"));
                };
                let iv = *env
                    .get(&(*d as usize))
                    .ok_or_else(|| self.err("a tensor dimension is used outside its loop (compiler bug)"))?;
                b.to_i64(iv)
            }
            "appy.ew" => {
                let mut ins = vec![];
                for o in &op.operands {
                    ins.push(self.eval_m(b, *o, env, ctx, memo)?);
                }
                let name = op
                    .attr("op")
                    .ok_or_else(|| self.err("appy.ew without `op`"))?
                    .trim_matches('"')
                    .to_string();
                let res = b.m.value(elem.clone());
                let mut s = Op::new(name).with_operands(ins).with_results([res]).with_loc(op.loc.clone());
                for (k, a) in &op.attrs {
                    if k != "op" && k != "operandSegmentSizes" {
                        s.set_attr(k.clone(), a.clone());
                    }
                }
                b.push(s);
                res
            }
            "appy.reduce" => {
                let red = reduced_dims(op);
                if red.iter().any(|d| env.contains_key(d)) {
                    return Err(self.err("a reduced dimension is also a loop of the statement (compiler bug)"));
                }
                let ordered: Vec<usize> = self.a.order.iter().copied().filter(|d| red.contains(d)).collect();
                self.reduce(b, op.operands[0], reduction(op)?, &elem, &ordered, ctx, env, memo)?
            }
            other => return Err(self.err(format!("unexpected tensor op {other}"))),
        };
        memo.insert(v, r);
        Ok(r)
    }

    pub(crate) fn target_index(&self, b: &mut Builder, env: &Env) -> Result<Vec<Value>, IrError> {
        let mut idx = vec![];
        for ((lo, d), s) in self.a.idx.iter().zip(&self.a.dims).zip(&self.a.steps) {
            idx.push(self.index(b, *lo, *d, *s, env)?);
        }
        Ok(idx)
    }

    fn store(&self, b: &mut Builder, x: Value, env: &Env) -> Result<(), IrError> {
        let idx = self.target_index(b, env)?;
        // A bool array keeps bytes (`memref<?xi8>`); a scalar slot of a bool result
        // (`memref<i1>`) keeps the `i1`.
        let x = if appy_ir::build::memref_elem(b.m.ty(self.a.target)) == "i8" && b.m.ty(x) == "i1" {
            b.op1("arith.extui", &[x], "i8", &[])
        } else {
            x
        };
        match self.a.atomic {
            Some(kind) => {
                let ty = appy_ir::types::parse_memref(b.m.ty(self.a.target))
                    .map(|(d, _)| d.mlir())
                    .unwrap_or("f64");
                let mut ops = vec![x, self.a.target];
                ops.extend(idx);
                b.op1("memref.atomic_rmw", &ops, ty, &[("kind", kind.attr())]);
            }
            None => b.store(x, self.a.target, &idx),
        }
        Ok(())
    }
}

/// Closes the op list opened for a failed nested build, so the builder stays balanced.
fn ended_on_error<T>(b: &mut Builder, r: Result<T, IrError>) -> Result<T, IrError> {
    if r.is_err() {
        b.end();
    }
    r
}

fn lower_assign(b: &mut Builder, op: &Op, defs: &HashMap<Value, Op>, in_worker: bool, cpu: bool) -> Result<(), IrError> {
    let a = Assign::of(op).map_err(|e| IrError::at(op, e))?;
    let c0 = b.index(0);
    let c1 = b.index(1);
    let ext: Vec<Value> = a.exts.iter().map(|e| b.to_index(*e)).collect();
    let kept = a.kept();
    let g = Gen {
        defs,
        ext,
        c0,
        c1,
        nosync: op.has_mark(Mark::NoSync),
        loc: op.loc.clone(),
        a,
    };
    let ctx0 = if in_worker { Ctx::Worker } else { Ctx::Host };
    if cpu && !in_worker && crate::tensor::columns::blocked(&g, b, &kept)? {
        return Ok(());
    }
    let kept_order: Vec<usize> = g.a.order.iter().copied().filter(|d| kept.contains(d)).collect();
    // Dimensions the value reduces.
    let vdims_all: Vec<usize> = {
        let mut all = vec![];
        for v in dag(defs, g.a.value) {
            if let Some(o) = defs.get(&v)
                && o.name == "appy.reduce"
            {
                all.extend(reduced_dims(o));
            }
        }
        all
    };
    let first_kept = kept_order.first().and_then(|k| g.a.order.iter().position(|d| d == k));
    let outer_reduced: Vec<usize> = vdims_all
        .iter()
        .copied()
        .filter(|r| first_kept.is_some_and(|f| g.a.order.iter().position(|d| d == r).is_some_and(|p| p < f)))
        .collect();
    if outer_reduced.is_empty() {
        let memo = HashMap::new();
        return g.nest(b, &kept_order, ctx0, &HashMap::new(), &mut |b, env, ctx| {
            let x = g.eval(b, g.a.value, env, ctx, &memo)?;
            g.store(b, x, env)
        });
    }
    // A reduced dimension outside a target dimension: accumulate into the target.
    let root = defs.get(&g.a.value).filter(|o| o.name == "appy.reduce").ok_or_else(|| {
        g.err("a reduced dimension ordered before a target dimension needs the reduction to be the whole value (`y[:N] = np.sum(A[:M, :N], axis=0)`)")
    })?;
    if g.a.atomic.is_some() {
        return Err(g.err("`#pragma atomic` with a reduced dimension ordered before a target dimension is not supported"));
    }
    let kind = reduction(root)?;
    let ty = tensor_type(b.m.ty(g.a.value)).map(|(_, e)| e).unwrap_or_else(|| "f64".into());
    let red = reduced_dims(root);
    let all: Vec<usize> = g.a.order.iter().copied().filter(|d| kept.contains(d) || red.contains(d)).collect();
    let e = |s: String| IrError::at(op, s);
    // Initialise.
    g.nest(b, &kept_order, ctx0, &HashMap::new(), &mut |b, env, _| {
        let id = b.identity(kind, &ty).map_err(e)?;
        g.store(b, id, env)
    })?;
    // Accumulate: atomically when a reduced dimension runs in parallel or in lanes.
    let atomic = red.iter().any(|d| g.a.parallel[*d] || g.a.simd[*d]);
    let input = root.operands[0];
    let mut g2 = Gen {
        a: g.a.clone(),
        defs,
        ext: g.ext.clone(),
        c0,
        c1,
        nosync: g.nosync,
        loc: g.loc.clone(),
    };
    if atomic {
        g2.a.atomic = Some(kind.atomic_kind(appy_ir::types::is_float_type(&ty)));
    }
    let memo = HashMap::new();
    g2.nest(b, &all, ctx0, &HashMap::new(), &mut |b, env, ctx| {
        let x = g2.eval(b, input, env, ctx, &memo)?;
        if g2.a.atomic.is_some() {
            g2.store(b, x, env)
        } else {
            let idx = g2.target_index(b, env)?;
            let old = b.load(g2.a.target, &idx);
            let n = b.combine(kind, old, x);
            b.store(n, g2.a.target, &idx);
            Ok(())
        }
    })
}
