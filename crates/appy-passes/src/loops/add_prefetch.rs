//! `appy-add-prefetch{array=N iname=i}`: Loopy's `add_prefetch` into local memory. The
//! reads of array parameter `N` that the threads of a group make at neighbouring
//! offsets (`a[i - 1]`, `a[i]`, `a[i + 1]`) are loaded once, cooperatively, into a
//! scratchpad in the group's shared memory, and read from there.
//!
//! The loop named `iname` is a parallel loop of workers (groups, after strip-mining or
//! a split into `g.0`/`l.0`). In each lanes loop of its body (directly, or inside a
//! sequential loop such as the chunks of a vector loop), a read `a[s0, .., base + l + c,
//! .., sk]` qualifies when `l` is the lane, `c` a constant, and `base` and the other
//! subscripts are the same for every lane (affine in values defined outside the lanes
//! loop: `analyses::index`). The reads with the same `base` and other subscripts share
//! one scratchpad of `MVL + max c - min c` elements: its footprint, computed from the
//! subscripts (Loopy's sweep over the lane). A footprint read at one offset only is
//! left alone: each element goes to one thread, so a copy would only add a barrier. Before the lanes loop, a lanes loop of the
//! same width loads it, element `k` of the footprint by thread `k mod MVL`, skipping
//! elements outside the array; the reads become reads of the scratchpad at `l + c -
//! min c`. The scratchpad is an `appy.buffer` allocation at the top of the worker's
//! body, which `appy-gpu-outline` makes shared memory, and the barrier analysis puts a
//! barrier between the load and the reads (and, in a loop, before the next load).
//!
//! Legality: the parallel loop must not write the array (writes before or after it are
//! other kernels or host code, ordered with it), and the function must not use it other
//! than by loads, stores and `memref.dim` (a view of it could be written inside the
//! loop), so the copy cannot be stale; loading elements inside the array that a lane
//! does not read changes nothing. The
//! scratchpads of one worker hold at most `BUFFER_BYTES`. Reads that do not qualify
//! stay as they are; a request that finds none is refused with the reason.
//!
//! Without `array` (`array=-1`), the pass applies the requests the pragmas recorded
//! (`transform(prefetch(a))`, as `appy.transforms` on the annotated loop, which
//! `appy-schedule` leaves for this pass because the lanes do not exist before
//! strip-mining). On the CPU, `appy-schedule{cpu=1}` checks the array the same way and
//! drops the request.

use super::{no_such_loop, replace_named};
use crate::analyses::index::{IndexForm, Term, arith_ops, index_form_through};
use crate::analyses::nest::{const_bounds, int_constants};
use crate::util::{ParallelParts, make_parallel};
use crate::{Pass, PassInfo, PassOpt, PassOptions};
use appy_ir::attrs::CmpIPredicate as IPred;
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::{BUFFER, BUFFER_BYTES, LoopKind, Mark, TRANSFORMS, Tag, parse_str_array};
use appy_ir::types::MemRefType;
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The pass.
pub struct AddPrefetch {
    /// The array: the function's parameter at this position; `-1`: the requests the
    /// pragmas recorded.
    pub array: i64,
    /// The array's name, for messages (empty: "parameter N").
    pub name: String,
    /// The parallel loop whose groups load the array.
    pub iname: String,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-add-prefetch",
    description: "load the neighbouring reads of an array parameter in a parallel loop's groups once, cooperatively, into shared memory (Loopy's add_prefetch, into local)",
    options: &[
        PassOpt {
            name: "array",
            kind: crate::OptKind::Int { min: -1, max: 4096 },
            default: "-1",
            help: "the array: the function's parameter N (0-based); -1: the prefetches the pragmas record",
        },
        PassOpt {
            name: "name",
            kind: crate::OptKind::Iname,
            default: "",
            help: "the array's name in messages",
        },
        PassOpt {
            name: "iname",
            kind: crate::OptKind::Iname,
            default: "",
            help: "the parallel loop whose groups share the prefetched elements",
        },
    ],
    file: file!(),
    make: |o| Ok(Box::new(AddPrefetch::from_options(o)?)),
};

impl AddPrefetch {
    /// The pass with the options of a pipeline (or of a `transform(prefetch(...))` clause).
    pub fn from_options(o: &PassOptions) -> Result<AddPrefetch, String> {
        Ok(AddPrefetch {
            array: o.int("array")?,
            name: o.iname("name")?,
            iname: o.iname("iname")?,
        })
    }

    fn what(&self) -> String {
        if self.name.is_empty() {
            format!("parameter {}", self.array)
        } else {
            format!("`{}`", self.name)
        }
    }

    /// Applies the request to one function's body.
    fn apply(&self, b: &mut Builder, func: &Op, ops: Vec<Op>) -> Result<Vec<Op>, IrError> {
        if self.array < 0 {
            return recorded(b, func, ops);
        }
        if self.iname.is_empty() {
            return Err(IrError::user_at(func, "appy-add-prefetch needs the parallel loop: iname=NAME"));
        }
        let a = self.array_value(b, func, &ops)?;
        let env = Env::of(&ops);
        let (out, found) = replace_named(ops, &self.iname, Default::default(), &mut |op, _| {
            Ok(vec![self.prefetch(b, op, a, &env)?])
        })?;
        if !found {
            return Err(no_such_loop(func, INFO.name, &self.iname, &out));
        }
        Ok(out)
    }

    /// The array parameter, checked: a memref the function only reads.
    pub(crate) fn array_value(&self, b: &Builder, func: &Op, ops: &[Op]) -> Result<Value, IrError> {
        let args = func
            .regions
            .first()
            .and_then(|r| r.blocks.first())
            .map(|blk| blk.args.clone())
            .unwrap_or_default();
        let what = self.what();
        let a = usize::try_from(self.array).ok().and_then(|k| args.get(k).copied());
        let Some(a) = a.filter(|a| MemRefType::parse(b.m.ty(*a)).is_some_and(|t| t.rank() > 0)) else {
            return Err(IrError::user_at(
                func,
                format!(
                    "add-prefetch: {what} is not an array parameter of the function ({} parameters)",
                    args.len()
                ),
            ));
        };
        let mut bad: Option<&Op> = None;
        for o in ops {
            o.walk(&mut |x| {
                let reads = x.name == "memref.load" && x.operands.first() == Some(&a) && !x.operands[1..].contains(&a);
                let dim = x.name == "memref.dim" && x.operands.first() == Some(&a);
                let store = is_store_to(x, a);
                if bad.is_none() && x.operands.contains(&a) && !reads && !dim && !store {
                    bad = Some(x);
                }
            });
        }
        if let Some(x) = bad {
            return Err(IrError::user_at(
                x,
                format!(
                    "add-prefetch: {what} cannot be prefetched: the function uses it other than by reading and writing elements (a view or a call could write it while its copy in shared memory is read); prefetch an array the parallel loop only reads"
                ),
            ));
        }
        Ok(a)
    }

    /// Refuses a prefetch of `a` in loop `op` when the loop writes `a`: its copy in
    /// shared memory would be stale. (Writes before or after the loop are other
    /// kernels or host code, ordered with it.)
    pub(crate) fn check_loop(&self, op: &Op, a: Value) -> Result<(), IrError> {
        let mut store: Option<&Op> = None;
        op.walk(&mut |x| {
            if store.is_none() && is_store_to(x, a) {
                store = Some(x);
            }
        });
        match store {
            Some(x) => Err(IrError::user_at(
                x,
                format!(
                    "add-prefetch: {} cannot be prefetched in this loop: the loop writes it here, and its copy in shared memory would be stale; prefetch an array the parallel loop only reads",
                    self.what()
                ),
            )),
            None => Ok(()),
        }
    }

    /// Prefetches `a` in the lanes loops of the parallel loop `op`.
    fn prefetch(&self, b: &mut Builder, mut op: Op, a: Value, env: &Env) -> Result<Op, IrError> {
        let n = op.inames().first().cloned().unwrap_or_default();
        self.check_loop(&op, a)?;
        if LoopKind::of(&op) != Some(LoopKind::Workers) {
            return Err(IrError::user_at(
                &op,
                format!(
                    "add-prefetch: loop `{n}` is not a parallel loop: the threads of a group share a prefetch, so name the `#pragma parallel for` loop"
                ),
            ));
        }
        let ty = b.m.ty(a).to_string();
        let mt = MemRefType::parse(&ty).expect("checked memref");
        let elem = ty.trim_end_matches('>').rsplit('x').next().unwrap_or("f64").to_string();
        // The group's shared memory left beside its own scratchpads (appy.buffer).
        let mut used = 0i64;
        for o in &op.regions[0].blocks[0].ops {
            if o.name == "memref.alloca" && o.has_attr(BUFFER) {
                let t = MemRefType::parse(b.m.ty(o.results[0]));
                used += t.map_or(0, |t| {
                    t.shape.iter().map(|d| d.unwrap_or(0) as i64).product::<i64>() * t.elem.size() as i64
                });
            }
        }
        let ctx = Ctx {
            a,
            elem,
            elem_bytes: mt.elem.size() as i64,
            rank: mt.rank(),
            env,
            budget: Cell::new(BUFFER_BYTES - used),
            skipped: Cell::new(0),
            mvl_seen: Cell::new(0),
        };
        let mut bufs = vec![];
        let body = std::mem::take(&mut op.regions[0].blocks[0].ops);
        let body = rewrite_block(b, &ctx, body, &mut bufs)?;
        if bufs.is_empty() {
            op.regions[0].blocks[0].ops = body;
            if ctx.skipped.get() > 0 {
                return Err(IrError::user_at(
                    &op,
                    format!(
                        "add-prefetch: a tile of {} in loop `{n}` takes {} bytes at a vector length of {}; a group has {} bytes of shared memory left: use a smaller vector length (`mvl`), or groups of fewer threads (`split`)",
                        self.what(),
                        ctx.skipped.get(),
                        ctx.mvl_seen.get(),
                        BUFFER_BYTES - used
                    ),
                ));
            }
            return Err(IrError::user_at(
                &op,
                format!(
                    "add-prefetch: no read of {} in loop `{n}` can be shared by a group's threads: it needs a vector loop (simd, or a group of threads) reading `a[..., i + c, ...]` at two or more constants `c` (the lane's index plus a constant in one subscript, the other subscripts the same for the whole group)",
                    self.what()
                ),
            ));
        }
        if ctx.skipped.get() > 0 {
            tracing::debug!(
                loop_ = n.as_str(),
                bytes = ctx.skipped.get(),
                "add-prefetch: tiles that do not fit in the group's shared memory stay reads of global memory"
            );
        }
        let mut new: Vec<Op> = bufs.into_iter().flat_map(|(ops, _)| ops).collect();
        new.extend(body);
        op.regions[0].blocks[0].ops = new;
        Ok(op)
    }
}

/// What the function around the loops gives the analysis: its integer constants (the
/// lanes' bounds) and copies of its integer arithmetic (subscripts computed outside the
/// lanes, followed by `index_form_through`).
struct Env {
    consts: HashMap<Value, i64>,
    arith: Vec<Op>,
}

impl Env {
    fn of(ops: &[Op]) -> Env {
        Env {
            consts: int_constants(ops),
            arith: arith_ops(ops),
        }
    }
}

/// What the rewrite of one parallel loop needs.
struct Ctx<'a> {
    a: Value,
    elem: String,
    elem_bytes: i64,
    rank: usize,
    env: &'a Env,
    /// Bytes of shared memory left for tiles.
    budget: Cell<i64>,
    /// Bytes of the tiles left out for want of space (the smallest, when none fits).
    skipped: Cell<i64>,
    /// The vector length of the lanes loops met (for messages).
    mvl_seen: Cell<i64>,
}

/// The reads of one tile: the same dimension varies with the lane, from the same base,
/// and the other subscripts are the same.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    dim: usize,
    base: IndexForm,
    others: Vec<IndexForm>,
}

/// Rewrites the lanes loops of `ops` (and of the sequential loops among them that carry
/// no values). The scratchpads' allocations (and their sizes) go to `bufs`.
fn rewrite_block(b: &mut Builder, ctx: &Ctx<'_>, ops: Vec<Op>, bufs: &mut Vec<(Vec<Op>, i64)>) -> Result<Vec<Op>, IrError> {
    let mut out = Vec::with_capacity(ops.len());
    for mut op in ops {
        if LoopKind::of(&op) == Some(LoopKind::Lanes) {
            out.extend(prefetch_lanes(b, ctx, &mut op, bufs));
        } else if op.name == "scf.for" && op.results.is_empty() {
            let body = std::mem::take(&mut op.regions[0].blocks[0].ops);
            op.regions[0].blocks[0].ops = rewrite_block(b, ctx, body, bufs)?;
        }
        out.push(op);
    }
    Ok(out)
}

/// Every value defined inside `op`: results and block arguments of nested ops.
fn defined_inside(op: &Op) -> HashSet<Value> {
    let mut s = HashSet::new();
    op.walk(&mut |x| {
        s.extend(x.results.iter().copied());
        for r in &x.regions {
            for blk in &r.blocks {
                s.extend(blk.args.iter().copied());
            }
        }
    });
    s
}

/// The tiles of lanes loop `op`: rewrites its qualifying reads of the array and returns
/// the ops that load the tiles, to run before it.
fn prefetch_lanes(b: &mut Builder, ctx: &Ctx<'_>, op: &mut Op, bufs: &mut Vec<(Vec<Op>, i64)>) -> Vec<Op> {
    let Some((0, mvl, 1)) = const_bounds(op, &ctx.env.consts) else {
        return vec![];
    };
    if op.regions[0].blocks[0].args.len() != 1 {
        return vec![];
    }
    let l = op.regions[0].blocks[0].args[0];
    let inside = defined_inside(op);
    // The body's ops, and the integer arithmetic of the function, for the affine forms.
    let outer: HashMap<Value, &Op> = ctx.env.arith.iter().map(|o| (o.results[0], o)).collect();
    let mut tiles: BTreeMap<Key, Vec<(Value, i64)>> = BTreeMap::new();
    {
        let mut all: Vec<&Op> = vec![];
        for r in &op.regions {
            for blk in &r.blocks {
                for o in &blk.ops {
                    o.walk(&mut |x| all.push(x));
                }
            }
        }
        let mut defs: HashMap<Value, &Op> = HashMap::new();
        for o in &all {
            for r in &o.results {
                defs.insert(*r, o);
            }
        }
        for o in &all {
            if o.name != "memref.load" || o.operands[0] != ctx.a || o.operands.len() != 1 + ctx.rank {
                continue;
            }
            let forms: Option<Vec<IndexForm>> = o.operands[1..]
                .iter()
                .map(|v| index_form_through(*v, &[l], &defs, &outer, 0))
                .collect();
            let Some(forms) = forms else { continue };
            let invariant = |f: &IndexForm| {
                f.terms.keys().all(|t| match t {
                    Term::Sym(v) => !inside.contains(v),
                    Term::Iv(_) => true,
                })
            };
            let varying: Vec<usize> = (0..forms.len()).filter(|&d| forms[d].coeff(&Term::Iv(l)) != 0).collect();
            let [dim] = varying[..] else { continue };
            if forms[dim].coeff(&Term::Iv(l)) != 1 || !forms.iter().all(invariant) {
                continue;
            }
            let c = forms[dim].c;
            let mut base = forms[dim].clone().without(&Term::Iv(l));
            base.c = 0;
            let others = forms
                .iter()
                .enumerate()
                .filter(|(d, _)| *d != dim)
                .map(|(_, f)| f.clone())
                .collect();
            tiles.entry(Key { dim, base, others }).or_default().push((o.results[0], c));
        }
    }
    ctx.mvl_seen.set(mvl);
    // A tile read at one offset only gives each element to one thread: no reuse, only
    // a copy and a barrier more.
    let mut tiles: Vec<(Key, Vec<(Value, i64)>)> = tiles
        .into_iter()
        .filter(|(_, reads)| reads.iter().any(|r| r.1 != reads[0].1))
        .collect();
    // The tiles with the most reads first, while the group's shared memory lasts.
    tiles.sort_by_key(|(_, reads)| std::cmp::Reverse(reads.len()));
    tiles.retain(|(_, reads)| {
        let cmin = reads.iter().map(|r| r.1).min().unwrap_or(0);
        let cmax = reads.iter().map(|r| r.1).max().unwrap_or(0);
        let bytes = (mvl + cmax - cmin) * ctx.elem_bytes;
        if bytes > ctx.budget.get() {
            let s = ctx.skipped.get();
            ctx.skipped.set(if s == 0 { bytes } else { s.min(bytes) });
            return false;
        }
        ctx.budget.set(ctx.budget.get() - bytes);
        true
    });
    if tiles.is_empty() {
        return vec![];
    }
    b.loc = op.loc.clone();
    let (lb, ub, st) = (op.operands[0], op.operands[1], op.operands[2]);
    let mut pre = vec![];
    let mut at_top = vec![];
    let mut replace: HashMap<Value, (Value, Value)> = HashMap::new();
    let t = b.m.value("index");
    let mut kloops = vec![];
    for (key, reads) in &tiles {
        let cmin = reads.iter().map(|r| r.1).min().unwrap_or(0);
        let cmax = reads.iter().map(|r| r.1).max().unwrap_or(0);
        let size = mvl + cmax - cmin;
        let dynamic = format!("memref<?x{}>", ctx.elem);
        let alloc = b.op1(
            "memref.alloca",
            &[],
            &format!("memref<{size}x{}>", ctx.elem),
            &[("operandSegmentSizes", "array<i32: 0, 0>".into()), (BUFFER, "unit".into())],
        );
        let buf = b.op1("memref.cast", &[alloc], &dynamic, &[]);
        bufs.push((b.take(), size));
        // The tile's first element and the other subscripts, for the whole group.
        let mut start_form = key.base.clone();
        start_form.c = cmin;
        let start = materialize(b, &start_form);
        let mut idx: Vec<Value> = vec![];
        let mut others = key.others.iter();
        let mut ok: Option<Value> = None;
        for d in 0..ctx.rank {
            let v = if d == key.dim {
                start
            } else {
                materialize(b, others.next().expect("one form per other dimension"))
            };
            idx.push(v);
            if d != key.dim {
                let cd = b.index(d as i64);
                let extent = b.op1("memref.dim", &[ctx.a, cd], "index", &[]);
                let inb = b.cmpi(IPred::Ult, v, extent);
                ok = Some(match ok {
                    Some(p) => b.bin("arith.andi", p, inb),
                    None => inb,
                });
            }
        }
        let cd = b.index(key.dim as i64);
        let extent = b.op1("memref.dim", &[ctx.a, cd], "index", &[]);
        let csize = b.index(size);
        pre.extend(b.take());
        // The cooperative load: thread t loads elements t, t + MVL, ...
        let k = b.m.value("index");
        let g = b.bin("arith.addi", start, k);
        let inb = b.cmpi(IPred::Ult, g, extent);
        let inb = match ok {
            Some(p) => b.bin("arith.andi", p, inb),
            None => inb,
        };
        let mut sub = idx.clone();
        sub[key.dim] = g;
        let mut then = {
            b.begin();
            let v = b.load(ctx.a, &sub);
            b.store(v, buf, &[k]);
            b.end()
        };
        then.push(Builder::yield_op(&[]));
        b.if_op(inb, then, None);
        let mut kbody = b.take();
        kbody.push(Builder::yield_op(&[]));
        kloops.push(
            Op::new("scf.for")
                .with_operands([t, csize, ub])
                .with_region(Builder::region(vec![k], kbody))
                .with_loc(op.loc.clone()),
        );
        // The reads: element l + c - cmin of the tile.
        let mut offs: BTreeMap<i64, Value> = BTreeMap::new();
        for (r, c) in reads {
            let o = *offs.entry(c - cmin).or_insert_with(|| {
                let cv = b.index(c - cmin);
                pre.extend(b.take());
                let v = b.bin("arith.addi", l, cv);
                at_top.extend(b.take());
                v
            });
            replace.insert(*r, (buf, o));
        }
    }
    // One lanes loop loads every tile.
    let parts = ParallelParts {
        lbs: vec![lb],
        ubs: vec![ub],
        steps: vec![st],
        inits: vec![],
        ivs: vec![t],
        body: kloops,
        reduce: Op::new("scf.reduce"),
    };
    let mut load = make_parallel(parts, vec![], &[(Mark::Lanes.attr().into(), "unit".into())]);
    load.loc = op.loc.clone();
    load.set_inames(&[format!("_appy_prefetch{}", bufs.len() - 1)]);
    load.set_tags(&[Tag::Local(0)]);
    pre.push(load);
    let body = &mut op.regions[0].blocks[0].ops;
    for o in body.iter_mut() {
        o.walk_mut(&mut |x| {
            if x.name == "memref.load"
                && let Some(r) = x.results.first()
                && let Some((buf, off)) = replace.get(r)
            {
                x.operands = vec![*buf, *off];
            }
        });
    }
    at_top.append(body);
    *body = at_top;
    pre
}

/// Whether `x` writes an element of `a`.
fn is_store_to(x: &Op, a: Value) -> bool {
    match x.name.as_str() {
        "memref.store" => x.operands.get(1) == Some(&a),
        "memref.atomic_rmw" => x.operands.get(1) == Some(&a),
        _ => false,
    }
}

/// `Σ coeff·term + c` as an `index` value (`Sym` terms converted to `index`).
fn materialize(b: &mut Builder, f: &IndexForm) -> Value {
    let mut acc: Option<Value> = None;
    for (t, k) in &f.terms {
        let (Term::Sym(v) | Term::Iv(v)) = *t;
        let v = b.to_index(v);
        let x = if *k == 1 {
            v
        } else {
            let kv = b.index(*k);
            b.bin("arith.muli", v, kv)
        };
        acc = Some(match acc {
            Some(a) => b.bin("arith.addi", a, x),
            None => x,
        });
    }
    match acc {
        None => b.index(f.c),
        Some(a) if f.c == 0 => a,
        Some(a) => {
            let c = b.index(f.c);
            b.bin("arith.addi", a, c)
        }
    }
}

/// The prefetches recorded on a loop (`appy.transforms`), parsed.
fn parse_recorded(op: &Op, v: &str) -> Result<Vec<AddPrefetch>, IrError> {
    let mut out = vec![];
    for text in parse_str_array(v) {
        let bad = |e: String| IrError::user_at(op, format!("bad transform `{text}`: {e}"));
        let Some(rest) = text.strip_prefix("appy-add-prefetch{").and_then(|r| r.strip_suffix('}')) else {
            return Err(bad("appy-add-prefetch applies only prefetches".into()));
        };
        let p = PassOptions::parse(&INFO, rest)
            .and_then(|o| AddPrefetch::from_options(&o))
            .map_err(bad)?;
        if p.array < 0 {
            return Err(bad("a recorded prefetch names its array".into()));
        }
        out.push(p);
    }
    Ok(out)
}

/// Applies the prefetches recorded on loops (`appy.transforms`, from the pragmas): the
/// arrays are checked against the whole function first.
fn recorded(b: &mut Builder, func: &Op, ops: Vec<Op>) -> Result<Vec<Op>, IrError> {
    let mut requests: Vec<Result<Vec<AddPrefetch>, IrError>> = vec![];
    for o in &ops {
        o.walk(&mut |x| {
            if let Some(v) = x.attr(TRANSFORMS) {
                requests.push(parse_recorded(x, v));
            }
        });
    }
    let mut arrays: HashMap<i64, Value> = HashMap::new();
    for p in requests.into_iter().collect::<Result<Vec<_>, _>>()?.into_iter().flatten() {
        if let std::collections::hash_map::Entry::Vacant(e) = arrays.entry(p.array) {
            e.insert(p.array_value(b, func, &ops)?);
        }
    }
    if arrays.is_empty() {
        return Ok(ops);
    }
    let env = Env::of(&ops);
    apply_recorded(b, ops, &arrays, &env)
}

fn apply_recorded(b: &mut Builder, ops: Vec<Op>, arrays: &HashMap<i64, Value>, env: &Env) -> Result<Vec<Op>, IrError> {
    let mut out = Vec::with_capacity(ops.len());
    for mut op in ops {
        if let Some(v) = op.remove_attr(TRANSFORMS) {
            for p in parse_recorded(&op, &v)? {
                op = p.prefetch(b, op, arrays[&p.array], env)?;
            }
        } else {
            for r in &mut op.regions {
                for blk in &mut r.blocks {
                    blk.ops = apply_recorded(b, std::mem::take(&mut blk.ops), arrays, env)?;
                }
            }
        }
        out.push(op);
    }
    Ok(out)
}

impl Pass for AddPrefetch {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| rw.rewrite_functions(|b, func, ops| self.apply(b, func, ops)))
    }
}
