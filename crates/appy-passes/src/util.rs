//! Helpers shared by the Rust passes: recognising appy's loop kinds (`appy_ir::schedule`), reductions
//! (`scf.reduce` combiners and their identities), and splicing regions. What ops do
//! to memory is `appy_ir::effects`; reductions are `appy_ir::reduction::Reduction`.

use appy_ir::build::Builder;
use appy_ir::ir::{Module, Op, Region, Value};
use appy_ir::reduction::Reduction;
use appy_ir::schedule::LoopKind;
use std::collections::HashMap;

/// A parallel loop: workers ([`LoopKind::Workers`]).
pub fn is_parallel(op: &Op) -> bool {
    LoopKind::of(op) == Some(LoopKind::Workers)
}
/// A vector loop inside a worker ([`LoopKind::Simd`]).
pub fn is_simd(op: &Op) -> bool {
    LoopKind::of(op) == Some(LoopKind::Simd)
}
/// The lanes of one MVL-wide vector ([`LoopKind::Lanes`]).
pub fn is_lanes(op: &Op) -> bool {
    LoopKind::of(op) == Some(LoopKind::Lanes)
}

/// Emits the trip count of a loop from `lb` to `ub` by the positive step `st`:
/// `max(0, ceil((ub - lb) / st))` (index values).
pub fn emit_trip_count(b: &mut Builder, lb: Value, ub: Value, st: Value) -> Value {
    let span = b.bin("arith.subi", ub, lb);
    let n = b.bin("arith.ceildivsi", span, st);
    let zero = b.index(0);
    b.bin("arith.maxsi", n, zero)
}

/// The parameters of `m`'s functions whose flag in `strided` (the `strided=` option
/// of the library passes: one `1`/`0` per parameter) is set: arrays passed as strided
/// views, which a library call on the CPU cannot take.
pub fn strided_params(m: &Module, strided: &[bool]) -> Vec<Value> {
    m.body()
        .iter()
        .filter(|f| f.name == "func.func" && !f.regions.is_empty() && !f.regions[0].blocks.is_empty())
        .flat_map(|f| {
            f.regions[0].blocks[0]
                .args
                .iter()
                .zip(strided)
                .filter(|(_, s)| **s)
                .map(|(a, _)| *a)
        })
        .collect()
}

/// Whether any op nested inside `op` (not `op` itself) satisfies `pred`.
pub fn contains(op: &Op, pred: &dyn Fn(&Op) -> bool) -> bool {
    let mut found = false;
    for r in &op.regions {
        for b in &r.blocks {
            for o in &b.ops {
                o.walk(&mut |x| found |= pred(x));
            }
        }
    }
    found
}

/// The parts of an `scf.parallel`: bounds, inits, induction variable, body ops
/// without the terminator, and the terminator (`scf.reduce`).
pub struct ParallelParts {
    /// Lower bounds (one per dimension).
    pub lbs: Vec<Value>,
    /// Upper bounds.
    pub ubs: Vec<Value>,
    /// Steps.
    pub steps: Vec<Value>,
    /// Initial values of the reductions.
    pub inits: Vec<Value>,
    /// Induction variables.
    pub ivs: Vec<Value>,
    /// Body without terminator.
    pub body: Vec<Op>,
    /// The `scf.reduce` terminator (operands: partial values; regions: combiners).
    pub reduce: Op,
}

/// Splits an `scf.parallel` into its parts.
pub fn split_parallel(op: Op) -> ParallelParts {
    let d = op.body(0).args.len();
    let mut ops = op.operands.clone();
    let inits = ops.split_off(3 * d);
    let steps = ops.split_off(2 * d);
    let ubs = ops.split_off(d);
    let lbs = ops;
    let mut op = op;
    let block = std::mem::take(&mut op.regions[0].blocks[0]);
    let mut body = block.ops;
    let reduce = body.pop().expect("scf.parallel has a terminator");
    ParallelParts {
        lbs,
        ubs,
        steps,
        inits,
        ivs: block.args,
        body,
        reduce,
    }
}

/// Builds an `scf.parallel` from parts (the results are given by the caller).
pub fn make_parallel(p: ParallelParts, results: Vec<Value>, attrs: &[(String, String)]) -> Op {
    let d = p.ivs.len();
    let k = p.inits.len();
    let mut body = p.body;
    body.push(p.reduce);
    let mut op = Op::new("scf.parallel")
        .with_operands(p.lbs.into_iter().chain(p.ubs).chain(p.steps).chain(p.inits))
        .with_results(results)
        .with_region(Builder::region(p.ivs, body));
    for (k, v) in attrs {
        if k != "operandSegmentSizes" {
            op.set_attr(k.clone(), v.clone());
        }
    }
    op.set_attr("operandSegmentSizes", format!("array<i32: {d}, {d}, {d}, {k}>"));
    op
}

/// The reduction an `scf.reduce` region computes (from its combining op), and whether
/// it is the float one.
pub fn reduction_of(r: &Region) -> Option<(Reduction, bool)> {
    Reduction::of_arith_op(&r.blocks.first()?.ops.first()?.name)
}

/// Emits `combine(a, b)` by cloning a reduction region's ops; returns the result.
pub fn emit_combine(b: &mut Builder, r: &Region, x: Value, y: Value) -> Value {
    emit_combine_with(b, r, x, y, |_| {})
}

/// [`emit_combine`], with `edit` applied to each cloned op (e.g. fast-math flags).
pub fn emit_combine_with(b: &mut Builder, r: &Region, x: Value, y: Value, edit: impl Fn(&mut Op)) -> Value {
    let blk = &r.blocks[0];
    let mut map: HashMap<Value, Value> = HashMap::new();
    map.insert(blk.args[0], x);
    map.insert(blk.args[1], y);
    let mut result = x;
    for o in &blk.ops {
        if o.name == "scf.reduce.return" {
            result = *map.get(&o.operands[0]).unwrap_or(&o.operands[0]);
            break;
        }
        let mut c = b.m.clone_op(o, &mut map);
        edit(&mut c);
        b.push(c);
    }
    result
}

/// Emits the identity element of a reduction region for type `ty`.
pub fn emit_identity(b: &mut Builder, r: &Region, ty: &str) -> Result<Value, String> {
    let (red, _) = reduction_of(r).ok_or_else(|| {
        let op = r.blocks.first().and_then(|b| b.ops.first()).map(|o| o.name.as_str()).unwrap_or("");
        format!("unsupported reduction operator `{op}`")
    })?;
    b.identity(red, ty)
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

/// A builder that appends into a fresh op list over `m`'s value table; the caller
/// takes the ops with [`Builder::take`] and the module back with [`finish`].
pub fn builder_for(m: &mut Module) -> Builder {
    let mut b = Builder::new();
    std::mem::swap(&mut b.m, m);
    b
}

/// Returns the module held by a builder made with [`builder_for`].
pub fn finish(b: &mut Builder, m: &mut Module) {
    std::mem::swap(&mut b.m, m);
}
