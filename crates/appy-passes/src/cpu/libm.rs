//! `appy-cpu-libm`: on the CPU, `math.log1p` and `math.expm1` become calls to the C
//! library's `log1p`/`expm1` (`log1pf`/`expm1f` for float32).
//!
//! MLIR's `convert-math-to-llvm` lowers them as `log(1 + x)` and `exp(x) - 1`, which
//! lose every digit of a small `x` (14 ulp at x ≈ 0.06 was measured); the C library
//! computes them to within an ulp, like NumPy. Other math ops become LLVM intrinsics
//! that LLVM lowers to the C library's functions. Runs on the CPU pipeline only: on the
//! GPU the ops become libdevice's accurate functions. A float64 `math.expm1` whose
//! argument varies in its loop is gone by then (`appy-cpu-exp`, which runs first,
//! computes it inline); a uniform one is a C call here.

use crate::{Pass, PassInfo};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Region};

/// The pass.
pub struct CpuLibm;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-cpu-libm",
    description: "CPU only: math.log1p/expm1 → the C library's log1p/expm1 (MLIR's lowering loses precision)",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(CpuLibm)),
};

/// The ops rewritten, and the C names for float64 and float32.
const CALLS: [(&str, &str, &str); 2] = [("math.log1p", "log1p", "log1pf"), ("math.expm1", "expm1", "expm1f")];

impl Pass for CpuLibm {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let mut needed: Vec<(&'static str, String)> = vec![];
        let types = m.types.clone();
        m.op.walk_mut(&mut |op| {
            if let Some((_, f64n, f32n)) = CALLS.iter().find(|(n, _, _)| op.name == *n) {
                let ty = op.results.first().map(|r| types[r.0 as usize].clone()).unwrap_or_default();
                let callee = match ty.as_str() {
                    "f64" => *f64n,
                    "f32" => *f32n,
                    _ => return,
                };
                op.name = "func.call".into();
                op.attrs.retain(|(k, _)| k != "fastmath");
                op.set_attr("callee", format!("@{callee}"));
                if !needed.iter().any(|(c, _)| *c == callee) {
                    needed.push((callee, ty));
                }
            }
        });
        for (callee, ty) in needed {
            let decl = Op::new("func.func")
                .with_attr("sym_name", format!("\"{callee}\""))
                .with_attr("function_type", format!("({ty}) -> {ty}"))
                .with_attr("sym_visibility", "\"private\"")
                // No memory effects (as `convert-math-to-libm` declares its functions):
                // LLVM may hoist, and vectorise with `appy-cpu-vector-math`'s versions.
                .with_attr("llvm.readnone", "unit")
                .with_region(Region { blocks: vec![] });
            m.body_mut().push(decl);
        }
        Ok(())
    }
}
