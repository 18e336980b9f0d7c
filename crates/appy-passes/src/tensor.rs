//! Helpers shared by the tensor passes: reading `appy.assign` and the tensor ops
//! (`appy.view`, `appy.ew`, `appy.reduce`) of the `appy` level, reductions by kind,
//! and a block walker that knows whether a block runs inside a worker.

use crate::PassError;
use crate::util::{builder_for, finish, is_parallel};
use appy_ir::build::Builder;
use appy_ir::ir::{Module, Op, Region, Value};
use appy_ir::types::{DType, STy};
use std::collections::{HashMap, HashSet};

/// Parses `array<i64: 1, 2>` / `array<i32: ...>` / `array<i64>`.
pub fn int_array(s: &str) -> Vec<i64> {
    let inner = s.trim().trim_start_matches("array<").trim_end_matches('>');
    match inner.split_once(':') {
        Some((_, xs)) => xs.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        None => vec![],
    }
}

/// `array<i64: a, b>` (or `array<i64>` when empty).
pub fn i64_array(xs: &[i64]) -> String {
    if xs.is_empty() {
        "array<i64>".into()
    } else {
        format!("array<i64: {}>", xs.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "))
    }
}

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

/// The per-axis steps of an `appy.view` or `appy.assign` (`steps` attribute; 1 on every
/// axis when absent): a sliced axis reads `lower + step * i` for the dimension's `i`.
pub fn steps_of(op: &Op, axes: usize) -> Vec<i64> {
    let mut s = op.attr("steps").map(int_array).unwrap_or_default();
    s.resize(axes, 1);
    s
}

/// The tensor ops of an op list, by result.
pub fn tensor_defs(ops: &[Op]) -> HashMap<Value, Op> {
    ops.iter().filter(|o| is_tensor_op(o)).map(|o| (o.results[0], o.clone())).collect()
}

/// A rewrite of one `appy.assign` (see [`map_assigns`]).
pub type AssignRewrite<'a> = dyn FnMut(&HashMap<Value, Op>, Op, Assign, &mut Vec<Op>) -> Result<(), PassError> + 'a;

/// Rewrites each `appy.assign` of a block's op list: `f(defs, op, assign, out)` pushes
/// the statement's replacement (or the statement itself) onto `out`, given the block's
/// tensor ops by result (`defs`). The other ops are kept as they are.
pub fn map_assigns(ops: Vec<Op>, f: &mut AssignRewrite<'_>) -> Result<Vec<Op>, PassError> {
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
        let a = Assign::of(&op)?;
        f(&defs, op, a, &mut out)?;
    }
    Ok(out)
}

/// The parts of an `appy.assign`.
#[derive(Clone, Debug)]
pub struct Assign {
    /// The target memref (an array, or a 0-d slot).
    pub target: Value,
    /// The value (a tensor, or a scalar that is broadcast).
    pub value: Value,
    /// Per target axis: the lower bound (sliced axis) or the index (scalar axis), i64.
    pub idx: Vec<Value>,
    /// Extent of each statement dimension (i64).
    pub exts: Vec<Value>,
    /// Per target axis: the statement dimension, or -1 for a scalar index.
    pub dims: Vec<i64>,
    /// Loop order (statement dimensions, outermost first).
    pub order: Vec<usize>,
    /// `parallel` per dimension.
    pub parallel: Vec<bool>,
    /// `simd` per dimension.
    pub simd: Vec<bool>,
    /// `le(c)` per dimension (0: none).
    pub le: Vec<i64>,
    /// `memref.atomic_rmw` kind for `#pragma atomic` updates.
    pub atomic: Option<String>,
    /// Per target axis: the step of a sliced axis (`a[::2]`), 1 otherwise.
    pub steps: Vec<i64>,
}

impl Assign {
    /// Reads an `appy.assign`.
    pub fn of(op: &Op) -> Result<Assign, PassError> {
        let bad = |what: &str| PassError::new(format!("malformed appy.assign: {what}"), op.loc.clone());
        let seg = int_array(op.attr("operandSegmentSizes").ok_or_else(|| bad("no operandSegmentSizes"))?);
        let [1, 1, ni, ne] = seg.as_slice() else {
            return Err(bad("operandSegmentSizes"));
        };
        let (ni, ne) = (*ni as usize, *ne as usize);
        if op.operands.len() != 2 + ni + ne {
            return Err(bad("operand count"));
        }
        let get = |k: &str| op.attr(k).map(int_array).unwrap_or_default();
        let dims = get("dims");
        let order: Vec<usize> = get("order").into_iter().map(|x| x as usize).collect();
        let flags = |k: &str| -> Vec<bool> {
            let mut v: Vec<bool> = get(k).into_iter().map(|x| x != 0).collect();
            v.resize(ne, false);
            v
        };
        let mut le = get("le");
        le.resize(ne, 0);
        if dims.len() != ni || order.iter().any(|d| *d >= ne) {
            return Err(bad("dims/order do not match the operands"));
        }
        let mut order = order;
        for d in 0..ne {
            if !order.contains(&d) {
                order.push(d);
            }
        }
        Ok(Assign {
            target: op.operands[0],
            value: op.operands[1],
            idx: op.operands[2..2 + ni].to_vec(),
            exts: op.operands[2 + ni..].to_vec(),
            dims,
            order,
            parallel: flags("parallel"),
            simd: flags("simd"),
            le,
            atomic: op.attr("atomic").map(str::to_string),
            steps: steps_of(op, ni),
        })
    }

    /// Builds an `appy.assign` with these parts, keeping `like`'s other attributes.
    pub fn build(&self, like: &Op) -> Op {
        let mut op = Op::new("appy.assign")
            .with_operands(
                [self.target, self.value]
                    .into_iter()
                    .chain(self.idx.iter().copied())
                    .chain(self.exts.iter().copied()),
            )
            .with_loc(like.loc.clone());
        op.attrs = like.attrs.clone();
        op.set_attr(
            "operandSegmentSizes",
            format!("array<i32: 1, 1, {}, {}>", self.idx.len(), self.exts.len()),
        );
        op.set_attr("dims", i64_array(&self.dims));
        if self.steps.iter().any(|s| *s != 1) {
            op.set_attr("steps", i64_array(&self.steps));
        } else {
            op.remove_attr("steps");
        }
        match &self.atomic {
            Some(a) => op.set_attr("atomic", a.clone()),
            None => {
                op.remove_attr("atomic");
            }
        }
        op
    }

    /// The statement dimensions of the target.
    pub fn kept(&self) -> Vec<usize> {
        self.dims.iter().filter(|d| **d >= 0).map(|d| *d as usize).collect()
    }
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

/// The kind (`sum`, `max`, `min`, `prod`) of an `appy.reduce`.
pub fn reduce_kind(op: &Op) -> String {
    op.attr("kind").unwrap_or("\"sum\"").trim_matches('"').to_string()
}

fn red_op(kind: &str, float: bool) -> Option<&'static str> {
    Some(match (kind, float) {
        ("sum", true) => "arith.addf",
        ("sum", false) => "arith.addi",
        ("prod", true) => "arith.mulf",
        ("prod", false) => "arith.muli",
        ("max", true) => "arith.maximumf",
        ("max", false) => "arith.maxsi",
        ("min", true) => "arith.minimumf",
        ("min", false) => "arith.minsi",
        _ => return None,
    })
}

/// `memref.atomic_rmw` kind of a reduction.
pub fn atomic_kind(kind: &str, float: bool) -> i64 {
    match (kind, float) {
        ("sum", true) => 0,
        ("sum", false) => 1,
        ("max", true) => 4,
        ("max", false) => 6,
        ("min", true) => 8,
        ("min", false) => 10,
        ("prod", true) => 12,
        _ => 13,
    }
}

fn sty(ty: &str) -> Result<STy, String> {
    DType::from_mlir(ty)
        .map(STy::strong)
        .ok_or_else(|| format!("unsupported element type {ty}"))
}

/// The identity of a reduction of kind `kind` over `ty`.
pub fn identity(b: &mut Builder, kind: &str, ty: &str) -> Result<Value, String> {
    let t = sty(ty)?;
    let i32t = t.dt == DType::I32;
    Ok(match (kind, t.is_float()) {
        ("sum", _) => b.scalar(0.0, t),
        ("prod", _) => b.scalar(1.0, t),
        ("max", true) => b.float(f64::NEG_INFINITY, ty),
        ("min", true) => b.float(f64::INFINITY, ty),
        ("max", false) => b.int(if i32t { i32::MIN as i64 } else { i64::MIN }, ty),
        ("min", false) => b.int(if i32t { i32::MAX as i64 } else { i64::MAX }, ty),
        _ => return Err(format!("unknown reduction `{kind}`")),
    })
}

/// `combine(x, y)` for a reduction of kind `kind`.
pub fn combine(b: &mut Builder, kind: &str, ty: &str, x: Value, y: Value) -> Result<Value, String> {
    let op = red_op(kind, sty(ty)?.is_float()).ok_or_else(|| format!("unknown reduction `{kind}`"))?;
    Ok(b.bin(op, x, y))
}

/// The combiner region of an `scf.reduce` for `kind` over `ty`.
pub fn combiner(b: &mut Builder, kind: &str, ty: &str) -> Result<Region, String> {
    let op = red_op(kind, sty(ty)?.is_float()).ok_or_else(|| format!("unknown reduction `{kind}`"))?;
    let x = b.m.value(ty);
    let y = b.m.value(ty);
    let r = b.m.value(ty);
    let ops = vec![
        Op::new(op).with_operands([x, y]).with_results([r]).with_loc(b.loc.clone()),
        Op::new("scf.reduce.return").with_operands([r]).with_loc(b.loc.clone()),
    ];
    Ok(Builder::region(vec![x, y], ops))
}

/// A rewrite of one block's op list; the flag says whether the block runs in a worker.
pub type BlockRewrite<'a> = dyn FnMut(&mut Builder, Vec<Op>, bool) -> Result<Vec<Op>, PassError> + 'a;

/// Applies `f` to the op list of every block under `op` (innermost first), telling it
/// whether the block runs inside a worker (the body of a parallel loop).
pub fn for_blocks(b: &mut Builder, op: &mut Op, in_worker: bool, f: &mut BlockRewrite<'_>) -> Result<(), PassError> {
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

/// Runs `f` over every block of every function of `m` ([`for_blocks`]).
pub fn rewrite_module(m: &mut Module, f: &mut BlockRewrite<'_>) -> Result<(), PassError> {
    let mut body = std::mem::take(m.body_mut());
    let mut b = builder_for(m);
    let mut r = Ok(());
    for op in &mut body {
        r = for_blocks(&mut b, op, false, f);
        if r.is_err() {
            break;
        }
    }
    finish(&mut b, m);
    *m.body_mut() = body;
    r
}
