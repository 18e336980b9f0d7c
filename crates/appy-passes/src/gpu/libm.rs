//! `appy-gpu-libm`: math ops in kernels that libdevice cannot take as they are.
//!
//! - `math.trunc` has no libdevice lowering in MLIR's `convert-gpu-to-nvvm`: it becomes
//!   the LLVM intrinsic `llvm.intr.trunc` (PTX `cvt.rzi`), exact.
//! - `math.erfc` (float64, and float32 computed in float64): libdevice's `erfc` is
//!   documented at 4–5 ulp (3 ulp from glibc was measured on an H200), so it becomes
//!   appy's inline expansion in `arith`/`math` ops ([`crate::expand_erfc`]: within
//!   0.8 ulp of the exact value, 1.25 ulp below x = 0.46875, where it is `1 - erf(x)`
//!   with libdevice's `erf`).
//! - libdevice's float32 versions of some other functions are documented with a
//!   maximum error above 2 ulp (CUDA Math API: `tanf` 4, `sinhf` 3, `asinhf` 3,
//!   `acoshf` 4, `atanhf` 3, `atan2f` 3, `powf` 4), while appy promises NumPy accuracy
//!   (≤ 2 ulp). Those are computed in float64 and rounded once to float32, which is
//!   within 1 ulp. The other float32 functions stay float32.
//!
//! Runs on the GPU pipeline only, on the kernels (`gpu.func`) after outlining.

use crate::{Pass, PassInfo, expand_erfc};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};

/// The pass.
pub struct GpuLibm;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-gpu-libm",
    description: "GPU only: math.trunc → llvm.intr.trunc; math.erfc → appy's expansion; float32 functions whose libdevice error exceeds 2 ulp computed in float64",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(GpuLibm)),
};

/// Float32 math ops computed in float64 (libdevice's float32 bound is above 2 ulp);
/// float32 `math.erfc` too, by [`crate::expand_erfc`].
pub const PROMOTED: [&str; 7] = [
    "math.tan",
    "math.sinh",
    "math.asinh",
    "math.acosh",
    "math.atanh",
    "math.atan2",
    "math.powf",
];

impl Pass for GpuLibm {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let mut root = std::mem::take(&mut m.op);
        rewrite(&mut root, m, false);
        m.op = root;
        Ok(())
    }
}

/// Rewrites the blocks under `op`; `in_kernel` once inside a `gpu.func`.
fn rewrite(op: &mut Op, m: &mut Module, in_kernel: bool) {
    let in_kernel = in_kernel || op.name == "gpu.func";
    for r in &mut op.regions {
        for b in &mut r.blocks {
            let ops = std::mem::take(&mut b.ops);
            for mut o in ops {
                rewrite(&mut o, m, in_kernel);
                if !in_kernel {
                    b.ops.push(o);
                    continue;
                }
                if expand_erfc::expand_op(m, &o, &mut b.ops) {
                    continue;
                }
                if o.name == "math.trunc" {
                    o.name = "llvm.intr.trunc".into();
                    o.attrs.retain(|(k, _)| k != "fastmath");
                    b.ops.push(o);
                } else if PROMOTED.contains(&o.name.as_str()) && o.results.len() == 1 && m.ty(o.results[0]) == "f32" {
                    let wide: Vec<Value> = o
                        .operands
                        .iter()
                        .map(|&x| {
                            let w = m.value("f64");
                            b.ops
                                .push(Op::new("arith.extf").with_operands([x]).with_results([w]).with_loc(o.loc.clone()));
                            w
                        })
                        .collect();
                    let narrow = o.results[0];
                    let r = m.value("f64");
                    let loc = o.loc.clone();
                    o.operands = wide;
                    o.results = vec![r];
                    b.ops.push(o);
                    b.ops
                        .push(Op::new("arith.truncf").with_operands([r]).with_results([narrow]).with_loc(loc));
                } else {
                    b.ops.push(o);
                }
            }
        }
    }
}
