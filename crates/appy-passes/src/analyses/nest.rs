//! Loop nests: the depth of a rectangular perfect nest of parallel loops, which becomes
//! one grid (`appy-gpu-outline`), is strip-mined as one (`appy-strip-mine`), and whose
//! loop variables host loads may be sunk past (`appy-gpu-sink-loads`); and the width of
//! a lanes loop, which the `loops` level records as the loop's constant bound (the
//! vector length strip-mining split by), so the passes after it read the schedule from
//! the module rather than being told it.

use crate::util::is_parallel;
use appy_ir::attrs::{Scalar, parse_constant};
use appy_ir::effects::is_pure;
use appy_ir::ir::{Op, Value};
use appy_ir::schedule::LoopKind;
use appy_ir::schedule::Mark;
use std::collections::HashMap;

/// The chain of a rectangular perfect nest of parallel loops starting at `op`:
/// returns how many levels (≥ 1).
pub fn nest_depth(op: &Op) -> usize {
    let mut depth = 1;
    let mut cur = op;
    loop {
        if !cur.results.is_empty() {
            return depth;
        }
        let body = &cur.body(0).ops;
        let inner: Vec<&Op> = body.iter().filter(|o| o.name == "scf.parallel" || !o.regions.is_empty()).collect();
        let [inner] = inner.as_slice() else { return depth };
        if !is_parallel(inner) || inner.has_mark(Mark::Simd) {
            return depth;
        }
        // Other ops must be side-effect free, and the inner bounds must not be
        // computed inside this body (rectangular nest).
        if body
            .iter()
            .any(|o| !std::ptr::eq(o, *inner) && o.name != "scf.reduce" && !is_pure(o))
        {
            return depth;
        }
        let defined: std::collections::HashSet<Value> = body.iter().flat_map(|o| o.results.iter().copied()).collect();
        let d = inner.body(0).args.len();
        if inner.operands[..3 * d].iter().any(|v| defined.contains(v)) {
            return depth;
        }
        depth += 1;
        cur = inner;
    }
}

/// The integer constants (`arith.constant`) defined in `ops` and the regions inside them.
pub fn index_constants<'a>(ops: impl IntoIterator<Item = &'a Op>) -> HashMap<Value, i64> {
    let mut out = HashMap::new();
    for o in ops {
        o.walk(&mut |x| {
            if x.name == "arith.constant"
                && let (Some(r), Some(v)) = (x.results.first(), x.attr("value"))
                && let Some(Scalar::Int(c)) = parse_constant(v, "")
            {
                out.insert(*r, c);
            }
        });
    }
    out
}

/// The bounds `(lb, ub, step)` of the loop `op` (`scf.for`, or a one-dimensional
/// `scf.parallel`) when all three are constants of `consts`.
pub fn const_bounds(op: &Op, consts: &HashMap<Value, i64>) -> Option<(i64, i64, i64)> {
    let c = |k: usize| op.operands.get(k).and_then(|v| consts.get(v)).copied();
    Some((c(0)?, c(1)?, c(2)?))
}

/// The trip count of a loop from `lb` to `ub` by the positive step `st`:
/// `max(0, ceil((ub - lb) / st))`.
pub fn trip_count(lb: i64, ub: i64, st: i64) -> i64 {
    if ub > lb { (ub - lb + st - 1) / st } else { 0 }
}

/// [`index_constants`], and the integer casts of constants (`arith.index_cast` of an
/// `i64` constant: the bounds of `range(3)`), for the passes that need a trip count.
pub fn int_constants<'a>(ops: impl IntoIterator<Item = &'a Op> + Clone) -> HashMap<Value, i64> {
    let mut out = index_constants(ops.clone());
    for o in ops {
        o.walk(&mut |x| {
            if matches!(x.name.as_str(), "arith.index_cast" | "arith.index_castui" | "arith.extsi")
                && let (Some(r), Some(a)) = (x.results.first(), x.operands.first())
                && let Some(c) = out.get(a).copied()
            {
                out.insert(*r, c);
            }
        });
    }
    out
}

/// The number of lanes of a lanes loop (`scf.parallel {appy.lanes}` over `[0, W)`, step
/// 1): `W`, a constant of `consts`; `None` for another op or a bound not constant.
pub fn lanes_width(op: &Op, consts: &HashMap<Value, i64>) -> Option<i64> {
    if LoopKind::of(op) != Some(LoopKind::Lanes) || op.operands.len() < 3 {
        return None;
    }
    let c = |k: usize| consts.get(&op.operands[k]).copied();
    (c(0) == Some(0) && c(2) == Some(1)).then(|| c(1)).flatten().filter(|w| *w > 0)
}
