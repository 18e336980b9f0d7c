//! Barrier placement in a kernel's worker code: which ops need a `gpu.barrier` before
//! or after them once the worker runs on a block's threads ([`annotate_barriers`]).
//! `appy-gpu-map-threads` places the barriers it marks; the test pass
//! `appy-test-barriers` prints them. Also the kernels of a `gpu.module` and the scalar
//! slots private to each thread, which the placement is relative to.

use crate::gpu::outline::WORKER_PARTIAL;
use crate::gpu::sink_loads::SUNK;
use crate::util::{is_lanes, is_parallel, is_simd};
use appy_ir::effects::{Access, effects};
use appy_ir::ir::{Op, Value};
use appy_ir::schedule::Mark;
use std::collections::HashSet;

/// The attribute [`annotate_barriers`] sets: `"before"`, `"after"` or `"both"`.
pub const BARRIERS: &str = "appy.barriers";

/// The kernels (`gpu.func` with `gpu.kernel`) of a `gpu.module`.
pub fn kernels(gm: &mut Op) -> impl Iterator<Item = &mut Op> {
    gm.regions
        .iter_mut()
        .flat_map(|r| r.blocks.iter_mut())
        .flat_map(|b| b.ops.iter_mut())
        .filter(|o| o.name == "gpu.func" && o.has_attr("gpu.kernel") && !o.regions.is_empty() && !o.regions[0].blocks.is_empty())
}

/// The scalar slots (`memref.alloca`) of a kernel: private to each thread.
pub fn private_slots(ops: &[Op]) -> HashSet<Value> {
    let mut private = HashSet::new();
    for o in ops {
        o.walk(&mut |x| {
            if x.name == "memref.alloca" {
                private.extend(x.results.iter().copied());
            }
        });
    }
    private
}

/// Whether `op` is the chunk loop of a simd reduction (`scf.for {appy.chunks}` with results).
pub fn is_chunk_reduction(op: &Op) -> bool {
    op.name == "scf.for" && op.has_mark(Mark::Chunks) && !op.results.is_empty()
}

/// Whether `o` (or anything inside) writes (or, unless `writes_only`, reads) memory
/// other than the private slots.
pub fn accesses_global(o: &Op, private: &HashSet<Value>, writes_only: bool) -> bool {
    let global = |acc: Access, x: &Op| match acc {
        Access::None => false,
        Access::Operands(ix) => ix.iter().any(|i| x.operands.get(*i).is_some_and(|m| !private.contains(m))),
        Access::Any => true,
    };
    o.walk_any(&|x| {
        let e = effects(x);
        global(e.writes, x) || (!writes_only && global(e.reads, x))
    })
}

/// Whether `o` (or anything inside) synchronises the threads of a block: a barrier, a
/// block reduction, a shuffle. After one, other threads' writes are visible.
pub fn synchronises(o: &Op) -> bool {
    o.walk_any(&|x| {
        matches!(
            x.name.as_str(),
            "gpu.barrier" | "gpu.all_reduce" | "gpu.shuffle" | "gpu.subgroup_reduce"
        )
    })
}

/// Barrier placement: marks each op of a worker's code that needs a `gpu.barrier`
/// before and/or after it once mapped to threads ([`BARRIERS`]), the ops of nested
/// regions included, as `appy-gpu-map-threads` will visit them.
///
/// * A lanes loop, or a simd reduction's chunk loop, that writes memory other than
///   private slots gets a barrier on each side (the threads write elements other
///   threads read), except when it carries `appy.nosync` (appy-tensor-sync: each
///   thread only touches the elements it writes), and at the `top` level of a kernel,
///   except before the first and after the last op that touches such memory (the
///   kernel's start and end order those).
/// * A store to memory other than private slots (done by thread 0) gets barriers on
///   both sides, so that no thread reads a value from the future or the past.
///
/// At the `top` level, the loads marked `appy.sunk` (read before the worker, of memory
/// the nest does not write) and the cross-worker updates (`appy.worker_partial`, to
/// buffers the kernel never reads) are not among the worker's accesses.
pub fn annotate_barriers(ops: &mut [Op], private: &HashSet<Value>, top: bool) {
    let outside = |o: &Op| top && (o.has_attr(SUNK) || o.has_attr(WORKER_PARTIAL));
    let mem: Vec<usize> = (0..ops.len())
        .filter(|&i| !outside(&ops[i]) && accesses_global(&ops[i], private, false))
        .collect();
    let (first, last) = (mem.first().copied(), mem.last().copied());
    for (i, op) in ops.iter_mut().enumerate() {
        if outside(op) {
            continue;
        }
        let (before, after) = if is_lanes(op) || is_chunk_reduction(op) {
            let writes = accesses_global(op, private, true) && !op.has_mark(Mark::NoSync);
            if is_chunk_reduction(op) {
                // The chunk loop's first lanes loop becomes per-thread code; every other
                // op of its body is worker code of its own.
                let body = &mut op.regions[0].blocks[0].ops;
                let li = body.iter().position(is_lanes);
                for k in 0..body.len() {
                    if Some(k) != li {
                        annotate_barriers(&mut body[k..=k], private, false);
                    }
                }
            }
            (writes && (!top || first != Some(i)), writes && (!top || last != Some(i)))
        } else if op.name == "memref.store" && op.operands.get(1).is_some_and(|m| !private.contains(m)) {
            (true, true)
        } else if op.name == "memref.atomic_rmw" || is_parallel(op) || is_simd(op) {
            (false, false)
        } else {
            for r in &mut op.regions {
                for blk in &mut r.blocks {
                    annotate_barriers(&mut blk.ops, private, false);
                }
            }
            (false, false)
        };
        let text = match (before, after) {
            (true, true) => "\"both\"",
            (true, false) => "\"before\"",
            (false, true) => "\"after\"",
            (false, false) => continue,
        };
        op.set_attr(BARRIERS, text);
    }
}

/// Removes [`BARRIERS`] from `op`: whether a barrier goes before and after it.
pub fn take_barriers(op: &mut Op) -> (bool, bool) {
    match op.remove_attr(BARRIERS).as_deref() {
        Some("\"both\"") => (true, true),
        Some("\"before\"") => (true, false),
        Some("\"after\"") => (false, true),
        _ => (false, false),
    }
}
