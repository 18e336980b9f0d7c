//! `appy-cpu-fuse`: consecutive parallel loops over the same range become one loop on
//! the CPU.
//!
//! ```python
//! #pragma parallel for simd          #pragma parallel for simd
//! for i in range(N):                 for i in range(N):
//!     b[i] = a[i] + 1.0       ==>         b[i] = a[i] + 1.0
//! #pragma parallel for simd              a[i] = b[i] * 2.0
//! for i in range(N):
//!     a[i] = b[i] * 2.0
//! ```
//!
//! Each loop streams its arrays through memory once; fused, an element written by the
//! first body is read back by the second from a register or the cache, and the OpenMP
//! region forks once. Two top-level `scf.parallel {appy.parallel}` loops of one
//! dimension are fused when they have the same bounds (the same values), neither has
//! reductions, only pure ops stand between them (moved above the first), their bodies
//! hold only loads, stores, `scf.if` and pure arithmetic, and every array that one of
//! them writes and the other accesses is accessed, in both, only at `[.., i + c, ..]`
//! with the loop variable at one position `p` with the same offset `c`, the other
//! indices loop-invariant. Iteration `i` of the fused loop then touches such an array
//! only where iterations `i` of both loops did, so no iteration reads what another
//! writes: running body 1 then body 2 per iteration gives the sequential result. As
//! everywhere in appy, distinct array parameters are assumed not to overlap.

use crate::analyses::index::{self, IndexForm as Lin, Term};
use crate::{Pass, PassInfo};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::schedule::Mark;
use std::collections::{HashMap, HashSet};

/// The pass.
pub struct CpuFuse;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-cpu-fuse",
    description: "CPU only: consecutive 1-D parallel loops over the same range, touching shared arrays only at the same index, fused into one",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(CpuFuse)),
};

impl Pass for CpuFuse {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        for f in m.body_mut() {
            if f.name == "func.func" && !f.regions.is_empty() {
                for r in &mut f.regions {
                    for b in &mut r.blocks {
                        b.ops = fuse_block(std::mem::take(&mut b.ops));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A 1-D parallel loop without reductions: its bounds, induction variable and body.
fn simple_parallel(op: &Op) -> Option<([Value; 3], Value)> {
    if !crate::util::is_parallel(op) || !op.results.is_empty() || op.operands.len() != 3 {
        return None;
    }
    let [r] = op.regions.as_slice() else { return None };
    let [b] = r.blocks.as_slice() else { return None };
    let [iv] = b.args.as_slice() else { return None };
    let term = b.ops.last()?;
    (term.name == "scf.reduce" && term.operands.is_empty()).then_some(([op.operands[0], op.operands[1], op.operands[2]], *iv))
}

/// Ops a fused body may hold (besides `scf.if` and loads/stores): pure ones.
fn pure(op: &Op) -> bool {
    let n = op.name.as_str();
    op.regions.is_empty() && (n.starts_with("arith.") || n.starts_with("math.") || n == "memref.dim" || n == "appy.mvl")
}

/// Whether every op of a body is one the analysis understands.
fn body_ok(ops: &[Op]) -> bool {
    ops.iter().all(|o| match o.name.as_str() {
        "memref.load" | "memref.store" | "scf.reduce" | "scf.yield" => true,
        "scf.if" => o.regions.iter().all(|r| r.blocks.iter().all(|b| body_ok(&b.ops))),
        _ => pure(o),
    })
}

/// The accesses of a body over its loop variable `iv`, as (memref, is a store, index
/// forms); `None` when an index is not affine.
#[allow(clippy::type_complexity)]
fn accesses(ops: &[Op], iv: Value) -> Option<Vec<(Value, bool, Vec<Lin>)>> {
    Some(
        index::accesses(ops, &[iv])?
            .into_iter()
            .map(|a| (a.mem, a.store, a.index))
            .collect(),
    )
}

/// Whether loops with these accesses can be fused (module docs).
fn independent(a: &[(Value, bool, Vec<Lin>)], b: &[(Value, bool, Vec<Lin>)], iv1: Value, iv2: Value) -> bool {
    let written: HashSet<Value> = a.iter().chain(b).filter(|(_, s, _)| *s).map(|(m, _, _)| *m).collect();
    for m in written {
        let in_a = a.iter().any(|(x, _, _)| *x == m);
        let in_b = b.iter().any(|(x, _, _)| *x == m);
        if !(in_a && in_b) {
            continue;
        }
        // Every access of m: the loop variable at one position p, coefficient 1, the
        // same offset; no loop variable elsewhere.
        let mut form: Option<(usize, Lin)> = None;
        let first = a.iter().map(|x| (x, iv1));
        for ((_, _, idx), iv) in first.chain(b.iter().map(|x| (x, iv2))).filter(|((x, _, _), _)| *x == m) {
            let t = Term::Iv(iv);
            let ps: Vec<usize> = (0..idx.len()).filter(|k| idx[*k].coeff(&t) != 0).collect();
            let [p] = ps.as_slice() else { return false };
            if idx[*p].coeff(&t) != 1 {
                return false;
            }
            let off = idx[*p].clone().without(&t);
            match &form {
                None => form = Some((*p, off)),
                Some((q, o)) if *q == *p && *o == off => {}
                _ => return false,
            }
        }
    }
    true
}

/// Fuses the fusable consecutive parallel loops of a block.
fn fuse_block(ops: Vec<Op>) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::with_capacity(ops.len());
    // Pure ops seen since the last loop of `out` (moved above it if fused).
    let mut between: Vec<Op> = vec![];
    for op in ops {
        if let Some((bounds2, iv2)) = simple_parallel(&op)
            && let Some(first) = out.last()
            && let Some((bounds1, iv1)) = simple_parallel(first)
            && bounds1 == bounds2
            && !between.iter().any(|x| bounds2.iter().any(|b| x.results.contains(b)))
        {
            let b1 = &first.regions[0].blocks[0].ops;
            let b2 = &op.regions[0].blocks[0].ops;
            let ok = body_ok(b1)
                && body_ok(b2)
                && match (accesses(b1, iv1), accesses(b2, iv2)) {
                    (Some(a1), Some(a2)) => independent(&a1, &a2, iv1, iv2),
                    _ => false,
                };
            if ok {
                let mut first = out.pop().expect("checked");
                let mut second = op;
                let mut body2 = std::mem::take(&mut second.regions[0].blocks[0].ops);
                body2.pop(); // its scf.reduce
                let map = HashMap::from([(iv2, iv1)]);
                body2.iter_mut().for_each(|o| o.remap_uses(&map));
                let body1 = &mut first.regions[0].blocks[0].ops;
                let term = body1.pop().expect("scf.reduce");
                body1.extend(body2);
                body1.push(term);
                if !(first.has_mark(Mark::Simd) && second.has_mark(Mark::Simd)) {
                    first.clear_mark(Mark::Simd);
                    first.clear_mark(Mark::NoSync);
                }
                out.append(&mut between);
                out.push(first);
                continue;
            }
        }
        if simple_parallel(&op).is_some() {
            out.append(&mut between);
            out.push(op);
        } else if pure(&op) && out.last().is_some_and(|l| simple_parallel(l).is_some()) {
            between.push(op);
        } else {
            out.append(&mut between);
            out.push(op);
        }
    }
    out.append(&mut between);
    out
}
