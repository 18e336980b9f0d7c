//! `appy-tensor-fuse` (seed 001 §5.1.4): reduction-bounded operator fusion.
//!
//! `appy-tensor-to-loops` evaluates a statement's value element by element inside one
//! loop nest, so a chain of element-wise ops ending in at most one reduction per point
//! is fused: no intermediate result is stored. A reduction is a fusion boundary when
//! its result is used by an element-wise op over more dimensions than the reduction
//! keeps (e.g. `x[:N] / sum(x[:N])`): evaluating it in place would recompute it at
//! every element. This pass splits such a reduction into its own statement before the
//! original one, writing a private scalar (a reduction to a scalar) or a temporary
//! array (outside parallel loops), and the original statement reads that instead.
//! A reduction whose result has exactly the target's dimensions (`y[:M] = alpha *
//! mv(A, x) + y[:M]`) stays fused.

use crate::tensor::*;
use crate::{Pass, PassInfo};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use std::collections::{HashMap, HashSet};

/// The pass.
pub struct TensorFuse;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-tensor-fuse",
    description: "reduction-bounded fusion: split reductions used inside larger element-wise expressions (seed 001 §5.1.4)",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(TensorFuse)),
};

impl Pass for TensorFuse {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite_module(m, &mut fuse_block)
    }
}

/// A reduction in `a`'s value that must be split out, if any.
fn boundary(b: &Builder, a: &Assign, defs: &HashMap<Value, Op>) -> Option<Value> {
    let nodes = dag(defs, a.value);
    let mut kept = a.kept();
    kept.sort_unstable();
    // Users of each value inside the DAG.
    let mut users: HashMap<Value, Vec<Value>> = HashMap::new();
    for v in &nodes {
        for o in &defs[v].operands {
            users.entry(*o).or_default().push(*v);
        }
    }
    // Whether every path from `v` to the root goes through element-wise ops over
    // exactly `dims`.
    fn fused(v: Value, root: Value, dims: &[usize], users: &HashMap<Value, Vec<Value>>, defs: &HashMap<Value, Op>) -> bool {
        if v == root {
            return true;
        }
        users.get(&v).is_some_and(|us| {
            us.iter()
                .all(|u| defs[u].name == "appy.ew" && value_dims(defs, *u) == dims && fused(*u, root, dims, users, defs))
        })
    }
    let mut order: Vec<Value> = nodes.into_iter().collect();
    order.sort_by_key(|v| v.0);
    for v in order {
        if defs[&v].name != "appy.reduce" {
            continue;
        }
        let dims = value_dims(defs, v);
        let in_place = dims == kept && fused(v, a.value, &dims, &users, defs);
        // Nested reductions are split from the inside out.
        let _ = b;
        if !in_place {
            return Some(v);
        }
    }
    None
}

fn fuse_block(b: &mut Builder, ops: Vec<Op>, in_worker: bool) -> Result<Vec<Op>, IrError> {
    let mut ops = ops;
    let mut guard = 0;
    'again: loop {
        guard += 1;
        if guard > 10_000 {
            return Err(IrError::new("appy-tensor-fuse did not converge (compiler bug)"));
        }
        let defs = tensor_defs(&ops);
        for (i, op) in ops.iter().enumerate() {
            if op.name != "appy.assign" {
                continue;
            }
            let a = Assign::of(op).map_err(|e| IrError::at(op, e))?;
            let Some(r) = boundary(b, &a, &defs) else { continue };
            let loc = op.loc.clone();
            b.loc = loc.clone();
            let rdims = value_dims(&defs, r);
            let elem = tensor_type(b.m.ty(r)).map(|(_, e)| e).unwrap_or_else(|| "f64".into());
            b.begin();
            let replacement;
            let new_assign;
            if rdims.is_empty() {
                let (alloca, slot) = b.alloca_op(&elem);
                b.push(alloca);
                let mut ra = a.clone();
                ra.target = slot;
                ra.value = r;
                ra.idx = vec![];
                ra.dims = vec![];
                ra.atomic = None;
                new_assign = ra.build(op);
                replacement = (slot, None);
            } else {
                if in_worker {
                    b.end();
                    return Err(IrError::located(
                        loc.as_deref(),
                        "a reduction over part of a tensor used inside an expression in a parallel loop needs an array: assign it to an array slice first",
                    ));
                }
                let sizes: Vec<Value> = rdims.iter().map(|d| b.to_index(a.exts[*d])).collect();
                let n = sizes.len();
                let ty = format!("memref<{}{elem}>", "?x".repeat(n));
                let tmp = b.op1(
                    "memref.alloc",
                    &sizes,
                    &ty,
                    &[("operandSegmentSizes", format!("array<i32: {n}, 0>"))],
                );
                let zero = b.int(0, "i64");
                let mut ra = a.clone();
                ra.target = tmp;
                ra.value = r;
                ra.idx = vec![zero; n];
                ra.dims = rdims.iter().map(|d| *d as i64).collect();
                ra.atomic = None;
                new_assign = ra.build(op);
                replacement = (tmp, Some(vec![zero; n]));
            }
            let mut new_ops = b.end();
            new_ops.push(new_assign.with_attr("appy.split", "unit"));
            // The value that replaces the reduction in the original statement.
            let (mem, idx) = replacement;
            let rv = match idx {
                None => {
                    let l = b.m.value(elem.clone());
                    new_ops.push(Op::new("memref.load").with_operands([mem]).with_results([l]).with_loc(loc.clone()));
                    l
                }
                Some(idx) => {
                    let t = b.m.value(b.m.ty(r).to_string());
                    new_ops.push(
                        Op::new("appy.view")
                            .with_operands(std::iter::once(mem).chain(idx))
                            .with_results([t])
                            .with_attr("dims", i64_array(&rdims.iter().map(|d| *d as i64).collect::<Vec<_>>()))
                            .with_loc(loc.clone()),
                    );
                    t
                }
            };
            // Move the users of `r` (transitively, within this statement) after the
            // new ops, and make them use the replacement.
            let nodes = dag(&defs, a.value);
            let mut moved: HashSet<Value> = HashSet::new();
            let mut changed = true;
            while changed {
                changed = false;
                for v in &nodes {
                    if !moved.contains(v) && defs[v].operands.iter().any(|o| *o == r || moved.contains(o)) {
                        moved.insert(*v);
                        changed = true;
                    }
                }
            }
            let mut map = HashMap::new();
            map.insert(r, rv);
            let mut rest = vec![];
            let mut kept_ops = vec![];
            for (j, mut o) in std::mem::take(&mut ops).into_iter().enumerate() {
                if j == i {
                    o.remap_uses(&map);
                    kept_ops.append(&mut new_ops);
                    kept_ops.append(&mut rest);
                    kept_ops.push(o);
                } else if j < i && o.results.first().is_some_and(|x| moved.contains(x)) {
                    o.remap_uses(&map);
                    rest.push(o);
                } else {
                    kept_ops.push(o);
                }
            }
            ops = kept_ops;
            continue 'again;
        }
        return Ok(ops);
    }
}
