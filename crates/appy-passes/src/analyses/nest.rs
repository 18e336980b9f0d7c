//! Loop nests: the depth of a rectangular perfect nest of parallel loops, which becomes
//! one grid (`appy-gpu-outline`), is strip-mined as one (`appy-strip-mine`), and whose
//! loop variables host loads may be sunk past (`appy-gpu-sink-loads`).

use crate::util::is_parallel;
use appy_ir::effects::is_pure;
use appy_ir::ir::{Op, Value};
use appy_ir::schedule::Mark;

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
