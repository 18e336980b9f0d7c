//! `appy-tensor-temporaries` (seed 001 §5.1.1): a tensor statement whose target array
//! is also read with a different slice (`A[i, 1:N] = A[i, :N-1] + ...`) would read
//! elements it already overwrote once it runs as a loop. The statement is split in
//! two: the value goes to a temporary array of the target's shape (allocated once, at
//! the start of the function), then the temporary is copied to the target.
//!
//! On the CPU (`cpu=1`) a statement inside a parallel loop's body (a worker) gets a
//! temporary of the statement's own shape instead (`A[i, 1:N]`: one row), allocated
//! before the statement and freed after it: each thread's temporary stays in its
//! cache, where a whole-array temporary would be a second array to fault in and
//! stream through memory. And on the CPU a view that indexes an axis with another
//! constant than the target (`a[1, :N] += a[0, :N] * f`: another row) is disjoint from
//! the target and needs no temporary.

use crate::tensor::*;
use crate::{Pass, PassInfo, PassOpt};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::types::MemRefType;
use std::collections::HashMap;

/// The pass.
pub struct TensorTemporaries {
    /// CPU: statements in workers get temporaries of their own shape (module docs).
    pub cpu: bool,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-tensor-temporaries",
    description: "split tensor statements that read their target through another slice (temporary array, seed 001 §5.1.1); cpu=1: statement-sized temporaries in workers",
    options: &[PassOpt::CPU],
    file: file!(),
    make: |o| Ok(Box::new(TensorTemporaries { cpu: o.flag("cpu")? })),
};

impl Pass for TensorTemporaries {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let cpu = self.cpu;
        rewrite(m, |rw| rw.top.iter_mut().try_for_each(|f| temporaries(&mut rw.b, f, cpu)))
    }
}

/// Splits the statements of function `f` that need a temporary, and allocates the
/// temporaries.
fn temporaries(b: &mut Builder, f: &mut Op, cpu: bool) -> Result<(), IrError> {
    if f.name != "func.func" || f.regions.is_empty() {
        return Ok(());
    }
    // target array → its temporary
    let mut temps: HashMap<Value, Value> = HashMap::new();
    // On the CPU, integer constants tell disjoint rows apart (`a[1, :] += a[0, :]`).
    let mut consts: HashMap<Value, i64> = HashMap::new();
    if cpu {
        f.walk(&mut |o| {
            if let Some(appy_ir::ops::Constant {
                value: appy_ir::attrs::Scalar::Int(n),
                result,
            }) = appy_ir::ops::Constant::of(o, &b.m)
            {
                consts.insert(result, n);
            }
        });
    }
    for_blocks(b, f, false, &mut |b, ops, in_worker| {
        if cpu && in_worker {
            split_block_local(b, ops, &consts)
        } else {
            split_block(b, ops, &mut temps, &consts)
        }
    })?;
    if temps.is_empty() {
        return Ok(());
    }
    // Allocate each temporary right after its array is defined.
    let entry = &mut f.regions[0].blocks[0];
    let mut order: Vec<(Value, Value)> = temps.into_iter().collect();
    order.sort();
    for (arr, tmp) in order.into_iter().rev() {
        let pos = entry.ops.iter().position(|o| o.results.contains(&arr)).map(|p| p + 1).unwrap_or(0);
        b.begin();
        b.loc = entry.ops.get(pos.saturating_sub(1)).and_then(|o| o.loc.clone());
        let ty = b.m.ty(arr).to_string();
        let rank = MemRefType::parse(&ty).map_or(0, |t| t.dynamic_dims());
        let mut sizes = vec![];
        for k in 0..rank {
            let c = b.index(k as i64);
            sizes.push(b.op1("memref.dim", &[arr, c], "index", &[]));
        }
        let mut alloc = Op::new("memref.alloc")
            .with_operands(sizes)
            .with_results([tmp])
            .with_attr("operandSegmentSizes", format!("array<i32: {rank}, 0>"));
        alloc.loc = b.loc.clone();
        b.push(alloc);
        let ops = b.end();
        for (k, o) in ops.into_iter().enumerate() {
            entry.ops.insert(pos + k, o);
        }
    }
    Ok(())
}

/// Whether statement `a` reads its target through another slice. With `consts` (the
/// CPU), a view that indexes some axis with a constant other than the target's
/// constant index there (another row: `a[1, :N] += a[0, :N]`) is disjoint from it.
fn conflicts(defs: &HashMap<Value, Op>, a: &Assign, consts: &HashMap<Value, i64>) -> bool {
    dag(defs, a.value).into_iter().any(|v| {
        let d = &defs[&v];
        if d.name != "appy.view" || d.operands[0] != a.target {
            return false;
        }
        let dims = d.attr("dims").map(int_array).unwrap_or_default();
        let same = d.operands[1..] == a.idx[..] && dims == a.dims && steps_of(d, a.dims.len()) == a.steps;
        let disjoint = dims.len() == a.dims.len()
            && (0..dims.len()).any(|k| {
                dims[k] < 0
                    && a.dims[k] < 0
                    && matches!((consts.get(&d.operands[1 + k]), consts.get(&a.idx[k])), (Some(x), Some(y)) if x != y)
            });
        !same && !disjoint
    })
}

/// The CPU's split inside a worker: `tmp = alloc(extents); tmp[...] = value;
/// target[slices] = tmp[...]; dealloc tmp`, the temporary indexed by the statement's
/// dimensions (from 0, step 1).
fn split_block_local(b: &mut Builder, ops: Vec<Op>, consts: &HashMap<Value, i64>) -> Result<Vec<Op>, IrError> {
    map_assigns(ops, &mut |defs, op, a, out| {
        let kept: Vec<i64> = a.dims.iter().copied().filter(|d| *d >= 0).collect();
        if !conflicts(defs, &a, consts) || kept.is_empty() {
            out.push(op);
            return Ok(());
        }
        let elem = value_elem(b.m.ty(a.value));
        let rank = kept.len();
        b.loc = op.loc.clone();
        b.begin();
        let sizes: Vec<Value> = kept.iter().map(|d| b.to_index(a.exts[*d as usize])).collect();
        let zero = b.int(0, "i64");
        let tmp = b.m.value(format!("memref<{}{elem}>", "?x".repeat(rank)));
        b.push(
            Op::new("memref.alloc")
                .with_operands(sizes)
                .with_results([tmp])
                .with_attr("operandSegmentSizes", format!("array<i32: {rank}, 0>")),
        );
        out.extend(b.end());
        // tmp[...] = value
        let mut first = a.clone();
        first.target = tmp;
        first.atomic = None;
        first.idx = vec![zero; rank];
        first.dims = kept.clone();
        first.steps = vec![1; rank];
        out.push(first.build(&op).with_attr("appy.temporary", "unit"));
        // target[slices] = tmp[...]
        let view = b.m.value(format!("tensor<{}{elem}>", "?x".repeat(rank)));
        out.push(
            Op::new("appy.view")
                .with_operands(std::iter::once(tmp).chain(vec![zero; rank]))
                .with_results([view])
                .with_attr("dims", i64_array(&kept))
                .with_loc(op.loc.clone()),
        );
        let mut second = a.clone();
        second.value = view;
        out.push(second.build(&op));
        out.push(Op::new("memref.dealloc").with_operands([tmp]).with_loc(op.loc.clone()));
        Ok(())
    })
}

/// The element type of a statement's value (`i8` of `tensor<?xi8>`, or the scalar's
/// own type): a bool array and an int8 or uint8 array are both `memref<?xi8>`, and
/// only the value says whether the temporary holds booleans (`i1`) or bytes.
fn value_elem(ty: &str) -> String {
    match ty.strip_prefix("tensor<").and_then(|t| t.strip_suffix('>')) {
        Some(t) => t.rsplit('x').next().unwrap_or(t).to_string(),
        None => ty.to_string(),
    }
}

fn split_block(b: &mut Builder, ops: Vec<Op>, temps: &mut HashMap<Value, Value>, consts: &HashMap<Value, i64>) -> Result<Vec<Op>, IrError> {
    map_assigns(ops, &mut |defs, op, a, out| {
        let conflict = conflicts(defs, &a, consts);
        if !conflict || a.dims.is_empty() {
            out.push(op);
            return Ok(());
        }
        let ty = b.m.ty(a.target).to_string();
        let tmp = *temps.entry(a.target).or_insert_with(|| b.m.value(ty));
        // tmp[slices] = value
        let mut first = a.clone();
        first.target = tmp;
        first.atomic = None;
        out.push(first.build(&op).with_attr("appy.temporary", "unit"));
        // target[slices] = tmp[slices]
        let elem = value_elem(b.m.ty(a.value));
        let rank = a.kept().len();
        let view = b.m.value(format!("tensor<{}{elem}>", "?x".repeat(rank)));
        let mut tview = Op::new("appy.view")
            .with_operands(std::iter::once(tmp).chain(a.idx.iter().copied()))
            .with_results([view])
            .with_attr("dims", i64_array(&a.dims))
            .with_loc(op.loc.clone());
        if a.steps.iter().any(|s| *s != 1) {
            tview.set_attr("steps", i64_array(&a.steps));
        }
        out.push(tview);
        let mut second = a.clone();
        second.value = view;
        out.push(second.build(&op));
        Ok(())
    })
}
