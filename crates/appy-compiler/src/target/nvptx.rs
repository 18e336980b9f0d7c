//! The NVIDIA target: NVVM → PTX in-process (no CUDA toolkit needed), libdevice
//! discovery and linking, and the kernel metadata a bundle carries.

use crate::Options;
use crate::pipelines::nvvm_pipeline;
use appy_ir::attrs::{Scalar, parse_constant};
use appy_ir::bundle::KernelInfo;
use appy_ir::diag::IrError;
use appy_ir::ir::Module;
use appy_ir::mlir::Ctx;
use melior::ir::operation::OperationLike;
use melior::ir::{OperationRef, attribute::AttributeLike};
use std::path::PathBuf;

/// The libdevice (`libdevice.10.bc`, needed for GPU math functions) of this machine,
/// found as [`super::libdevice`] describes; `None` when there is none.
pub fn find_libdevice() -> Option<PathBuf> {
    super::libdevice::find().ok().map(|f| f.path)
}

/// What identifies the libdevice a GPU compilation with `opts` links, for cache keys:
/// `libdevice=` and the hash of its content (`libdevice=none` without one), so a
/// different libdevice at the same path is a different key. Files are hashed once per
/// path, size and modification time in a process.
pub fn libdevice_id(opts: &Options) -> String {
    type Memo = std::collections::HashMap<(PathBuf, u64, Option<std::time::SystemTime>), u64>;
    static MEMO: std::sync::LazyLock<std::sync::Mutex<Memo>> = std::sync::LazyLock::new(Default::default);
    let Some(path) = opts.libdevice.clone().or_else(find_libdevice) else {
        return "libdevice=none".into();
    };
    let Ok(meta) = std::fs::metadata(&path) else {
        return "libdevice=unreadable".into();
    };
    let memo_key = (path.clone(), meta.len(), meta.modified().ok());
    if let Some(h) = MEMO.lock().unwrap_or_else(|e| e.into_inner()).get(&memo_key) {
        return format!("libdevice={h:016x}");
    }
    match std::fs::read(&path) {
        Ok(bytes) => {
            let h = appy_ir::fnv1a(&bytes);
            MEMO.lock().unwrap_or_else(|e| e.into_inner()).insert(memo_key, h);
            format!("libdevice={h:016x}")
        }
        Err(_) => "libdevice=unreadable".into(),
    }
}

/// Compiles the kernels of a `gpu`-level module to PTX.
pub fn to_ptx(ctx: &Ctx, gpu: &Module, opts: &Options) -> Result<(String, Vec<KernelInfo>), IrError> {
    let kernels = kernel_infos(gpu);
    if kernels.is_empty() {
        return Ok((String::new(), kernels));
    }
    let _span = tracing::debug_span!("to_ptx", kernels = kernels.len()).entered();
    // libdevice (math functions) is linked only into kernels that use math ops: loading
    // and optimising it costs milliseconds per compile. Should a kernel without math
    // ops still call into it, the PTX is made again with it.
    let libdevice = opts.libdevice.clone().or_else(find_libdevice);
    // `arith.remf` becomes libdevice's `fmod`.
    let mut ptx = if gpu.op.walk_any(&|o| o.name.starts_with("math.") || o.name == "arith.remf") {
        nvvm_to_ptx(ctx, gpu, libdevice.as_deref())?
    } else {
        nvvm_to_ptx(ctx, gpu, None)?
    };
    let calls_libdevice = |ptx: &str| ptx.lines().any(|l| l.starts_with(".extern .func") && l.contains("__nv_"));
    if calls_libdevice(&ptx) && libdevice.is_some() {
        ptx = nvvm_to_ptx(ctx, gpu, libdevice.as_deref())?;
    }
    if let Some(pos) = ptx.find(".extern .func") {
        let line = ptx[pos..].lines().next().unwrap_or("");
        if line.contains("__nv_") && libdevice.is_none() {
            return Err(missing_libdevice(gpu, line));
        }
        return Err(IrError::new(format!("generated PTX has an unresolved external function: `{line}`")));
    }
    Ok((ptx, kernels))
}

/// The program's error when a kernel calls a math function of libdevice (`extern`, the
/// PTX line declaring it) and there is no libdevice: at the first math op of the
/// kernels whose name the function's carries (else the first math op), saying what to
/// install. It is the machine's problem, not the compiler's: no internal-error prefix.
fn missing_libdevice(gpu: &Module, extern_line: &str) -> IrError {
    let func = extern_line
        .split("__nv_")
        .nth(1)
        .map(|r| r.split(|c: char| !c.is_alphanumeric()).next().unwrap_or(""))
        .unwrap_or("");
    let mut first: Option<&appy_ir::ir::Op> = None;
    let mut named: Option<&appy_ir::ir::Op> = None;
    gpu.op.walk(&mut |o| {
        let math = o.name.strip_prefix("math.").or((o.name == "arith.remf").then_some("fmod"));
        if let (Some(m), Some(_)) = (math, &o.loc) {
            first.get_or_insert(o);
            let m = m.trim_end_matches('f');
            if named.is_none() && !m.is_empty() && func.trim_end_matches('f') == m {
                named = Some(o);
            }
        }
    });
    let (why, help) = match super::libdevice::find() {
        Err(m) => m.explain(),
        Ok(_) => super::libdevice::Missing::NotFound(vec![]).explain(),
    };
    let mut e = IrError::located(
        named.or(first).and_then(|o| o.loc.as_deref()),
        format!("the GPU math function `{func}` needs NVIDIA's libdevice: {why}"),
    );
    e.notes.push((None, format!("help: {help}")));
    e.user = true;
    e
}

/// Runs the NVVM pipeline over a `gpu`-level module: the PTX of its kernels.
fn nvvm_to_ptx(ctx: &Ctx, gpu: &Module, libdevice: Option<&std::path::Path>) -> Result<String, IrError> {
    let mut m = ctx.load(gpu)?;
    ctx.run_pipeline(&mut m, &nvvm_pipeline(libdevice))?;
    let mut ptx = None;
    m.as_operation()
        .walk(melior::ir::operation::WalkOrder::PreOrder, |op: OperationRef<'_, '_>| {
            if op.name().as_string_ref().as_str() == Ok("gpu.binary") {
                if let Ok(objects) = op.attribute("objects") {
                    unsafe {
                        let first = mlir_sys::mlirArrayAttrGetElement(objects.to_raw(), 0);
                        let s = mlir_sys::mlirGPUObjectAttrGetObject(first);
                        let bytes = std::slice::from_raw_parts(s.data as *const u8, s.length);
                        ptx = Some(String::from_utf8_lossy(bytes).into_owned());
                    }
                }
                return melior::ir::operation::WalkResult::Interrupt;
            }
            melior::ir::operation::WalkResult::Advance
        });
    ptx.ok_or_else(|| IrError::new("gpu-module-to-binary produced no PTX"))
}

/// The module a bundle carries: the host function (interpreted by the runtime) and the
/// kernels' `gpu.module` (analysed by the runtime to move only the accessed data).
pub fn host_module(gpu: &Module) -> Module {
    gpu.clone()
}

/// Kernel metadata from a `gpu`-level module.
pub fn kernel_infos(m: &Module) -> Vec<KernelInfo> {
    let mut out = vec![];
    m.op.walk(&mut |o| {
        if o.name == "gpu.func" && o.has_attr("gpu.kernel") {
            let name = o.attr("sym_name").unwrap_or("").trim_matches('"').to_string();
            // The entry block's arguments are the parameters, then the workgroup
            // attributions (shared memory, not passed at launch).
            let shared = match o.attr("workgroup_attributions").and_then(|t| parse_constant(t, "i64")) {
                Some(Scalar::Int(n)) => n.max(0) as usize,
                _ => 0,
            };
            let args = &o.body(0).args;
            let params = args[..args.len().saturating_sub(shared)]
                .iter()
                .map(|a| m.ty(*a).to_string())
                .collect();
            out.push(KernelInfo { name, params });
        }
    });
    out
}
