//! The tiles of `appy-add-prefetch`: which reads of the array a lanes loop makes at
//! neighbouring offsets (affine subscripts, `analyses::index`), which tiles are worth
//! making and fit, and the code that loads them cooperatively and reads them.

use crate::analyses::index::{IndexForm, Term, arith_ops, index_form_through};
use crate::analyses::nest::{const_bounds, int_constants};
use crate::util::{ParallelParts, make_parallel};
use appy_ir::attrs::CmpIPredicate as IPred;
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Op, Value};
use appy_ir::schedule::{BUFFER, LoopKind, Mark, Tag};
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};

/// What the function around the loops gives the analysis: its integer constants (the
/// lanes' bounds) and copies of its integer arithmetic (subscripts computed outside the
/// lanes, followed by `index_form_through`).
pub(super) struct Env {
    pub(super) consts: HashMap<Value, i64>,
    pub(super) arith: Vec<Op>,
}

impl Env {
    pub(super) fn of(ops: &[Op]) -> Env {
        Env {
            consts: int_constants(ops),
            arith: arith_ops(ops),
        }
    }
}

/// What the rewrite of one parallel loop needs.
pub(super) struct Ctx<'a> {
    pub(super) a: Value,
    pub(super) elem: String,
    pub(super) elem_bytes: i64,
    pub(super) rank: usize,
    pub(super) env: &'a Env,
    /// Bytes of shared memory left for tiles.
    pub(super) budget: Cell<i64>,
    /// Bytes of the tiles left out for want of space (the smallest, when none fits).
    pub(super) skipped: Cell<i64>,
    /// The vector length of the lanes loops met (for messages).
    pub(super) mvl_seen: Cell<i64>,
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
pub(super) fn rewrite_block(b: &mut Builder, ctx: &Ctx<'_>, ops: Vec<Op>, bufs: &mut Vec<(Vec<Op>, i64)>) -> Result<Vec<Op>, IrError> {
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
    let tiles = reads_by_tile(ctx, op, l);
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
        let bytes = mvl.saturating_add(cmax.saturating_sub(cmin)).saturating_mul(ctx.elem_bytes);
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

/// The qualifying reads of the array in lanes loop `op` (lane `l`), by tile: each
/// read's result and its constant offset.
fn reads_by_tile(ctx: &Ctx<'_>, op: &Op, l: Value) -> BTreeMap<Key, Vec<(Value, i64)>> {
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
    tiles
}
