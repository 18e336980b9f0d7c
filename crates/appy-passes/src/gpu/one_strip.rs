//! `appy-gpu-one-strip`: a row kept in registers across the statements of a kernel.
//!
//! A kernel whose statements each walk a row in strips of the vector length (the
//! chunk loops `scf.for %s = 0 to %n step S {appy.chunks}` at the kernel's top level,
//! as softmax's max, sum and output are) reads the row once per statement. Where two or
//! more of these loops load the same array, the kernel is versioned on every such
//! `%n == S`: in that version each loop runs once, so its body is inlined with `%s = 0`
//! and `%n = S`, and the lanes' bound checks, which then hold for every thread of the
//! block (thread ids are bounded by `known_block_size`, [`Ranges`]), are gone. Every
//! statement's loads of the row are then in one block at the same subscripts, and
//! `appy-gpu-redundant-loads` keeps the first: the row stays in registers from the
//! first statement to the last. Rows of another length run the original code.
//!
//! Before (two statements, `S = 512`, two lanes per thread):
//! ```mlir
//! %m = scf.for %s = %c0 to %n step %c512 iter_args(...) {      // appy.chunks
//!   scf.for %l = %c0 to %c2 step %c1 ... {                      // a thread's lanes
//!     %j = %s + 2 * tid + %l
//!     scf.if (%j < %n) { memref.load %x[%i, %j] ... }
//!   } ...
//! }
//! ... gpu.all_reduce ...
//! scf.for %s = %c0 to %n2 step %c512 { ... the same loads, another statement ... }
//! ```
//! After:
//! ```mlir
//! scf.if (%n == 512 and %n2 == 512) {
//!   scf.for %l = %c0 to %c2 step %c1 ... { %j = 2 * tid + %l; memref.load %x[%i, %j] ... }
//!   ... gpu.all_reduce ...
//!   scf.for %l = ... { the same loads ... }
//! } else { the original code }
//! ```
//! Part of seed 002's code generation (`pipelines::VECTOR_CODE`), after
//! `appy-gpu-map-threads{contiguous=1 mark=1}` and before the lanes are unrolled.

use crate::analyses::barriers::kernels;
use crate::analyses::ranges::Ranges;
use crate::{Pass, PassInfo};
use appy_ir::build::{Builder, IPred};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::Mark;
use std::collections::{HashMap, HashSet};

/// The pass.
pub struct OneStrip;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-gpu-one-strip",
    description: "gpu → gpu: a kernel whose statements walk the same row in strips is versioned on rows of one strip, the strip loops inlined and the lanes' bound checks gone (the row stays in registers)",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(OneStrip)),
};

impl Pass for OneStrip {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| {
            for g in rw.top.iter_mut().filter(|o| o.name == "gpu.module") {
                for k in kernels(g) {
                    version(&mut rw.b, k);
                }
            }
        });
        Ok(())
    }
}

/// The top-level strip loops of a kernel's `ops` worth versioning: their positions,
/// the strip `S` and their upper bounds (`None`: leave the kernel).
fn strips(ops: &[Op], ranges: &Ranges, args: &HashSet<Value>) -> Option<(Vec<usize>, i64, Vec<Value>)> {
    let mut at = vec![];
    let mut step = None;
    let mut bounds: Vec<Value> = vec![];
    let mut loaded: HashMap<Value, usize> = HashMap::new();
    for (k, o) in ops.iter().enumerate() {
        if o.name != "scf.for" || !o.has_mark(Mark::Chunks) || o.operands.len() < 3 {
            continue;
        }
        let s = ranges.constant(o.operands[2])?;
        if ranges.constant(o.operands[0]) != Some(0) || s <= 0 || step.is_some_and(|t| t != s) {
            return None;
        }
        step = Some(s);
        at.push(k);
        if !bounds.contains(&o.operands[1]) {
            bounds.push(o.operands[1]);
        }
        let mut arrays = HashSet::new();
        o.walk(&mut |x| {
            if x.name == "memref.load" && args.contains(&x.operands[0]) {
                arrays.insert(x.operands[0]);
            }
        });
        for a in arrays {
            *loaded.entry(a).or_default() += 1;
        }
    }
    // Worth it only where a later statement reads what an earlier one read.
    let step = step?;
    // The bounds must be known where the version starts: the kernel's arguments or
    // values defined before the first loop.
    let before: HashSet<Value> = ops[..*at.first()?].iter().flat_map(|o| o.results.iter().copied()).collect();
    if bounds.iter().any(|n| !args.contains(n) && !before.contains(n)) {
        return None;
    }
    (at.len() >= 2 && loaded.values().any(|n| *n >= 2)).then_some((at, step, bounds))
}

/// Versions kernel `k` on rows of one strip, where [`strips`] finds loops to inline.
fn version(b: &mut Builder, k: &mut Op) {
    let mut ranges = Ranges::of_kernel(k);
    let args: HashSet<Value> = k.regions[0].blocks[0].args.iter().copied().collect();
    let ops = std::mem::take(&mut k.regions[0].blocks[0].ops);
    ranges.walk(&ops);
    let Some((at, step, bounds)) = strips(&ops, &ranges, &args) else {
        k.regions[0].blocks[0].ops = ops;
        return;
    };
    let first = at[0];
    let Some((ret, body)) = ops.split_last() else {
        k.regions[0].blocks[0].ops = ops;
        return;
    };
    let (head, tail) = body.split_at(first);
    b.loc = k.loc.clone();
    b.begin();
    // The condition: every strip loop's bound is one strip.
    let s = b.index(step);
    let zero = b.index(0);
    let mut cond = None;
    for n in &bounds {
        let c = b.cmpi(IPred::Eq, *n, s);
        cond = Some(match cond {
            Some(a) => b.bin("arith.andi", a, c),
            None => c,
        });
    }
    let pre = b.take();
    // The version: the loops inlined at `%s = 0`, the bounds `S`.
    let mut map: HashMap<Value, Value> = bounds.iter().map(|n| (*n, s)).collect();
    let mut then = vec![];
    for (j, o) in tail.iter().enumerate() {
        if at.contains(&(first + j)) {
            then.extend(inline_once(b, o, zero, &mut map));
        } else {
            then.push(b.m.clone_op(o, &mut map));
        }
    }
    let mut r = ranges;
    r.set(s, step, step);
    r.set(zero, 0, 0);
    r.walk(&then);
    let mut then = fold_checks(then, &r, &mut HashMap::new(), &mut HashMap::new());
    then.push(Builder::yield_op(&[]));
    let mut orelse = tail.to_vec();
    orelse.push(Builder::yield_op(&[]));
    let mut out = head.to_vec();
    out.extend(pre);
    b.if_op(cond.expect("two strip loops"), then, Some(orelse));
    out.extend(b.end());
    out.push(ret.clone());
    k.regions[0].blocks[0].ops = out;
}

/// The body of the one-iteration loop `o` at `iv = zero`, its carried values starting
/// at their initial values; `map` then takes the loop's results to what its body
/// yields.
fn inline_once(b: &mut Builder, o: &Op, zero: Value, map: &mut HashMap<Value, Value>) -> Vec<Op> {
    let body = o.body(0);
    map.insert(body.args[0], zero);
    for (a, init) in body.args[1..].iter().zip(&o.operands[3..]) {
        let init = *map.get(init).unwrap_or(init);
        map.insert(*a, init);
    }
    let mut out = vec![];
    for x in &body.ops {
        if x.name == "scf.yield" {
            for (r, y) in o.results.iter().zip(&x.operands) {
                let y = *map.get(y).unwrap_or(y);
                map.insert(*r, y);
            }
        } else {
            out.push(b.m.clone_op(x, map));
        }
    }
    out
}

/// `ops` with the bound checks that `r` decides replaced by constants, `scf.if`s on a
/// decided condition replaced by the branch taken, and `and`s of true checks folded;
/// `map` takes replaced results to their values, `known` decided conditions to theirs.
fn fold_checks(ops: Vec<Op>, r: &Ranges, map: &mut HashMap<Value, Value>, known: &mut HashMap<Value, bool>) -> Vec<Op> {
    let mut out = Vec::with_capacity(ops.len());
    for mut o in ops {
        o.remap_uses(map);
        let decided = |v: &Value, known: &HashMap<Value, bool>| known.get(v).copied();
        if let Some(t) = r.decide(&o) {
            known.insert(o.results[0], t);
            out.push(o);
            continue;
        }
        if o.name == "arith.andi" && o.operands.len() == 2 {
            let (x, y) = (decided(&o.operands[0], known), decided(&o.operands[1], known));
            if x == Some(true) && y == Some(true) || x == Some(false) || y == Some(false) {
                known.insert(o.results[0], x == Some(true) && y == Some(true));
            }
        }
        if o.name == "scf.if"
            && let Some(t) = decided(&o.operands[0], known)
        {
            let taken = if t { 0 } else { 1 };
            if let Some((y, inner)) = o.regions[taken].blocks.first().and_then(|blk| blk.ops.split_last()) {
                let inner = fold_checks(inner.to_vec(), r, map, known);
                for (res, v) in o.results.iter().zip(&y.operands) {
                    map.insert(*res, *map.get(v).unwrap_or(v));
                }
                out.extend(inner);
            }
            continue;
        }
        for reg in &mut o.regions {
            for blk in &mut reg.blocks {
                let inner = std::mem::take(&mut blk.ops);
                blk.ops = fold_checks(inner, r, map, known);
            }
        }
        out.push(o);
    }
    out
}
