//! `appy-cpu-wide-math`: float32 math functions computed in float64.
//!
//! A float32 `math` op with a float64 vector version in glibc's `libmvec`
//! ([`crate::cpu::vector_math::VECTOR_MATH`]) becomes `truncf(_appy_wide_<f>(extf(x)))`:
//! the float64 function rounded to float32 is the correctly rounded float32 result
//! (measured: see `appy-cpu-vector-math`), better than the C library's float32
//! functions, and `appy-cpu-vector-math` can give LLVM's vectoriser the float64 vector
//! version for it (`libmvec`'s float32 versions are up to 4 ulp off). A float64 op
//! whose `libmvec` version is accurate ([`crate::cpu::vector_math::ACCURATE_F64`]:
//! `math.powf`) becomes a call of the C function (`pow`) for the same reason (MLIR
//! would make it an LLVM intrinsic, which the vectoriser does not map). CPU only.

use crate::cpu::vector_math::{ACCURATE_F64, VECTOR_MATH, WIDE};
use crate::{Pass, PassInfo};
use appy_ir::diag::IrError;
use appy_ir::ir::{Block, Module, Op, Region};

/// The pass.
pub struct CpuWideMath;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-cpu-wide-math",
    description: "CPU: float32 math functions computed by float64 functions and rounded (correctly rounded results, vectorisable)",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(CpuWideMath)),
};

impl Pass for CpuWideMath {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let mut needed: Vec<(String, usize)> = vec![];
        let mut body = std::mem::take(m.body_mut());
        for f in body.iter_mut() {
            for r in &mut f.regions {
                for b in &mut r.blocks {
                    widen_block(m, b, &mut needed);
                }
            }
        }
        for (name, arity) in needed {
            body.push(
                Op::new("func.func")
                    .with_attr("sym_name", format!("\"{name}\""))
                    .with_attr("function_type", format!("({}) -> f64", vec!["f64"; arity].join(", ")))
                    .with_attr("sym_visibility", "\"private\"")
                    .with_attr("llvm.readnone", "unit")
                    .with_region(Region { blocks: vec![] }),
            );
        }
        *m.body_mut() = body;
        Ok(())
    }
}

fn widen_block(m: &mut Module, b: &mut Block, needed: &mut Vec<(String, usize)>) {
    let mut out = Vec::with_capacity(b.ops.len());
    for mut op in std::mem::take(&mut b.ops) {
        for r in &mut op.regions {
            for blk in &mut r.blocks {
                widen_block(m, blk, needed);
            }
        }
        let entry = VECTOR_MATH
            .iter()
            .find(|(_, arity, math)| !math.is_empty() && op.name == *math && op.operands.len() == *arity);
        let Some(&(name, arity, _)) = entry else {
            out.push(op);
            continue;
        };
        let all = |t: &str| op.results.len() == 1 && op.results.iter().chain(&op.operands).all(|v| m.ty(*v) == t);
        if all("f64") && ACCURATE_F64.contains(&name) {
            // The C function, as a call.
            op.name = "func.call".into();
            op.attrs.retain(|(k, _)| k != "fastmath");
            op.set_attr("callee", format!("@{name}"));
            if !needed.iter().any(|(n, _)| n == name) {
                needed.push((name.to_string(), arity));
            }
            out.push(op);
            continue;
        }
        if !all("f32") {
            out.push(op);
            continue;
        }
        let mut wide = vec![];
        for v in &op.operands {
            let w = m.value("f64");
            out.push(Op::new("arith.extf").with_operands([*v]).with_results([w]).with_loc(op.loc.clone()));
            wide.push(w);
        }
        let r = m.value("f64");
        out.push(
            Op::new("func.call")
                .with_operands(wide)
                .with_results([r])
                .with_attr("callee", format!("@{WIDE}{name}"))
                .with_loc(op.loc.clone()),
        );
        out.push(
            Op::new("arith.truncf")
                .with_operands([r])
                .with_results(op.results.clone())
                .with_loc(op.loc.clone()),
        );
        let wide_name = format!("{WIDE}{name}");
        if !needed.iter().any(|(n, _)| *n == wide_name) {
            needed.push((wide_name, arity));
        }
    }
    b.ops = out;
}
