//! The passes of the `appy` level: library calls for matrix products, solves and
//! Cholesky loops, then tensor statements to loop nests. This file holds the helpers they
//! share: reading `appy.assign` and the tensor ops (`appy.view`, `appy.ew`,
//! `appy.reduce`), reductions by kind, and a block walker that knows whether a block
//! runs inside a worker.

pub mod columns;
pub mod fuse;
pub mod library;
pub mod solve_library;
pub mod sync;
pub mod temporaries;
pub mod to_loops;

use crate::util::is_parallel;
use appy_ir::attrs::parse_str;
pub use appy_ir::attrs::{i64_array, int_array};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
/// The parts of an `appy.assign` (the typed view).
pub use appy_ir::ops::AppyAssign as Assign;
use appy_ir::reduction::Reduction;
use appy_ir::rewrite::rewrite;
use std::collections::{HashMap, HashSet};

/// The rank and element type of `tensor<?x?xf64>`.
pub fn tensor_type(ty: &str) -> Option<(usize, String)> {
    let inner = ty.strip_prefix("tensor<")?.strip_suffix('>')?;
    let parts: Vec<&str> = inner.split('x').collect();
    let elem = parts.last()?.to_string();
    Some((parts.len() - 1, elem))
}

/// Whether `op` is one of the value-producing tensor ops.
pub fn is_tensor_op(op: &Op) -> bool {
    matches!(op.name.as_str(), "appy.view" | "appy.ew" | "appy.reduce" | "appy.iota")
}

pub use appy_ir::ops::steps_of;

/// The tensor ops of an op list, by result.
pub fn tensor_defs(ops: &[Op]) -> HashMap<Value, Op> {
    ops.iter().filter(|o| is_tensor_op(o)).map(|o| (o.results[0], o.clone())).collect()
}

/// A rewrite of one `appy.assign` (see [`map_assigns`]).
pub type AssignRewrite<'a> = dyn FnMut(&HashMap<Value, Op>, Op, Assign, &mut Vec<Op>) -> Result<(), IrError> + 'a;

/// Rewrites each `appy.assign` of a block's op list: `f(defs, op, assign, out)` pushes
/// the statement's replacement (or the statement itself) onto `out`, given the block's
/// tensor ops by result (`defs`). The other ops are kept as they are.
pub fn map_assigns(ops: Vec<Op>, f: &mut AssignRewrite<'_>) -> Result<Vec<Op>, IrError> {
    if !ops.iter().any(|o| o.name == "appy.assign") {
        return Ok(ops);
    }
    let defs = tensor_defs(&ops);
    let mut out = vec![];
    for op in ops {
        if op.name != "appy.assign" {
            out.push(op);
            continue;
        }
        let a = Assign::of(&op).map_err(|e| IrError::at(&op, e))?;
        f(&defs, op, a, &mut out)?;
    }
    Ok(out)
}

/// The statement dimensions a tensor value depends on (sorted).
pub fn value_dims(defs: &HashMap<Value, Op>, v: Value) -> Vec<usize> {
    let Some(op) = defs.get(&v) else { return vec![] };
    let mut ds: Vec<usize> = match op.name.as_str() {
        "appy.view" | "appy.iota" => op
            .attr("dims")
            .map(int_array)
            .unwrap_or_default()
            .into_iter()
            .filter(|d| *d >= 0)
            .map(|d| d as usize)
            .collect(),
        "appy.ew" => op.operands.iter().flat_map(|o| value_dims(defs, *o)).collect(),
        "appy.reduce" => {
            let red = reduced_dims(op);
            value_dims(defs, op.operands[0]).into_iter().filter(|d| !red.contains(d)).collect()
        }
        _ => vec![],
    };
    ds.sort_unstable();
    ds.dedup();
    ds
}

/// The tensor ops reachable from `v` (its DAG), as result values.
pub fn dag(defs: &HashMap<Value, Op>, v: Value) -> HashSet<Value> {
    let mut seen = HashSet::new();
    let mut stack = vec![v];
    while let Some(x) = stack.pop() {
        if let Some(op) = defs.get(&x)
            && seen.insert(x)
        {
            stack.extend(op.operands.iter().copied());
        }
    }
    seen
}

/// The dimensions an `appy.reduce` removes.
pub fn reduced_dims(op: &Op) -> Vec<usize> {
    op.attr("dims")
        .map(int_array)
        .unwrap_or_default()
        .into_iter()
        .map(|d| d as usize)
        .collect()
}

/// The reduction of an `appy.reduce` (`kind` attribute; `sum` when absent).
pub fn reduction(op: &Op) -> Result<Reduction, IrError> {
    let kind = op.attr("kind").map(parse_str).unwrap_or("sum");
    Reduction::parse(kind).ok_or_else(|| IrError::at(op, format!("unknown reduction `{kind}`")))
}

/// A rewrite of one block's op list; the flag says whether the block runs in a worker.
pub type BlockRewrite<'a> = dyn FnMut(&mut Builder, Vec<Op>, bool) -> Result<Vec<Op>, IrError> + 'a;

/// Applies `f` to the op list of every block under `op` (innermost first), telling it
/// whether the block runs inside a worker (the body of a parallel loop).
pub fn for_blocks(b: &mut Builder, op: &mut Op, in_worker: bool, f: &mut BlockRewrite<'_>) -> Result<(), IrError> {
    let inner = in_worker || is_parallel(op);
    for r in &mut op.regions {
        for blk in &mut r.blocks {
            for o in &mut blk.ops {
                for_blocks(b, o, inner, f)?;
            }
            let ops = std::mem::take(&mut blk.ops);
            blk.ops = f(b, ops, inner)?;
        }
    }
    Ok(())
}

/// Runs `f` over every block of every top-level op of `m` ([`for_blocks`]).
pub fn rewrite_module(m: &mut Module, f: &mut BlockRewrite<'_>) -> Result<(), IrError> {
    rewrite(m, |rw| rw.top.iter_mut().try_for_each(|op| for_blocks(&mut rw.b, op, false, f)))
}
