//! Every pass pipeline of the compiler, as text (MLIR's pipeline syntax, with appy's
//! Rust passes by their registry names next to upstream MLIR passes). Nothing else in
//! the compiler spells a pipeline: the levels of [`crate::Level`] are reached with
//! [`to_level`], and the targets run [`CPU_PIPELINE`] and [`nvvm_pipeline`].

use crate::Level;

/// The tensor passes, in the order of seed 001 §5.1 (CSE first makes equal slices
/// equal values for the analyses).
pub const TENSOR_PIPELINE: &str = "cse,appy-tensor-temporaries,appy-tensor-fuse,cse,appy-tensor-sync,appy-tensor-to-loops";

/// The passes that take the `appy` level to the `loops` level.
pub fn appy_to_loops(mvl: i64) -> String {
    format!("{TENSOR_PIPELINE},loop-invariant-code-motion,appy-strip-mine{{mvl={mvl}}}")
}

/// The passes that take the `loops` level to the `gpu` level: host loads into the
/// kernels that use them, the kernels and their launches, the workers' code on threads.
pub fn loops_to_gpu(mvl: i64) -> String {
    format!("appy-gpu-sink-loads,appy-gpu-outline{{mvl={mvl}}},appy-gpu-map-threads{{mvl={mvl}}},appy-gpu-libm")
}

/// The passes that take the `appy` level to the `gpu` level: library calls are
/// recognised first (they need the `appy` level's tensor statements), then the loops
/// level, then the kernels and their launches.
pub fn appy_to_gpu(mvl: i64) -> String {
    let loops = appy_to_loops(mvl);
    let gpu = loops_level_to_gpu(mvl);
    format!("cse,appy-solve-library,appy-tensor-library,{loops},{gpu}")
}

/// The passes that take a `loops`-level module to the `gpu` level: [`loops_to_gpu`],
/// then the scalar slots to the entry block and a clean-up.
pub fn loops_level_to_gpu(mvl: i64) -> String {
    format!("{},appy-hoist-allocas,canonicalize,cse", loops_to_gpu(mvl))
}

/// The CPU lowering pipeline (after `appy-hoist-allocas`): the `loops` level to the
/// LLVM dialect, for MLIR's ExecutionEngine.
pub const CPU_PIPELINE: &str = "builtin.module(arith-expand,convert-scf-to-cf,convert-math-to-llvm,convert-math-to-libm,expand-strided-metadata,finalize-memref-to-llvm,convert-func-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts)";

/// The passes that take the `appy` level to the LLVM dialect (the CPU target).
pub fn appy_to_llvm(mvl: i64) -> String {
    format!("{},{}", appy_to_loops(mvl), loops_to_llvm())
}

/// The passes that take a `loops`-level module to the LLVM dialect.
pub fn loops_to_llvm() -> String {
    format!(
        "appy-hoist-allocas,appy-cpu-libm,appy-cpu-print,{}",
        CPU_PIPELINE.trim_start_matches("builtin.module(").trim_end_matches(')')
    )
}

/// The pipeline from the `appy` level to `level` (empty for `ast` and `appy`; `ptx` is
/// the `gpu` level followed by [`nvvm_pipeline`]).
pub fn to_level(level: Level, mvl: i64) -> String {
    match level {
        Level::Ast | Level::Appy => String::new(),
        Level::Loops => appy_to_loops(mvl),
        Level::Gpu | Level::Ptx => appy_to_gpu(mvl),
        Level::Llvm => appy_to_llvm(mvl),
    }
}

/// The pipeline from a module at level `from` to level `to` (`appy-opt x.mlir
/// --emit=...`); `ptx` is the `gpu` level followed by [`nvvm_pipeline`]. An error when
/// `to` is not below `from` on its path (the `gpu` and `llvm` levels are different
/// targets; no pipeline raises a level).
pub fn between(from: Level, to: Level, mvl: i64) -> Result<String, String> {
    let target = |l: Level| if l == Level::Ptx { Level::Gpu } else { l };
    match (from, target(to)) {
        (f, t) if f == t => Ok(String::new()),
        (Level::Appy, t) => Ok(to_level(t, mvl)),
        (Level::Loops, Level::Gpu) => Ok(loops_level_to_gpu(mvl)),
        (Level::Loops, Level::Llvm) => Ok(loops_to_llvm()),
        (f, _) => Err(format!(
            "the input is at the `{}` level, which does not lower to `{}` ({})",
            f.name(),
            to.name(),
            match f {
                Level::Loops => "it lowers to `gpu`, `ptx` and `llvm`",
                Level::Gpu => "it lowers to `ptx`",
                _ => "it is the last level",
            }
        )),
    }
}

/// Target chip: Hopper (H100/H200).
pub const CHIP: &str = "sm_90";

/// The NVVM pipeline for a `gpu`-level module: its kernels to PTX (in the
/// `gpu.binary`'s object), with libdevice linked when given.
pub fn nvvm_pipeline(libdevice: Option<&std::path::Path>) -> String {
    let l = libdevice.map(|p| format!(" l={}", p.display())).unwrap_or_default();
    format!(
        "builtin.module(nvvm-attach-target{{chip={CHIP} features=+ptx80 O=3{l}}},gpu.module(arith-expand,convert-scf-to-cf,convert-gpu-to-nvvm,canonicalize,cse),reconcile-unrealized-casts,gpu-module-to-binary{{format=isa}})"
    )
}
