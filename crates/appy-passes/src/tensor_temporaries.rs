//! `appy-tensor-temporaries` (seed 001 §5.1.1): a tensor statement whose target array
//! is also read with a different slice (`A[i, 1:N] = A[i, :N-1] + ...`) would read
//! elements it already overwrote once it runs as a loop. The statement is split in
//! two: the value goes to a temporary array of the target's shape (allocated once, at
//! the start of the function), then the temporary is copied to the target.

use crate::tensor::*;
use crate::{Pass, PassInfo};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::types::MemRefType;
use std::collections::HashMap;

/// The pass.
pub struct TensorTemporaries;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-tensor-temporaries",
    description: "split tensor statements that read their target through another slice (temporary array, seed 001 §5.1.1)",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(TensorTemporaries)),
};

impl Pass for TensorTemporaries {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| rw.top.iter_mut().try_for_each(|f| temporaries(&mut rw.b, f)))
    }
}

/// Splits the statements of function `f` that need a temporary, and allocates the
/// temporaries.
fn temporaries(b: &mut Builder, f: &mut Op) -> Result<(), IrError> {
    if f.name != "func.func" || f.regions.is_empty() {
        return Ok(());
    }
    // target array → its temporary
    let mut temps: HashMap<Value, Value> = HashMap::new();
    for_blocks(b, f, false, &mut |b, ops, _| split_block(b, ops, &mut temps))?;
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

fn split_block(b: &mut Builder, ops: Vec<Op>, temps: &mut HashMap<Value, Value>) -> Result<Vec<Op>, IrError> {
    map_assigns(ops, &mut |defs, op, a, out| {
        let conflict = dag(defs, a.value).into_iter().any(|v| {
            let d = &defs[&v];
            d.name == "appy.view"
                && d.operands[0] == a.target
                && (d.operands[1..] != a.idx[..]
                    || d.attr("dims").map(int_array).unwrap_or_default() != a.dims
                    || steps_of(d, a.dims.len()) != a.steps)
        });
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
        let elem = appy_ir::types::parse_memref(b.m.ty(a.target))
            .map(|(d, _)| d.mlir())
            .unwrap_or("f64");
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
