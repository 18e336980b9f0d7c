//! `appy-cpu-zeros`: on the CPU, `np.zeros` arrays come zeroed from `calloc` instead of
//! being filled.
//!
//! The frontend allocates `np.zeros(shape)` as `memref.alloc` followed by a parallel fill
//! nest marked `appy.zero_fill`. Filling writes (and first faults in) every page of the
//! array; `calloc` of a large block maps fresh zero pages that the kernel only
//! materialises when they are touched, as NumPy's `np.zeros` does, so an array that is
//! mostly never written costs nothing. This pass replaces each such allocation by a
//! call of `calloc` (64 bytes more, the data 64-byte aligned as other arrays) and the
//! memref descriptor built from it (`builtin.unrealized_conversion_cast` of an LLVM
//! struct, which the memref lowering takes as the array), and removes the fill nest.
//! A block of at least [`crate::cpu::alloc::HUGE`] bytes is advised to the kernel as
//! transparent huge pages, as NumPy does and as `appy-cpu-alloc` does for other
//! arrays (reads of untouched parts then map the huge zero page). The array is freed
//! like every other with `free` (the allocated pointer). Runs first on the CPU
//! pipeline, at the `appy` level.

use crate::cpu::alloc::{call, func_attrs};
use crate::loops::privatize::NAME as PRIVATIZED;
use crate::{Pass, PassInfo};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Op, Region, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::Mark;
use appy_ir::types::MemRefType;

/// The pass.
pub struct CpuZeros;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-cpu-zeros",
    description: "CPU only: np.zeros arrays allocated zeroed by calloc (untouched pages are never materialised) instead of filled",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(CpuZeros)),
};

impl Pass for CpuZeros {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut appy_ir::ir::Module) -> Result<(), IrError> {
        rewrite(m, |rw| {
            let mut any = false;
            for f in &mut rw.top {
                if f.name != "func.func" || f.regions.is_empty() || f.regions[0].blocks.is_empty() {
                    continue;
                }
                let ops = std::mem::take(&mut f.regions[0].blocks[0].ops);
                let (ops, n) = rewrite_block(&mut rw.b, ops);
                any |= n;
                f.regions[0].blocks[0].ops = ops;
            }
            for (name, ty) in [
                ("calloc", "!llvm.func<ptr (i64, i64)>"),
                ("madvise", "!llvm.func<i32 (ptr, i64, i32)>"),
            ] {
                let declared = rw.top.iter().any(|o| o.attr("sym_name") == Some(format!("\"{name}\"").as_str()));
                if any && !declared {
                    rw.top
                        .insert(0, func_attrs(Op::new("llvm.func"), name, ty, false).with_region(Region::default()));
                }
            }
        });
        Ok(())
    }
}

/// The memref a fill nest stores into.
fn filled(op: &Op) -> Option<Value> {
    let mut target = None;
    op.walk(&mut |o| {
        if o.name == "memref.store" && o.operands.len() >= 2 {
            target = Some(o.operands[1]);
        }
    });
    target
}

/// Rewrites the zero-filled allocations of a function's top-level block.
fn rewrite_block(b: &mut Builder, ops: Vec<Op>) -> (Vec<Op>, bool) {
    // Allocations with a zero fill nest (not those `appy-privatize` will make scalars).
    let mut zeroed = vec![];
    for o in &ops {
        if o.name == "scf.parallel"
            && o.has_mark(Mark::ZeroFill)
            && let Some(m) = filled(o)
            && ops
                .iter()
                .any(|a| a.name == "memref.alloc" && a.results.first() == Some(&m) && !a.has_attr(PRIVATIZED))
        {
            zeroed.push(m);
        }
    }
    if zeroed.is_empty() {
        return (ops, false);
    }
    let mut out = Vec::with_capacity(ops.len());
    for o in ops {
        if o.name == "scf.parallel" && o.has_mark(Mark::ZeroFill) && filled(&o).is_some_and(|m| zeroed.contains(&m)) {
            continue;
        }
        if o.name == "memref.alloc"
            && let Some(&m) = o.results.first()
            && zeroed.contains(&m)
        {
            b.loc = o.loc.clone();
            b.begin();
            calloc(b, &o, m);
            out.extend(b.end());
            continue;
        }
        out.push(o);
    }
    (out, true)
}

/// `m = calloc-backed descriptor` for the allocation `alloc` (its operands are the
/// dynamic sizes of an identity-layout memref).
fn calloc(b: &mut Builder, alloc: &Op, m: Value) {
    let ty = b.m.ty(m).to_string();
    let t = MemRefType::parse(&ty);
    // Booleans are stored as bytes (`DType::size`).
    let elem = t.as_ref().map_or(8, |t| t.elem.size()) as i64;
    let shape = t.map(|t| t.shape).unwrap_or_default();
    let rank = shape.len();
    // Sizes as i64: static ones as constants, dynamic ones from the operands in order.
    let mut dynamic = alloc.operands.iter();
    let mut sizes = vec![];
    for s in &shape {
        let v = match s {
            Some(n) => b.int(*n as i64, "i64"),
            None => {
                let d = *dynamic.next().expect("a size per dynamic dimension");
                b.op1("arith.index_cast", &[d], "i64", &[])
            }
        };
        sizes.push(v);
    }
    let mut bytes = b.int(elem, "i64");
    for s in &sizes {
        bytes = b.bin("arith.muli", bytes, *s);
    }
    let pad = b.int(63, "i64");
    let total = b.bin("arith.addi", bytes, pad);
    let one = b.int(1, "i64");
    let (op, p) = call(&mut b.m, "calloc", &[total, one], Some("!llvm.ptr"));
    let p = p.expect("calloc's result");
    b.push(op);
    // Large blocks on transparent huge pages: madvise from the page the block starts in.
    let pi = b.op1("llvm.ptrtoint", &[p], "i64", &[]);
    let huge = b.int(crate::cpu::alloc::HUGE, "i64");
    let big = b.cmpi(appy_ir::build::IPred::Sge, total, huge);
    b.begin();
    let page_mask = b.int(!4095, "i64");
    let start = b.bin("arith.andi", pi, page_mask);
    let head = b.bin("arith.subi", pi, start);
    let len = b.bin("arith.addi", total, head);
    let sp = b.op1("llvm.inttoptr", &[start], "!llvm.ptr", &[]);
    let adv = b.int(14, "i32"); // MADV_HUGEPAGE
    let (op, _) = call(&mut b.m, "madvise", &[sp, len, adv], Some("i32"));
    b.push(op);
    b.push(Builder::yield_op(&[]));
    let advise = b.end();
    b.if_op(big, advise, None);
    // The data 64-byte aligned.
    let up = b.bin("arith.addi", pi, pad);
    let mask = b.int(!63, "i64");
    let ai = b.bin("arith.andi", up, mask);
    let ap = b.op1("llvm.inttoptr", &[ai], "!llvm.ptr", &[]);
    // Row-major strides.
    let mut strides = vec![b.int(1, "i64"); rank];
    for k in (0..rank.saturating_sub(1)).rev() {
        strides[k] = b.bin("arith.muli", strides[k + 1], sizes[k + 1]);
    }
    let st = if rank == 0 {
        "!llvm.struct<(ptr, ptr, i64)>".to_string()
    } else {
        format!("!llvm.struct<(ptr, ptr, i64, array<{rank} x i64>, array<{rank} x i64>)>")
    };
    let mut d = b.op1("llvm.mlir.undef", &[], &st, &[]);
    let zero = b.int(0, "i64");
    let insert = |b: &mut Builder, d: Value, v: Value, pos: String| {
        b.op1("llvm.insertvalue", &[d, v], &st, &[("position", format!("array<i64: {pos}>"))])
    };
    d = insert(b, d, p, "0".into());
    d = insert(b, d, ap, "1".into());
    d = insert(b, d, zero, "2".into());
    for k in 0..rank {
        d = insert(b, d, sizes[k], format!("3, {k}"));
        d = insert(b, d, strides[k], format!("4, {k}"));
    }
    b.push(Op::new("builtin.unrealized_conversion_cast").with_operands([d]).with_results([m]));
}
