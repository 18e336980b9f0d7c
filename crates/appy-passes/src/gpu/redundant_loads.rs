//! `appy-gpu-redundant-loads`: seed 002's partial redundant-load elimination (jit4GPU,
//! §5), after unrolling: in each block of a kernel, a load of the same array at the
//! same subscripts (the same SSA values) as an earlier load of that block, with no
//! write to memory other than the thread's private slots between them, and no barrier,
//! is replaced by the earlier load's value. After `appy-gpu-unroll-and-jam` a matrix
//! product's copies load `A[i, k]` once each; one load is left.
//!
//! Blocks are treated one at a time (a load inside a loop is not replaced by one
//! before it), and any op that writes memory the analysis cannot place, or
//! synchronises threads (barriers, block reductions), ends what is known.

use crate::analyses::barriers::{accesses_global, kernels, private_slots, synchronises};
use crate::{Pass, PassInfo};
use appy_ir::diag::IrError;
use appy_ir::effects::is_view;
use appy_ir::ir::{Module, Op, Value};
use std::collections::{HashMap, HashSet};

/// The pass.
pub struct RedundantLoads;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-gpu-redundant-loads",
    description: "gpu → gpu: a load of what the same block loaded before, with no write between, reuses that value (seed 002)",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(RedundantLoads)),
};

impl Pass for RedundantLoads {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        for g in m.body_mut().iter_mut().filter(|o| o.name == "gpu.module") {
            for k in kernels(g) {
                // The thread's private slots and every view of them.
                let mut private = private_slots(&k.regions[0].blocks[0].ops);
                k.walk(&mut |o| {
                    if is_view(o) && private.contains(&o.operands[0]) {
                        private.extend(o.results.iter().copied());
                    }
                });
                let mut map = HashMap::new();
                for r in &mut k.regions {
                    for blk in &mut r.blocks {
                        block(&mut blk.ops, &private, &mut map);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Removes the redundant loads of one block (and, separately, of each block inside
/// it); `map` takes a removed load's result to the value that replaces it.
fn block(ops: &mut Vec<Op>, private: &HashSet<Value>, map: &mut HashMap<Value, Value>) {
    let mut known: HashMap<Vec<Value>, Value> = HashMap::new();
    let old = std::mem::take(ops);
    for mut o in old {
        for v in &mut o.operands {
            if let Some(n) = map.get(v) {
                *v = *n;
            }
        }
        for r in &mut o.regions {
            for blk in &mut r.blocks {
                block(&mut blk.ops, private, map);
            }
        }
        if o.name == "memref.load" && !private.contains(&o.operands[0]) && !o.has_attr("nontemporal") {
            if let Some(v) = known.get(&o.operands) {
                map.insert(o.results[0], *v);
                continue;
            }
            known.insert(o.operands.clone(), o.results[0]);
        } else if synchronises(&o) || accesses_global(&o, private, true) {
            known.clear();
        }
        ops.push(o);
    }
}
