//! `appy-cpu-print`: on the CPU, `appy.print` becomes a call of a function the runtime
//! passes in.
//!
//! A function that prints gets one more parameter, after the user's:
//! `%print: (memref<?xi8>, memref<?xi64>) -> ()`. Each `appy.print` becomes a constant
//! byte string holding its `pieces` attribute (a `memref.global`), a buffer of its
//! values (64 bits each), and `func.call_indirect %print(%pieces, %values)`; the
//! runtime's callback formats the line (`appy_ir::pyfmt`) and prints it. The module gets
//! the unit attribute `appy.print_callback`, which tells the runtime to pass the
//! callback. (A function pointer, not a symbol: compiled code then needs no symbol
//! resolution, in the execution engine or in a cached shared object.)

use crate::{Pass, PassInfo};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op};

/// The pass.
pub struct CpuPrint;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-cpu-print",
    description: "CPU only: appy.print → a call of the print callback the runtime passes as an extra parameter",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(CpuPrint)),
};

/// The type of the callback parameter.
pub const CALLBACK_TYPE: &str = "(memref<?xi8>, memref<?xi64>) -> ()";

impl Pass for CpuPrint {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let mut globals: Vec<Op> = vec![];
        let mut body = std::mem::take(m.body_mut());
        let mut any = false;
        for f in &mut body {
            if f.name != "func.func" || f.regions.is_empty() || f.regions[0].blocks.is_empty() {
                continue;
            }
            let mut prints = false;
            f.walk(&mut |o| prints |= o.name == "appy.print");
            if !prints {
                continue;
            }
            any = true;
            let cb = m.value(CALLBACK_TYPE);
            f.regions[0].blocks[0].args.push(cb);
            if let Some(t) = f.attr("function_type").map(str::to_string)
                && let Some((ins, outs)) = t.split_once(") ->")
            {
                let ins = ins.trim_start_matches('(');
                let sep = if ins.trim().is_empty() { "" } else { ", " };
                f.set_attr("function_type", format!("({ins}{sep}{CALLBACK_TYPE}) ->{outs}"));
            }
            for r in &mut f.regions {
                for b in &mut r.blocks {
                    rewrite(m, &mut b.ops, cb, &mut globals)?;
                }
            }
        }
        body.splice(0..0, globals);
        *m.body_mut() = body;
        if any {
            m.op.set_attr("appy.print_callback", "unit");
        }
        Ok(())
    }
}

fn rewrite(m: &mut Module, ops: &mut Vec<Op>, cb: appy_ir::ir::Value, globals: &mut Vec<Op>) -> Result<(), IrError> {
    let mut out = Vec::with_capacity(ops.len());
    for mut op in std::mem::take(ops) {
        for r in &mut op.regions {
            for b in &mut r.blocks {
                rewrite(m, &mut b.ops, cb, globals)?;
            }
        }
        if op.name != "appy.print" {
            out.push(op);
            continue;
        }
        let loc = op.loc.clone();
        let text = op.attr("pieces").unwrap_or("[]").to_string();
        let bytes = text.as_bytes();
        let n = bytes.len();
        let name = format!("_appy_print{}", globals.len());
        globals.push(
            Op::new("memref.global")
                .with_attr("sym_name", format!("\"{name}\""))
                .with_attr("sym_visibility", "\"private\"")
                .with_attr("type", format!("memref<{n}xi8>"))
                .with_attr(
                    "initial_value",
                    format!(
                        "dense<[{}]> : tensor<{n}xi8>",
                        bytes.iter().map(|b| (*b as i8).to_string()).collect::<Vec<_>>().join(", ")
                    ),
                )
                .with_attr("constant", "unit")
                .with_loc(loc.clone()),
        );
        let g = m.value(format!("memref<{n}xi8>"));
        out.push(
            Op::new("memref.get_global")
                .with_attr("name", format!("@{name}"))
                .with_results([g])
                .with_loc(loc.clone()),
        );
        let gc = m.value("memref<?xi8>");
        out.push(Op::new("memref.cast").with_operands([g]).with_results([gc]).with_loc(loc.clone()));
        let k = op.operands.len().max(1);
        let buf = m.value(format!("memref<{k}xi64>"));
        out.push(
            Op::new("memref.alloca")
                .with_attr("operandSegmentSizes", "array<i32: 0, 0>")
                .with_results([buf])
                .with_loc(loc.clone()),
        );
        for (i, v) in op.operands.iter().enumerate() {
            let c = m.value("index");
            out.push(
                Op::new("arith.constant")
                    .with_attr("value", format!("{i} : index"))
                    .with_results([c])
                    .with_loc(loc.clone()),
            );
            out.push(Op::new("memref.store").with_operands([*v, buf, c]).with_loc(loc.clone()));
        }
        let bc = m.value("memref<?xi64>");
        out.push(Op::new("memref.cast").with_operands([buf]).with_results([bc]).with_loc(loc.clone()));
        out.push(Op::new("func.call_indirect").with_operands([cb, gc, bc]).with_loc(loc));
    }
    *ops = out;
    Ok(())
}
