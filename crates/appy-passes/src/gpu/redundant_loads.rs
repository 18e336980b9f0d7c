//! `appy-gpu-redundant-loads`: seed 002's partial redundant-load elimination (jit4GPU,
//! §5), after unrolling: in each block of a kernel, a load of the same array at the
//! same subscripts (the same SSA values) as an earlier load of that block, with no
//! write to memory other than the thread's private slots between them, and no barrier,
//! is replaced by the earlier load's value. After `appy-gpu-unroll-and-jam` a matrix
//! product's copies load `A[i, k]` once each; one load is left.
//!
//! Subscripts are compared by value: equal pure computations of the same values (the
//! copies of an index each statement computes) count as one value.
//!
//! Blocks are treated one at a time (a load inside a loop is not replaced by one
//! before it), and any op that writes memory the analysis cannot place ends what is
//! known. A block reduction (`gpu.all_reduce`) ends it too, unless no write to memory
//! other than private slots can precede it in the kernel: then no thread of the block
//! has written anything another could now see (softmax's row, loaded for its maximum,
//! is the row its sum and output read: `appy-gpu-one-strip`). Barriers and shuffles,
//! whose effects the analysis does not know, always end it.

use crate::analyses::barriers::{accesses_global, kernels, private_slots, synchronises};
use crate::{Pass, PassInfo};
use appy_ir::diag::IrError;
use appy_ir::effects::{is_pure, is_view};
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
        // The result types of the kernels' ops (equal computations must have equal types:
        // a truncation to i16 is not one to i32).
        let mut types: HashMap<Value, String> = HashMap::new();
        for g in m.body().iter().filter(|o| o.name == "gpu.module") {
            g.walk(&mut |o| {
                for r in &o.results {
                    types.insert(*r, m.ty(*r).to_string());
                }
            });
        }
        for g in m.body_mut().iter_mut().filter(|o| o.name == "gpu.module") {
            for k in kernels(g) {
                // The thread's private slots and every view of them.
                let mut private = private_slots(&k.regions[0].blocks[0].ops);
                k.walk(&mut |o| {
                    if is_view(o) && private.contains(&o.operands[0]) {
                        private.extend(o.results.iter().copied());
                    }
                });
                let vn = value_numbers(k, &types);
                let mut cx = Cx {
                    private: &private,
                    vn: &vn,
                    map: HashMap::new(),
                    written: false,
                };
                for r in &mut k.regions {
                    for blk in &mut r.blocks {
                        cx.block(&mut blk.ops);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Equal pure computations without regions (the same op on the same operands, up
/// to this numbering, with the same attributes and result type) take the first one's
/// result: its number.
fn value_numbers(k: &Op, types: &HashMap<Value, String>) -> HashMap<Value, Value> {
    let mut vn: HashMap<Value, Value> = HashMap::new();
    let mut seen: HashMap<String, Value> = HashMap::new();
    k.walk(&mut |o| {
        if !o.regions.is_empty() || o.results.len() != 1 || !is_pure(o) {
            return;
        }
        let operands: Vec<Value> = o.operands.iter().map(|v| *vn.get(v).unwrap_or(v)).collect();
        let mut attrs: Vec<_> = o.attrs.iter().collect();
        attrs.sort();
        let r = o.results[0];
        let key = format!("{}{:?}{:?}{:?}", o.name, operands, attrs, types.get(&r));
        let n = *seen.entry(key).or_insert(r);
        vn.insert(r, n);
    });
    vn
}

struct Cx<'a> {
    private: &'a HashSet<Value>,
    vn: &'a HashMap<Value, Value>,
    /// A removed load's result to the value that replaces it.
    map: HashMap<Value, Value>,
    /// Whether a write to memory other than private slots may precede the current op.
    written: bool,
}

impl Cx<'_> {
    /// Removes the redundant loads of one block (and, separately, of each block inside
    /// it).
    fn block(&mut self, ops: &mut Vec<Op>) {
        let mut known: HashMap<Vec<Value>, Value> = HashMap::new();
        let old = std::mem::take(ops);
        for mut o in old {
            for v in &mut o.operands {
                if let Some(n) = self.map.get(v) {
                    *v = *n;
                }
            }
            let writes = accesses_global(&o, self.private, true);
            // A loop that writes: its later iterations follow the write.
            if writes && matches!(o.name.as_str(), "scf.for" | "scf.while" | "scf.parallel") {
                self.written = true;
            }
            for r in &mut o.regions {
                for blk in &mut r.blocks {
                    self.block(&mut blk.ops);
                }
            }
            if o.name == "memref.load" && !self.private.contains(&o.operands[0]) && !o.has_attr("nontemporal") {
                let key: Vec<Value> = o.operands.iter().map(|v| *self.vn.get(v).unwrap_or(v)).collect();
                if let Some(v) = known.get(&key) {
                    self.map.insert(o.results[0], *v);
                    continue;
                }
                known.insert(key, o.results[0]);
            } else if writes {
                known.clear();
                self.written = true;
            } else if synchronises(&o) && self.written {
                known.clear();
            }
            ops.push(o);
        }
    }
}
