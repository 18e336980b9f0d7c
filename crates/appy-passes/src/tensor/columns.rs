//! Column reductions on the CPU (`appy-tensor-to-loops{cpu=1}`).
//!
//! `y[:N] = np.sum(A[:M, :N], axis=0)` (any reduction, optionally followed by
//! element-wise ops on its result: `np.sum(A, axis=0) / n`) as one loop per column with
//! the reduction inside walks each column with a stride of a row: on a GPU that is
//! coalesced across lanes, on a CPU it misses the cache line for every element and
//! cannot be vectorised. On the CPU such a statement walks rows, with the columns in a
//! contiguous inner loop LLVM vectorises, in one of two ways chosen at run time:
//!
//! ```text
//! if N <= M:                                  # rows in parallel
//!     for j in [0, N): y[j] = identity
//!     parallel i in [0, M):
//!         simd j in [0, N): atomic y[j] (+)= A[i, j]   # per-thread copies of y
//!     for j in [0, N): y[j] = f(y[j])         # only when the value is f(reduction)
//! else:                                       # blocks of columns in parallel
//!     parallel jb in [0, N) step W:
//!         for j in [jb, min(jb + W, N)): y[j] = identity
//!         for i in [0, M):
//!             for j in [jb, min(jb + W, N)): y[j] = y[j] (+) A[i, j]
//!         for j in ...: y[j] = f(y[j])
//! ```
//!
//! The atomic updates of the first form are privatised by `appy-cpu-openmp` (each
//! thread accumulates whole rows into its own copy of `y`, the copies are combined
//! once), so every row is read once, contiguously; the second keeps a block of `W`
//! columns ([`BLOCK_BYTES`]) in the L1 cache while it walks the rows.
//!
//! It applies when the statement has one target dimension and its value one reduction
//! over one dimension, the target dimension is the last (contiguous) axis of every
//! array the reduction reads with it, with step 1, the reduced dimension never is,
//! and the statement is not atomic. The reduction is then taken row by row, as NumPy
//! does for `axis=0` (per thread, then the threads' partial results combined).

use crate::tensor::to_loops::{Ctx, Env, Gen};
use crate::tensor::*;
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Op, Value};
use appy_ir::schedule::Mark;
use std::collections::HashMap;

/// Bytes of target elements per block (the block stays in the L1 cache).
pub const BLOCK_BYTES: i64 = 4096;

/// The blocked loop nest for `g`'s statement, if it is a column reduction (see the
/// module docs); `false` (nothing emitted) otherwise.
pub(crate) fn blocked(g: &Gen<'_>, b: &mut Builder, kept: &[usize]) -> Result<bool, IrError> {
    let [p] = kept else { return Ok(false) };
    let p = *p;
    if g.a.atomic.is_some() {
        return Ok(false);
    }
    let defs = g.defs;
    let all = dag(defs, g.a.value);
    let reds: Vec<&Op> = all.iter().filter_map(|v| defs.get(v)).filter(|o| o.name == "appy.reduce").collect();
    let [red] = reds.as_slice() else { return Ok(false) };
    let [r] = reduced_dims(red)[..] else { return Ok(false) };
    let input = red.operands[0];
    let inside = dag(defs, input);
    // Outside the reduction: element-wise ops only.
    for v in all.iter().filter(|v| !inside.contains(v)) {
        let o = &defs[v];
        if o.name != "appy.ew" && o.name != "appy.reduce" {
            return Ok(false);
        }
    }
    // Inside: views with the column dimension last (step 1), the row dimension not last.
    let mut uses_p = false;
    for v in &inside {
        let o = &defs[v];
        match o.name.as_str() {
            "appy.view" => {
                let dims = o.attr("dims").map(int_array).unwrap_or_default();
                let steps = steps_of(o, dims.len());
                let last = dims.len().saturating_sub(1);
                for (k, d) in dims.iter().enumerate() {
                    if *d == p as i64 {
                        if k != last || steps[k] != 1 {
                            return Ok(false);
                        }
                        uses_p = true;
                    }
                    if *d == r as i64 && k == last {
                        return Ok(false);
                    }
                }
            }
            "appy.ew" => {}
            _ => return Ok(false),
        }
    }
    let Some(ty) = tensor_type(b.m.ty(input)).map(|(_, e)| e) else {
        return Ok(false);
    };
    let size = match ty.as_str() {
        "f64" | "i64" => 8,
        "f32" | "i32" => 4,
        _ => return Ok(false),
    };
    if !uses_p {
        return Ok(false);
    }
    let kind = reduction(red)?;
    let float = appy_ir::types::is_float_type(&ty);
    // Rows in parallel when there are at least as many rows as columns, else blocks of
    // columns in parallel.
    let by_rows = b.cmpi(appy_ir::build::IPred::Sle, g.ext[p], g.ext[r]);
    b.begin();
    let res = rows_in_parallel(g, b, (p, r), input, kind, float, &ty, red.results[0]);
    let mut then = b.end();
    res?;
    then.push(Builder::yield_op(&[]));
    b.begin();
    let res = column_blocks(g, b, (p, r), input, kind, &ty, size, red.results[0]);
    let mut orelse = b.end();
    res?;
    orelse.push(Builder::yield_op(&[]));
    b.if_op(by_rows, then, Some(orelse));
    Ok(true)
}

/// A loop over `[0, n)` of kind `attr` (`appy.parallel`, `appy.simd`, or none: a
/// sequential `scf.for`) with body `body(iv)`.
fn simple_loop(
    g: &Gen<'_>,
    b: &mut Builder,
    (lo, hi, step): (Value, Value, Value),
    mark: Option<Mark>,
    body: &mut dyn FnMut(&mut Builder, Value) -> Result<(), IrError>,
) -> Result<(), IrError> {
    let iv = b.m.value("index");
    b.begin();
    let r = body(b, iv);
    let mut ops = b.end();
    r?;
    let mut op = match mark {
        None => {
            ops.push(Builder::yield_op(&[]));
            Op::new("scf.for").with_operands([lo, hi, step])
        }
        Some(a) => {
            ops.push(Op::new("scf.reduce").with_loc(g.loc.clone()));
            let mut op = Op::new("scf.parallel")
                .with_operands([lo, hi, step])
                .with_attr("operandSegmentSizes", "array<i32: 1, 1, 1, 0>");
            op.set_mark(a);
            op
        }
    };
    op = op.with_region(Builder::region(vec![iv], ops)).with_loc(g.loc.clone());
    b.push(op);
    Ok(())
}

/// `y[j] = identity` over `[lo, hi)`: the target before the reduction.
fn init(
    g: &Gen<'_>,
    b: &mut Builder,
    p: usize,
    kind: appy_ir::reduction::Reduction,
    ty: &str,
    (lo, hi): (Value, Value),
) -> Result<(), IrError> {
    simple_loop(g, b, (lo, hi, g.c1), None, &mut |b, j| {
        let id = b.identity(kind, ty).map_err(|s| g.err(s))?;
        let idx = g.target_index(b, &HashMap::from([(p, j)]))?;
        b.store(id, g.a.target, &idx);
        Ok(())
    })
}

/// `y[j] = f(y[j])` for the element-wise ops `f` applied to the reduction's result
/// (nothing when the value is the reduction itself), over `[lo, hi)`.
fn finish(g: &Gen<'_>, b: &mut Builder, p: usize, red_result: Value, (lo, hi): (Value, Value)) -> Result<(), IrError> {
    if g.a.value == red_result {
        return Ok(());
    }
    simple_loop(g, b, (lo, hi, g.c1), None, &mut |b, j| {
        let env: Env = HashMap::from([(p, j)]);
        let idx = g.target_index(b, &env)?;
        let y = b.load(g.a.target, &idx);
        let memo = HashMap::from([(red_result, y)]);
        let v = g.eval(b, g.a.value, &env, Ctx::Lanes, &memo)?;
        b.store(v, g.a.target, &idx);
        Ok(())
    })
}

/// The target initialised, then rows in parallel, each updating the target's columns
/// with atomic updates (which `appy-cpu-openmp` turns into per-thread copies of the
/// target, combined once), then the element-wise ops.
#[allow(clippy::too_many_arguments)]
fn rows_in_parallel(
    g: &Gen<'_>,
    b: &mut Builder,
    (p, r): (usize, usize),
    input: Value,
    kind: appy_ir::reduction::Reduction,
    float: bool,
    ty: &str,
    red_result: Value,
) -> Result<(), IrError> {
    let (c0, c1) = (g.c0, g.c1);
    let (np, nr) = (g.ext[p], g.ext[r]);
    init(g, b, p, kind, ty, (c0, np))?;
    let memo = HashMap::new();
    let atomic = kind.atomic_kind(float);
    simple_loop(g, b, (c0, nr, c1), Some(Mark::Parallel), &mut |b, i| {
        simple_loop(g, b, (c0, np, c1), Some(Mark::Simd), &mut |b, j| {
            let env: Env = HashMap::from([(p, j), (r, i)]);
            let x = g.eval(b, input, &env, Ctx::Lanes, &memo)?;
            let mut ops = vec![x, g.a.target];
            ops.extend(g.target_index(b, &env)?);
            b.op1("memref.atomic_rmw", &ops, ty, &[("kind", atomic.attr())]);
            Ok(())
        })
    })?;
    finish(g, b, p, red_result, (c0, np))
}

/// A parallel loop over blocks of [`BLOCK_BYTES`] of consecutive columns: each block
/// initialises its part of the target, then for every row updates its columns, then
/// applies the element-wise ops.
#[allow(clippy::too_many_arguments)]
fn column_blocks(
    g: &Gen<'_>,
    b: &mut Builder,
    (p, r): (usize, usize),
    input: Value,
    kind: appy_ir::reduction::Reduction,
    ty: &str,
    size: i64,
    red_result: Value,
) -> Result<(), IrError> {
    let (c0, c1) = (g.c0, g.c1);
    let (np, nr) = (g.ext[p], g.ext[r]);
    let w = b.index(BLOCK_BYTES / size);
    let memo = HashMap::new();
    simple_loop(g, b, (c0, np, w), Some(Mark::Parallel), &mut |b, jb| {
        let end = b.bin("arith.addi", jb, w);
        let hi = b.bin("arith.minsi", end, np);
        init(g, b, p, kind, ty, (jb, hi))?;
        simple_loop(g, b, (c0, nr, c1), None, &mut |b, i| {
            simple_loop(g, b, (jb, hi, c1), None, &mut |b, j| {
                let env: Env = HashMap::from([(p, j), (r, i)]);
                let x = g.eval(b, input, &env, Ctx::Lanes, &memo)?;
                let idx = g.target_index(b, &env)?;
                let old = b.load(g.a.target, &idx);
                let n = b.combine(kind, old, x);
                b.store(n, g.a.target, &idx);
                Ok(())
            })
        })?;
        finish(g, b, p, red_result, (jb, hi))
    })
}
