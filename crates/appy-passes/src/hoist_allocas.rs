//! `appy-hoist-allocas`: moves every `memref.alloca` of a scalar slot to the entry
//! block of its enclosing function (`func.func` or `gpu.func`) or OpenMP parallel
//! region (`omp.parallel`: each thread of the region gets its own slots).
//!
//! The frontend places a variable's slot at the start of the scope that owns it (the
//! body of a parallel or simd loop, for privatisation). Once loops have been mapped to
//! hardware (GPU threads) or run sequentially (CPU), a slot in a loop body would be
//! re-allocated on every iteration; in the entry block LLVM promotes it to a register.
//! Every use of a private slot writes it before reading it in the same iteration, so
//! sharing one slot across the sequential iterations of a thread is exact.

use crate::{Pass, PassInfo};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op};

/// The pass.
pub struct HoistAllocas;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-hoist-allocas",
    description: "move scalar slots (memref.alloca) to the entry block of their function",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(HoistAllocas)),
};

impl Pass for HoistAllocas {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        m.op.walk_mut(&mut |op| {
            if is_scope(op) && !op.regions.is_empty() && !op.regions[0].blocks.is_empty() {
                let mut found = vec![];
                let entry = &mut op.regions[0].blocks[0];
                for o in &mut entry.ops {
                    collect(o, &mut found);
                }
                let mut kept: Vec<Op> = vec![];
                for o in std::mem::take(&mut entry.ops) {
                    if is_slot(&o) {
                        found.push(o);
                    } else {
                        kept.push(o);
                    }
                }
                found.extend(kept);
                entry.ops = found;
            }
        });
        Ok(())
    }
}

fn is_scope(o: &Op) -> bool {
    matches!(o.name.as_str(), "func.func" | "gpu.func" | "omp.parallel")
}

fn is_slot(o: &Op) -> bool {
    o.name == "memref.alloca" && o.operands.is_empty()
}

fn collect(op: &mut Op, out: &mut Vec<Op>) {
    if is_scope(op) {
        return;
    }
    for r in &mut op.regions {
        for b in &mut r.blocks {
            let mut kept = vec![];
            for mut o in std::mem::take(&mut b.ops) {
                if is_slot(&o) {
                    out.push(o);
                } else {
                    collect(&mut o, out);
                    kept.push(o);
                }
            }
            b.ops = kept;
        }
    }
}
