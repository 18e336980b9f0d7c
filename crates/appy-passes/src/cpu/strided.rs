//! `appy-cpu-strided`: array parameters that take any strided layout.

use crate::{OptKind, Pass, PassInfo, PassOpt};
use appy_ir::diag::IrError;
use appy_ir::ir::Module;

/// `appy-cpu-strided`: gives the marked array parameters of every function a fully
/// dynamic strided layout (`memref<?x?xf32, strided<[?, ?], offset: ?>>`), so a caller
/// can pass any view (row slices, steps, transposes, negative strides) by its address
/// and strides instead of a gathered copy. Runs last before the LLVM lowering (appy's
/// passes build accesses for identity layouts). A function that needs an identity
/// layout for such a parameter (returns it, casts it) fails to verify; the caller then
/// gathers the view instead.
pub struct StridedArgs {
    /// Per parameter: whether it is strided.
    pub args: Vec<bool>,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-cpu-strided",
    description: "CPU: the array parameters marked 1 in `args` take any strided layout (memref<..., strided<[?, ...], offset: ?>>)",
    options: &[PassOpt {
        name: "args",
        kind: OptKind::Flags,
        default: "",
        help: "the array parameters that take any strided layout",
    }],
    file: file!(),
    make: |o| Ok(Box::new(StridedArgs { args: o.flags("args")? })),
};

impl Pass for StridedArgs {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let mut changes = vec![];
        for f in m.body() {
            if f.name != "func.func" || f.regions.is_empty() || f.regions[0].blocks.is_empty() {
                continue;
            }
            for (k, a) in f.body(0).args.iter().enumerate() {
                if !self.args.get(k).copied().unwrap_or(false) {
                    continue;
                }
                let Some((_, rank)) = appy_ir::types::parse_memref(m.ty(*a)) else {
                    return Err(IrError::located(f.loc.as_deref(), format!("parameter {k} is not an array")));
                };
                let dims = "?x".repeat(rank);
                let strides = vec!["?"; rank].join(", ");
                let elem = appy_ir::build::memref_elem(m.ty(*a));
                changes.push((*a, format!("memref<{dims}{elem}, strided<[{strides}], offset: ?>>")));
            }
        }
        for (v, t) in changes {
            m.types[v.0 as usize] = t;
        }
        let types = m.types.clone();
        for f in m.body_mut() {
            if f.name != "func.func" || f.regions.is_empty() || f.regions[0].blocks.is_empty() {
                continue;
            }
            let Some(fty) = f.attr("function_type") else { continue };
            // `(args) -> results`: rebuild the argument list from the block's types.
            let mut depth = 0;
            let mut close = None;
            for (i, c) in fty.char_indices() {
                match c {
                    '(' | '<' | '[' => depth += 1,
                    ')' | '>' | ']' => {
                        depth -= 1;
                        if depth == 0 && c == ')' {
                            close = Some(i);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let Some(close) = close else { continue };
            let rest = fty[close + 1..].to_string();
            let args: Vec<&str> = f.body(0).args.iter().map(|a| types[a.0 as usize].as_str()).collect();
            let new = format!("({}){rest}", args.join(", "));
            f.set_attr("function_type", new);
        }
        Ok(())
    }
}
