//! `appy-cpu-kernels`: the GPU's kernels as CPU functions that run a range of their
//! groups (the kernel level's `g.0`), with the launch's own parameters.
//!
//! Input: the module right after `appy-gpu-outline` (before `appy-gpu-map-threads`),
//! whose `gpu.func`s are still worker-level code: one group (thread block) runs one
//! worker, its lanes loops are `scf.parallel {appy.lanes}` loops, its scratchpads
//! (`appy.buffer`) are workgroup attributions. Output: a module holding, for each
//! kernel `K(p0, ..., block_offset)`, the function
//!
//! ```text
//! func.func @K(%p0, ..., %block_offset: index, %groups: index) {
//!   scf.parallel (%g) = (0) to (%groups) step (1) {   // appy.parallel, tags g.0
//!     ... the worker, with gpu.block_id x = %g (the kernel adds the block offset) ...
//!   }
//! }
//! ```
//!
//! which `appy-cpu-openmp` and the CPU's lowering take from there: the groups are OpenMP
//! workers, the lanes loops vectorisable sequential loops, a scratchpad a private array
//! of the group. A launch of `K` on a grid of `n` blocks with parameter cells `c` is
//! the call `K(c..., n)`; groups `[lo, hi)` of it are `K(c with block_offset + lo...,
//! hi - lo)`. The host function and the `gpu.module` are dropped.
//!
//! The lanes of a group run one after another, each lanes loop to its end before the
//! next statement: the barriers the GPU places between them hold trivially.

use crate::{Pass, PassInfo};
use appy_ir::attrs::parse_str;
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::schedule::{Mark, Tag};
use std::collections::HashMap;

/// The pass.
pub struct CpuKernels;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-cpu-kernels",
    description: "gpu (before thread mapping) → cpu: each kernel a CPU function over a range of its groups, with the launch's parameters and the number of groups",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(CpuKernels)),
};

/// The iname of a CPU kernel's loop over its groups.
pub const GROUP_INAME: &str = "_appy_group";

impl Pass for CpuKernels {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let top = std::mem::take(m.body_mut());
        let mut b = Builder::over(std::mem::take(m));
        let mut funcs = vec![];
        for op in top {
            if op.name != "gpu.module" {
                continue;
            }
            for k in op.regions.into_iter().flat_map(|r| r.blocks).flat_map(|b| b.ops) {
                if k.name == "gpu.func" {
                    funcs.push(cpu_kernel(&mut b, k)?);
                }
            }
        }
        *m = b.m;
        m.op.remove_attr("gpu.container_module");
        *m.body_mut() = funcs;
        Ok(())
    }
}

/// The CPU function of one kernel.
fn cpu_kernel(b: &mut Builder, k: Op) -> Result<Op, IrError> {
    let name = k.attr("sym_name").map(parse_str).unwrap_or("kernel").to_string();
    let shared = crate::gpu::outline::workgroup_attributions(&k);
    let loc = k.loc.clone();
    let Some(block) = k.regions.into_iter().next().and_then(|r| r.blocks.into_iter().next()) else {
        return Err(IrError::new(format!("kernel {name} has no body")));
    };
    let nargs = block.args.len() - shared.min(block.args.len());
    let mut args = block.args[..nargs].to_vec();
    let groups = b.m.value("index");
    args.push(groups);
    b.loc = loc.clone();
    b.begin();
    let c0 = b.index(0);
    let c1 = b.index(1);
    let mut head = b.end();
    let g = b.m.value("index");
    let mut map: HashMap<Value, Value> = HashMap::new();
    let mut body = vec![];
    // The group's scratchpads: private arrays of the same shape in host memory.
    for w in &block.args[nargs..] {
        let ty = b.m.ty(*w).to_string();
        let host_ty = match ty.find(", #gpu.address_space<workgroup>") {
            Some(i) => format!("{}>", &ty[..i]),
            None => ty.clone(),
        };
        let v = b.m.value(host_ty);
        body.push(
            Op::new("memref.alloca")
                .with_results([v])
                .with_attr("operandSegmentSizes", "array<i32: 0, 0>")
                .with_loc(loc.clone()),
        );
        map.insert(*w, v);
    }
    let mut thread_ids = vec![];
    for op in block.ops {
        match op.name.as_str() {
            "gpu.block_id" => {
                if op.attr("dimension") != Some("#gpu<dim x>") {
                    return Err(IrError::at(&op, "a CPU kernel has one grid axis (x)"));
                }
                map.insert(op.results[0], g);
            }
            "gpu.thread_id" => thread_ids.extend(op.results.iter().copied()),
            "gpu.return" => {}
            _ => body.push(op),
        }
    }
    for o in &mut body {
        o.remap_uses(&map);
    }
    let uses_thread = body
        .iter()
        .any(|o| o.walk_any(&|x| x.operands.iter().any(|v| thread_ids.contains(v))));
    if uses_thread {
        return Err(IrError::new(format!(
            "kernel {name} reads gpu.thread_id: CPU kernels are formed before appy-gpu-map-threads"
        )));
    }
    body.push(Op::new("scf.reduce"));
    let mut par = Op::new("scf.parallel")
        .with_operands([c0, groups, c1])
        .with_attr("operandSegmentSizes", "array<i32: 1, 1, 1, 0>")
        .with_region(Builder::region(vec![g], body))
        .with_mark(Mark::Parallel)
        .with_tags(&[Tag::Group(0)])
        .with_loc(loc.clone());
    par.set_inames(&[GROUP_INAME]);
    head.push(par);
    head.push(Op::new("func.return").with_loc(loc.clone()));
    let ftype = format!(
        "({}) -> ()",
        args.iter().map(|v| b.m.ty(*v).to_string()).collect::<Vec<_>>().join(", ")
    );
    Ok(Op::new("func.func")
        .with_attr("function_type", ftype)
        .with_attr("sym_name", appy_ir::attrs::str_attr(&name))
        .with_region(Builder::region(args, head))
        .with_loc(loc))
}
