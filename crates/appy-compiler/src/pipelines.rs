//! Every pass pipeline of the compiler, as text (MLIR's pipeline syntax, with appy's
//! Rust passes by their registry names next to upstream MLIR passes). Nothing else in
//! the compiler spells a pipeline: the levels of [`crate::Level`] are reached with
//! [`to_level`], and the targets run [`appy_to_llvm`] and [`nvvm_pipeline`].

use crate::Level;

/// The tensor passes, in the order of seed 001 §5.1 (CSE first makes equal slices
/// equal values for the analyses).
pub const TENSOR_PIPELINE: &str = "cse,appy-tensor-temporaries,appy-tensor-fuse,cse,appy-tensor-sync,appy-tensor-to-loops";

/// The tensor passes of the CPU: [`TENSOR_PIPELINE`] with statement-sized temporaries
/// in workers (`appy-tensor-temporaries{cpu=1}`) and column reductions walking rows
/// (`appy-tensor-to-loops{cpu=1}`).
pub const CPU_TENSOR_PIPELINE: &str =
    "cse,appy-tensor-temporaries{cpu=1},appy-tensor-fuse,cse,appy-tensor-sync,appy-tensor-to-loops{cpu=1}";

/// The passes that take the `appy` level to the `loops` level: the tensor passes, the
/// transforms the pragmas ask for (`appy-schedule`), strip-mining of every loop not
/// scheduled by them, the interleaving of the loops tagged `ilp` (`appy-ilp`), the
/// unrolling of those tagged `unr` and the `ilp` loops left (`appy-unroll`), and the
/// prefetches the pragmas ask for (`appy-add-prefetch`, which needs the lanes, and
/// finds constant offsets in unrolled loops).
pub fn appy_to_loops(mvl: i64) -> String {
    format!(
        "{TENSOR_PIPELINE},loop-invariant-code-motion,appy-schedule,appy-strip-mine{{mvl={mvl}}},appy-ilp,appy-unroll,appy-add-prefetch"
    )
}

/// The passes that take the `appy` level to the `kernel` level, the level the GPU
/// lowers from: library calls are recognised first (they need the `appy` level's tensor
/// statements), then [`appy_to_loops`], then Loopy's model written onto each kernel
/// (`appy-kernel-form`, `docs/KERNEL_IR.md`).
pub fn appy_to_kernel(mvl: i64) -> String {
    format!("cse,appy-solve-library,appy-tensor-library,{},appy-kernel-form", appy_to_loops(mvl))
}

/// The workers' code on threads, as [`kernel_level_to_gpu`] has it: a thread's lanes a
/// block apart (coalesced), the loop over them unrolled and jammed where every lane is in
/// range (each thread's loads issued together, before its stores: several loads in
/// flight per thread), then loads of what the same block loaded before reused.
pub const THREADS: &str = "appy-gpu-map-threads{mark=1},appy-gpu-unroll-and-jam,appy-gpu-redundant-loads";

/// Seed 002's code generation (`Options::vector_code`), in place of [`THREADS`]: a
/// thread's lanes consecutive and marked, a kernel whose statements read the same row
/// versioned on rows of one strip, then the lanes unrolled and jammed, loads of what the
/// same block loaded before removed, then consecutive elements accessed with vector loads
/// and stores.
pub const VECTOR_CODE: &str =
    "appy-gpu-map-threads{contiguous=1 mark=1},appy-gpu-one-strip,appy-gpu-unroll-and-jam,appy-gpu-redundant-loads,appy-gpu-vector-loads";

/// `pipeline` with [`VECTOR_CODE`] in place of [`THREADS`].
pub fn with_vector_code(pipeline: &str) -> String {
    pipeline.replace(&format!(",{THREADS},"), &format!(",{VECTOR_CODE},"))
}

/// The passes that take the `appy` level to the `gpu` level: [`appy_to_kernel`], then
/// [`kernel_level_to_gpu`] (the kernels and their launches).
pub fn appy_to_gpu(mvl: i64) -> String {
    format!("{},{}", appy_to_kernel(mvl), kernel_level_to_gpu())
}

/// The passes that take a `kernel`-level module to the `gpu` level: host loads into the
/// kernels that use them, the kernels and their launches, the workers' code on threads
/// ([`THREADS`]), float16 and bfloat16 operations computed in float32 and rounded after
/// each one (`appy-half-in-f32`), math functions as libdevice calls, then the scalar
/// slots to the entry block and a clean-up. They take no vector length: the loops level
/// records it (the lanes loops' bounds).
pub fn kernel_level_to_gpu() -> String {
    format!(
        "appy-gpu-sink-loads,appy-gpu-outline,appy-gpu-keep-reductions,{THREADS},appy-half-in-f32,appy-gpu-libm,appy-hoist-allocas,canonicalize,cse"
    )
}

/// The passes that take a `loops`-level module to the `gpu` level: `appy-kernel-form`,
/// then [`kernel_level_to_gpu`].
pub fn loops_level_to_gpu() -> String {
    format!("appy-kernel-form,{}", kernel_level_to_gpu())
}

/// float16 and bfloat16 arithmetic and math functions computed in float32 and rounded
/// back after each operation: what NumPy (float16) and torch (bfloat16) compute. The
/// values stay 16-bit in memory.
pub const HALF_IN_F32: &str = "appy-half-in-f32{cpu=1}";

/// The upstream passes that take the CPU loops (after `appy-cpu-openmp`,
/// `appy-hoist-allocas` and `appy-cpu-libm`) to the LLVM dialect, for MLIR's
/// ExecutionEngine. Math functions become LLVM intrinsics (which LLVM lowers to
/// instructions or C library calls) or, before this pipeline, calls that
/// `appy-cpu-vector-math` can give vector versions (`appy-cpu-wide-math`); arrays are allocated
/// by the functions `appy-cpu-alloc` defines; `finalize-memref-to-llvm` must precede
/// `convert-scf-to-cf` for the OpenMP regions. `arith-expand` runs only on what
/// `convert-arith-to-llvm` leaves (`ceildivsi`, `floordivsi` ...): it would also expand
/// `maximumf`/`minimumf` into compare-and-select, which LLVM does not vectorise as a
/// reduction, where LLVM has `llvm.maximum`.
pub const CPU_PIPELINE: &str = "builtin.module(convert-math-to-llvm,convert-math-to-libm,expand-strided-metadata,finalize-memref-to-llvm{use-generic-functions=true},convert-scf-to-cf,convert-openmp-to-llvm,convert-func-to-llvm,convert-arith-to-llvm,arith-expand,convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts)";

/// The passes that take the `appy` level to the CPU loops (the `cpu` level): `np.zeros`
/// arrays from `calloc` (`appy-cpu-zeros`), matrix
/// products to `appy.gemm` when the host has a BLAS library (`appy-tensor-library`,
/// operands with an identity layout only), the tensor passes, consecutive parallel
/// loops over the same range fused (`appy-cpu-fuse`) after the transforms the pragmas
/// ask for (`appy-schedule{cpu=1}`, `appy-ilp`, `appy-unroll`), then the parallel loops
/// as OpenMP regions (when `openmp`) and every other loop as a sequential loop
/// (`appy-cpu-openmp`), scalar slots per thread, and max/min reductions in a form LLVM
/// vectorises (`appy-cpu-minmax`).
pub fn appy_to_cpu(mvl: i64, t: &CpuTarget) -> String {
    let library = if t.blas {
        let mask: String = t.strided.iter().map(|s| if *s { '1' } else { '0' }).collect();
        format!("cse,appy-solve-library{{cpu=1 strided={mask}}},appy-tensor-library{{cpu=1 strided={mask}}},")
    } else {
        String::new()
    };
    format!(
        "appy-cpu-zeros,{library}{CPU_TENSOR_PIPELINE},loop-invariant-code-motion,appy-schedule{{cpu=1}},appy-ilp,appy-unroll,cse,appy-cpu-fuse,appy-kernel-form{{cpu=1}},appy-cpu-openmp{{mvl={mvl} openmp={}}},appy-hoist-allocas,canonicalize,cse,appy-cpu-minmax",
        t.openmp as u8
    )
}

/// The passes that take the `appy` level to the GPU's kernels as CPU functions over a
/// range of their groups (`appy-cpu-kernels`), in the LLVM dialect: [`appy_to_kernel`]
/// and the GPU's outlining exactly as [`appy_to_gpu`] runs them (so the functions take
/// the launches' parameters), then the CPU's loops and lowering. The runtime runs a
/// GPU bundle's launches with them on the host.
pub fn appy_to_cpu_kernels(mvl: i64, t: &CpuTarget) -> String {
    format!(
        "{},appy-gpu-sink-loads,appy-gpu-outline,appy-gpu-keep-reductions,appy-cpu-kernels,appy-cpu-openmp{{mvl={mvl} openmp={}}},appy-hoist-allocas,canonicalize,cse,appy-cpu-minmax,{}",
        appy_to_kernel(mvl),
        t.openmp as u8,
        cpu_to_llvm(t)
    )
}

/// The CPU target's choices: OpenMP, the vector math library, strided parameters.
#[derive(Clone, Debug, Default)]
pub struct CpuTarget {
    /// Parallel loops on OpenMP threads.
    pub openmp: bool,
    /// `appy-cpu-vector-math`'s instruction sets and function set, as `ISAS:FULL`
    /// (`bde:1`); empty: no vector math library.
    pub vector_math: String,
    /// The parameters that take strided arrays (`appy-cpu-strided`).
    pub strided: Vec<bool>,
    /// Matrix products call the host's BLAS (`appy-tensor-library{cpu=1}`,
    /// `appy-cpu-blas`).
    pub blas: bool,
    /// `math.erfc` as the GPU computes it (`appy-expand-erfc`) instead of the C
    /// library's `erfc` (the default): see [`crate::Options::expand_erfc`].
    pub expand_erfc: bool,
}

/// The passes that take the `appy` level to the LLVM dialect (the CPU target): the CPU
/// loops ([`appy_to_cpu`]), then [`cpu_to_llvm`].
pub fn appy_to_llvm(mvl: i64, t: &CpuTarget) -> String {
    format!("{},{}", appy_to_cpu(mvl, t), cpu_to_llvm(t))
}

/// The passes that take a `cpu`-level module to the LLVM dialect: 16-bit floats in
/// float32 ([`HALF_IN_F32`]), float64 `exp`,
/// `expm1` and `tanh` inline (`appy-cpu-exp`, vectorisable), float32 math in float64
/// (`appy-cpu-wide-math`), the math library (`appy-cpu-libm`), `print` as calls
/// of the runtime's callback (`appy-cpu-print`), matrix products as BLAS calls
/// (`appy-cpu-blas`), strided parameters, the upstream lowering, then (on the LLVM
/// dialect) the allocation functions and the vector math functions. With
/// [`CpuTarget::expand_erfc`], `appy-expand-erfc` first.
pub fn cpu_to_llvm(t: &CpuTarget) -> String {
    let mut p = String::new();
    if t.expand_erfc {
        p.push_str("appy-expand-erfc,");
    }
    p.push_str(HALF_IN_F32);
    p.push_str(",appy-cpu-exp,appy-cpu-wide-math,appy-cpu-libm,appy-cpu-print");
    if t.blas {
        p.push_str(",appy-cpu-blas");
    }
    if t.strided.contains(&true) {
        let mask: String = t.strided.iter().map(|s| if *s { '1' } else { '0' }).collect();
        p.push_str(&format!(",appy-cpu-strided{{args={mask}}}"));
    }
    p.push(',');
    p.push_str(CPU_PIPELINE.trim_start_matches("builtin.module(").trim_end_matches(')'));
    let (isa, full) = t.vector_math.split_once(':').unwrap_or(("", "0"));
    p.push_str(&format!(",appy-cpu-alloc,appy-cpu-vector-math{{isa={isa} full={full}}}"));
    p
}

/// The CPU target [`to_level`] and [`between`] use: OpenMP, no vector math library, no
/// strided parameters.
fn default_cpu() -> CpuTarget {
    CpuTarget {
        openmp: true,
        expand_erfc: true,
        ..Default::default()
    }
}

/// The pipeline from the `appy` level to `level` (empty for `ast` and `appy`; `ptx` is
/// the `gpu` level followed by [`nvvm_pipeline`]). The CPU levels use OpenMP and no
/// vector math library (the runtime chooses those for its host).
pub fn to_level(level: Level, mvl: i64) -> String {
    match level {
        Level::Ast | Level::Appy => String::new(),
        Level::Loops => appy_to_loops(mvl),
        Level::Kernel => appy_to_kernel(mvl),
        Level::Gpu | Level::Ptx => appy_to_gpu(mvl),
        Level::Cpu => appy_to_cpu(mvl, &default_cpu()),
        Level::Llvm => appy_to_llvm(mvl, &default_cpu()),
    }
}

/// The pipeline from a module at level `from` to level `to` (`appy-opt x.mlir
/// --emit=...`); `ptx` is the `gpu` level followed by [`nvvm_pipeline`]. An error when
/// `to` is not below `from` on its path: `appy` → `loops` → `gpu` → `ptx` for the GPU,
/// `appy` → `cpu` → `llvm` for the CPU (the CPU does not start from the strip-mined
/// `loops` level); no pipeline raises a level.
pub fn between(from: Level, to: Level, mvl: i64) -> Result<String, String> {
    let target = |l: Level| if l == Level::Ptx { Level::Gpu } else { l };
    match (from, target(to)) {
        (f, t) if f == t => Ok(String::new()),
        (Level::Appy, t) => Ok(to_level(t, mvl)),
        (Level::Loops, Level::Kernel) => Ok("appy-kernel-form".into()),
        (Level::Loops, Level::Gpu) => Ok(loops_level_to_gpu()),
        (Level::Kernel, Level::Gpu) => Ok(kernel_level_to_gpu()),
        (Level::Cpu, Level::Llvm) => Ok(cpu_to_llvm(&default_cpu())),
        (f, _) => Err(format!(
            "the input is at the `{}` level, which does not lower to `{}` ({})",
            f.name(),
            to.name(),
            match f {
                Level::Loops => "it lowers to `kernel`, `gpu` and `ptx`",
                Level::Kernel => "it lowers to `gpu` and `ptx`",
                Level::Cpu => "it lowers to `llvm`",
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
        "builtin.module(nvvm-attach-target{{chip={CHIP} features=+ptx80 O=3{l}}},gpu.module(arith-expand,convert-scf-to-cf,convert-gpu-to-nvvm,convert-math-to-llvm,canonicalize,cse),reconcile-unrealized-casts,gpu-module-to-binary{{format=isa}})"
    )
}
