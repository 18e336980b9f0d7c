//! `appy-gpu-sink-loads`: the first of the three steps from the `loops` level to the
//! `gpu` level (then `appy-gpu-outline`, `appy-gpu-map-threads`).
//!
//! A host function often reads an array element only to pass it to the next parallel
//! loop (`ey[0, :] = fict[t]` in a time loop). Once the loop is a kernel, that read
//! would make the host wait for the device at every step. This pass copies such loads
//! into the loop: each top-level parallel nest (`scf.parallel {appy.parallel}`) whose
//! body uses the value of a host `memref.load` of an array element gets a copy of the
//! load as the first op of its body, marked `appy.sunk`, and its uses inside the nest
//! read the copy. `appy-gpu-outline` makes the marked loads the kernel's first ops and
//! passes their memref and indices instead of the value. The host load stays (the
//! canonicalizer removes it once nothing uses it).
//!
//! A load is copied only if nothing between it and the nest may write memory (a store,
//! an atomic, a call, another kernel, an `appy` library call), not into the iterations
//! of a loop whose body writes memory (a later iteration runs after those writes), and
//! not into a nest that may write the loaded array (`a[:N] = a[:N] + a[0]`: a worker
//! could read `a[0]` after another one wrote it). Values the nest's own bounds or
//! reduction inits use stay on the host: the host needs them for the grid anyway.

use crate::analyses::nest::nest_depth;
use crate::util::{is_lanes, is_parallel, is_simd};
use crate::{Pass, PassInfo};
use appy_ir::diag::IrError;
use appy_ir::effects::{may_write, may_write_to};
use appy_ir::ir::{Module, Op, Value};
use appy_ir::ops::MemrefLoad;
use std::collections::{HashMap, HashSet};

/// The pass.
pub struct SinkLoads;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-gpu-sink-loads",
    description: "loops → loops: copy host loads of array elements that a parallel nest uses into the nest (marked appy.sunk), so its kernel reads them",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(SinkLoads)),
};

/// The attribute marking a load copied into a parallel nest.
pub const SUNK: &str = "appy.sunk";

impl Pass for SinkLoads {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let mut body = std::mem::take(m.body_mut());
        for f in &mut body {
            if f.name != "func.func" || f.regions.is_empty() || f.regions[0].blocks.is_empty() {
                continue;
            }
            let mut st = State {
                m,
                loads: HashMap::new(),
                host_allocas: HashSet::new(),
            };
            st.host(&mut f.regions[0].blocks[0].ops);
        }
        *m.body_mut() = body;
        Ok(())
    }
}

struct State<'a> {
    m: &'a mut Module,
    /// Host loads of array elements with no write to memory since.
    loads: HashMap<Value, Op>,
    /// Host-side `memref.alloca`s seen so far (host memory: a kernel cannot read them).
    host_allocas: HashSet<Value>,
}

impl State<'_> {
    fn host(&mut self, ops: &mut [Op]) {
        for op in ops {
            if op.name == "memref.alloca" {
                self.host_allocas.extend(op.results.iter().copied());
            }
            let array_load = MemrefLoad::of(op).is_some_and(|l| !l.indices.is_empty() && !self.host_allocas.contains(&l.memref));
            // Loads before a write may not move past it, nor loads from before a loop
            // into its iterations (a later iteration runs after the loop's writes); the
            // ops of a conditional's regions are walked in order below.
            let writes = !array_load && may_write(op);
            if writes && !is_parallel(op) && op.name != "scf.if" {
                self.loads.clear();
            }
            if array_load {
                self.loads.insert(op.results[0], op.clone());
            }
            if is_parallel(op) {
                self.sink(op);
                self.loads.clear();
            } else if is_simd(op) || is_lanes(op) {
                // A vector loop outside a parallel loop: appy-gpu-outline reports it.
            } else {
                let before = self.loads.clone();
                for r in &mut op.regions {
                    for blk in &mut r.blocks {
                        // Each region starts from what held before the op.
                        self.loads = before.clone();
                        self.host(&mut blk.ops);
                    }
                }
                if writes {
                    self.loads.clear();
                } else {
                    self.loads = before;
                }
            }
        }
    }

    /// Copies the loads whose values the nest `root` uses into its body.
    fn sink(&mut self, root: &mut Op) {
        // The bounds and inits of every level of the nest are read on the host.
        let mut host_uses: HashSet<Value> = HashSet::new();
        let mut level = &*root;
        for d in 0..nest_depth(root) {
            host_uses.extend(level.operands.iter().copied());
            if d + 1 < nest_depth(root) {
                level = level.body(0).ops.iter().find(|o| o.name == "scf.parallel").expect("nest");
            }
        }
        let mut map = HashMap::new();
        let mut sunk = vec![];
        for v in root.free_values() {
            let Some(l) = self.loads.get(&v) else { continue };
            if host_uses.contains(&v) || may_write_to(root, l.operands[0]) {
                continue;
            }
            let mut copy = l.clone();
            let r = self.m.value(self.m.ty(v).to_string());
            copy.results = vec![r];
            copy.set_attr(SUNK, "unit");
            map.insert(v, r);
            sunk.push(copy);
        }
        if sunk.is_empty() {
            return;
        }
        let body = &mut root.body_mut(0).ops;
        for o in body.iter_mut() {
            o.remap_uses(&map);
        }
        body.splice(0..0, sunk);
    }
}
