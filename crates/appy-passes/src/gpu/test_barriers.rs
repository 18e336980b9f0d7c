//! `appy-test-barriers`: a test-only pass that shows barrier placement, the analysis
//! `appy-gpu-map-threads` uses ([`annotate_barriers`]), on its own (as Triton's membar
//! test pass does). Run after `appy-gpu-outline`, it marks every op of the kernels'
//! worker code that gets a `gpu.barrier` before and/or after it with
//! `appy.barriers = "before" | "after" | "both"`, and changes nothing else.
//!
//! ```text
//! appy-opt k.py --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-test-barriers'
//! ```

use crate::analyses::barriers::{annotate_barriers, kernels, private_slots};
use crate::{Pass, PassInfo};
use appy_ir::diag::IrError;
use appy_ir::ir::Module;

/// The pass.
pub struct TestBarriers;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-test-barriers",
    description: "test only, after appy-gpu-outline: mark the kernel ops that get a barrier before/after them (appy.barriers)",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(TestBarriers)),
};

impl Pass for TestBarriers {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        for k in m.body_mut().iter_mut().filter(|o| o.name == "gpu.module").flat_map(kernels) {
            let ops = &mut k.regions[0].blocks[0].ops;
            let private = private_slots(ops);
            annotate_barriers(ops, &private, true);
        }
        Ok(())
    }
}
