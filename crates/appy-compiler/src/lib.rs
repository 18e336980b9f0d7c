//! appy's compiler driver: the [`Compiler`] (an MLIR context and the pass registry),
//! the IR [`Level`]s, the compile entry points, every pipeline ([`pipelines`]) and the
//! targets ([`target::nvptx`], [`target::cpu`]).
//!
//! ```text
//! .py ──parse──▶ ast ──lower──▶ appy ─┬─tensor passes, appy-strip-mine──▶ loops ──appy-gpu-*──▶ gpu ──NVVM──▶ PTX
//!                                    └─tensor passes, appy-cpu-openmp──▶ cpu ──LLVM dialect──▶ llvm ──ExecutionEngine
//! ```
//!
//! Every level is printable and re-parseable MLIR (except `ast`). MLIR verifies the
//! output of every Rust pass in debug builds (and with `APPY_VERIFY_EACH=1`); release
//! builds verify at the next MLIR stage.
#![warn(missing_docs)]
// `Diagnostic`, the error of everything that can reject a user's program, is large;
// boxing it would complicate every caller for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod pipelines;
pub mod target;

use appy_frontend::ast::Program;
use appy_frontend::lower::{LowerOptions, Lowered};
use appy_ir::bundle::{BUNDLE_VERSION, Bundle};
use appy_ir::diag::{DResult, Diagnostic, IrError, SourceFile};
use appy_ir::ir::Module;
use appy_ir::mlir::Ctx;
use appy_ir::schedule::Mark;
use appy_ir::types::ArgType;
pub use appy_passes::AfterPass;
use appy_passes::{Pipeline, Registry};
use std::path::PathBuf;

/// The IR levels (what `appy-opt --emit` prints).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// The parsed AST.
    Ast,
    /// The `appy` level (frontend output).
    Appy,
    /// Strip-mined loops.
    Loops,
    /// Loopy's kernel model on the strip-mined loops (`appy-kernel-form`).
    Kernel,
    /// CPU loops: OpenMP parallel regions and sequential (vectorisable) loops.
    Cpu,
    /// Kernels in a `gpu.module` and a host function with launches.
    Gpu,
    /// The LLVM dialect for the CPU.
    Llvm,
    /// PTX text.
    Ptx,
}

impl Level {
    /// The name `appy-opt --emit` uses.
    pub fn name(self) -> &'static str {
        match self {
            Level::Ast => "ast",
            Level::Appy => "appy",
            Level::Loops => "loops",
            Level::Kernel => "kernel",
            Level::Cpu => "cpu",
            Level::Gpu => "gpu",
            Level::Llvm => "llvm",
            Level::Ptx => "ptx",
        }
    }

    /// The level of a module: `llvm` when it holds LLVM dialect functions, `gpu` with a
    /// `gpu.module` or a launch, `cpu` with OpenMP operations or the `appy.cpu` mark
    /// `appy-cpu-openmp` leaves, `kernel` with kernels (`appy.kernel`), `loops` with strip-mined lanes or chunks
    /// (`appy.lanes`, `appy.chunks`), else `appy`. (A module without parallel or
    /// vector loops reads as `appy`; its `loops` form is the same.)
    pub fn of(m: &Module) -> Level {
        if m.op.walk_any(&|o| o.name == "llvm.func") {
            Level::Llvm
        } else if m.op.walk_any(&|o| o.name == "gpu.module" || o.name == "gpu.launch_func") {
            Level::Gpu
        } else if m.op.attr("appy.cpu").is_some() || m.op.walk_any(&|o| o.name.starts_with("omp.")) {
            Level::Cpu
        } else if m.op.walk_any(&|o| o.has_attr(appy_ir::kernel::KERNEL)) {
            Level::Kernel
        } else if m.op.walk_any(&|o| o.has_mark(Mark::Lanes) || o.has_mark(Mark::Chunks)) {
            Level::Loops
        } else {
            Level::Appy
        }
    }
}

pub use appy_ir::DEFAULT_MVL;

/// Options of a compilation (all of them are part of the specialisation key).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// Lanes per worker (threads per block on the GPU).
    pub mvl: i64,
    /// libdevice bitcode for GPU math functions (found automatically if `None`).
    pub libdevice: Option<PathBuf>,
    /// Checked mode: array subscripts are checked ([`LowerOptions::bounds_check`]).
    pub bounds_check: bool,
    /// CPU: run parallel loops on OpenMP threads (else sequentially).
    pub openmp: bool,
    /// CPU: the vector math library's instruction sets and function set, as
    /// `ISAS:FULL` (e.g. `bde:1`, see `appy-cpu-vector-math`); empty: none.
    pub vector_math: String,
    /// CPU: matrix products call the host's BLAS library (ILP64 CBLAS; the runtime
    /// sets the routines' addresses, see `appy-cpu-blas`).
    pub blas: bool,
    /// CPU: `math.erfc` computed by the GPU's expansion (`appy-expand-erfc`, bit for
    /// bit the GPU's results wherever it does not call `erf`; within 0.8 ulp, where the
    /// C library's `erfc` is up to 3.6 ulp off; vectorisable). On by default; off, the
    /// C library's `erfc`.
    pub expand_erfc: bool,
    /// The tuning candidate whose values the `tune(...)` lists of `transform(...)`
    /// clauses take ([`LowerOptions::tune`]; 0, the first, by default and on the CPU).
    pub tune: usize,
    /// GPU: seed 002's code generation ([`pipelines::VECTOR_CODE`]): a thread's lanes
    /// consecutive, unrolled and jammed, consecutive elements accessed with vector
    /// loads and stores.
    pub vector_code: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mvl: DEFAULT_MVL,
            libdevice: None,
            bounds_check: false,
            openmp: true,
            vector_math: String::new(),
            blas: false,
            expand_erfc: true,
            tune: 0,
            vector_code: false,
        }
    }
}

/// A compiler: an MLIR context and the pass registry ([`appy_passes::PASSES`]). Not thread-safe (one per thread).
pub struct Compiler {
    /// The MLIR context.
    pub ctx: Ctx,
    /// Rust passes by name.
    pub registry: Registry,
    /// Warnings of the programs lowered since the last [`Compiler::take_warnings`].
    warnings: std::cell::RefCell<Vec<Diagnostic>>,
}

impl Default for Compiler {
    fn default() -> Self {
        Self::new()
    }
}

/// The start of an internal compiler error's message.
pub use appy_ir::diag::ICE;

/// The diagnostic of an error about IR appy produced (a pass or MLIR failed): an
/// internal compiler error at the source position it names ([`IrError::to_diagnostic`]).
pub fn mlir_error(file: &SourceFile, e: &IrError) -> Diagnostic {
    e.to_diagnostic(file)
}

/// The diagnostic of an MLIR failure on IR or a pipeline the user gave (`appy-opt
/// x.mlir`, `--pass-pipeline`): the user's mistake, not a compiler bug, at the location
/// it names in `file` ([`IrError::to_user_diagnostic`]).
pub fn mlir_user_error(file: &SourceFile, e: &IrError) -> Diagnostic {
    e.to_user_diagnostic(file)
}

impl Compiler {
    /// A compiler with every dialect and pass registered.
    pub fn new() -> Self {
        Compiler {
            ctx: Ctx::new(),
            registry: Registry::new(),
            warnings: Default::default(),
        }
    }

    /// Parses the jitted function `func` of a source file.
    pub fn parse(&self, file: &SourceFile, func: &str) -> DResult<Program> {
        appy_frontend::parse_function(file, func)
    }

    /// Lowers a parsed function to the `appy` level, specialised for `args`, and
    /// verifies the result with MLIR.
    pub fn lower(&self, file: &SourceFile, program: &Program, args: &[ArgType], opts: &Options) -> DResult<Lowered> {
        let _span = tracing::debug_span!("lower").entered();
        appy_ir::stack::deep(|| {
            let lo = LowerOptions {
                bounds_check: opts.bounds_check,
                tune: opts.tune,
            };
            let l = appy_frontend::lower::lower(file, program, args, &lo)?;
            self.ctx.load(&l.module).map_err(|e| e.to_diagnostic(file))?;
            self.warnings.borrow_mut().extend(l.warnings.iter().cloned());
            Ok(l)
        })
    }

    /// The warnings of the programs compiled since the last call (each once, e.g. a
    /// pragma that annotates no loop): callers print them (`FILE:LINE:COL: warning:`).
    pub fn take_warnings(&self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.warnings.borrow_mut())
    }

    /// Runs pipeline text over a module.
    pub fn run(&self, file: &SourceFile, m: Module, pipeline: &str, after: Option<AfterPass<'_>>) -> DResult<Module> {
        let p = Pipeline::parse(pipeline, &self.registry).map_err(Diagnostic::bare)?;
        // MLIR's passes walk the (possibly very long) operation chains of deep
        // expressions: see `appy_ir::stack`.
        appy_ir::stack::deep(|| p.run(&self.ctx, m, after)).map_err(|e| e.to_diagnostic(file))
    }

    /// [`Compiler::run`] for a pipeline or module the user gave: failures are the
    /// user's errors ([`mlir_user_error`]), not internal compiler errors.
    pub fn run_user(&self, file: &SourceFile, m: Module, pipeline: &str, after: Option<AfterPass<'_>>) -> DResult<Module> {
        let p = Pipeline::parse(pipeline, &self.registry).map_err(Diagnostic::bare)?;
        appy_ir::stack::deep(|| p.run(&self.ctx, m, after)).map_err(|e| mlir_user_error(file, &e))
    }

    /// The pipeline from the `appy` level to `level` ([`pipelines::to_level`]).
    pub fn pipeline_to(&self, level: Level, opts: &Options) -> String {
        let p = pipelines::to_level(level, opts.mvl);
        if opts.vector_code && matches!(level, Level::Gpu | Level::Ptx) {
            pipelines::with_vector_code(&p)
        } else {
            p
        }
    }

    /// Compiles for the GPU: returns a bundle (host program + PTX).
    pub fn compile_gpu(&self, file: &SourceFile, func: &str, args: &[ArgType], opts: &Options) -> DResult<Bundle> {
        self.compile_gpu_tuned(file, func, args, opts, &[])
    }

    /// Compiles for the GPU at `opts.mvl` and, as autotuning candidates
    /// ([`Bundle::variants`]), at each other vector length in `mvls`. The `appy` level
    /// does not depend on the vector length, so the source is parsed and lowered once.
    /// When `mvls` is not empty and the program's `transform(...)` clauses have
    /// `tune(...)` lists, each further value (candidate 1, 2, ... of the lists) is a
    /// candidate too, lowered again and compiled at `opts.mvl` ([`Bundle::choice`]).
    pub fn compile_gpu_tuned(&self, file: &SourceFile, func: &str, args: &[ArgType], opts: &Options, mvls: &[i64]) -> DResult<Bundle> {
        appy_ir::stack::deep(|| self.compile_gpu_on_stack(file, func, args, opts, mvls))
    }

    fn compile_gpu_on_stack(&self, file: &SourceFile, func: &str, args: &[ArgType], opts: &Options, mvls: &[i64]) -> DResult<Bundle> {
        let program = self.parse(file, func)?;
        let l = self.lower(file, &program, args, opts)?;
        let mut main = self.bundle_at(file, &l, args, opts, true)?;
        for o in Self::variant_options(opts, mvls, l.tune_choices) {
            let mut b = if o.tune == opts.tune {
                // Another vector length: the `appy` level does not depend on it.
                self.bundle_at(file, &l, args, &o, true)?
            } else {
                let lc = self.lower(file, &program, args, &o)?;
                self.bundle_at(file, &lc, args, &o, true)?
            };
            b.choice = o.tune as u32;
            main.variants.push(b);
        }
        Self::drop_unchanged_vector_code(&mut main);
        Ok(main)
    }

    /// Drops the candidate with seed 002's code generation when its PTX is that of the
    /// plain candidate at the same vector length and choice (the function has nothing
    /// it changes): timing it would only cost time.
    pub fn drop_unchanged_vector_code(main: &mut Bundle) {
        let plain: Vec<(i64, u32, String)> = (0..main.candidates())
            .map(|k| main.candidate(k))
            .filter(|c| !c.vector_code)
            .map(|c| (c.mvl, c.choice, c.ptx.clone()))
            .collect();
        main.variants
            .retain(|v| !v.vector_code || !plain.iter().any(|(m, c, p)| *m == v.mvl && *c == v.choice && *p == v.ptx));
    }

    /// The options of the autotuning candidates after the first (`opts` itself), in the
    /// order of [`Bundle::variants`] that [`Compiler::compile_gpu_tuned`] makes: each
    /// other vector length of `mvls`, then, when `mvls` is not empty, each further value
    /// of the program's `tune(...)` lists (`tune_choices` values in all, from
    /// [`Compiler::tune_choices`]), then the first vector length with seed 002's code
    /// generation ([`Options::vector_code`]; [`Compiler::drop_unchanged_vector_code`]
    /// drops it where it changes nothing). Each compiles alone with
    /// [`Compiler::compile_gpu_candidate`], so the candidates can be compiled by several
    /// compilers at once and assembled in this order.
    pub fn variant_options(opts: &Options, mvls: &[i64], tune_choices: usize) -> Vec<Options> {
        let mut v: Vec<Options> = mvls
            .iter()
            .filter(|m| **m != opts.mvl)
            .map(|&m| Options { mvl: m, ..opts.clone() })
            .collect();
        if !mvls.is_empty() {
            v.extend((1..tune_choices).map(|c| Options { tune: c, ..opts.clone() }));
            // Seed 002's code generation at the first vector length, unless asked for
            // everywhere already.
            if !opts.vector_code {
                v.push(Options {
                    vector_code: true,
                    ..opts.clone()
                });
            }
        }
        v
    }

    /// How many values the `tune(...)` lists of `func`'s `transform(...)` clauses have
    /// (1 without any): the frontend alone, no MLIR.
    pub fn tune_choices(file: &SourceFile, func: &str, args: &[ArgType], opts: &Options) -> DResult<usize> {
        appy_ir::stack::deep(|| {
            let program = appy_frontend::parse_function(file, func)?;
            let lo = LowerOptions {
                bounds_check: opts.bounds_check,
                tune: opts.tune,
            };
            Ok(appy_frontend::lower::lower(file, &program, args, &lo)?.tune_choices)
        })
    }

    /// One autotuning candidate of [`Compiler::compile_gpu_tuned`] compiled alone (the
    /// options from [`Compiler::variant_options`]): identical to the variant that
    /// `compile_gpu_tuned` makes for these options.
    pub fn compile_gpu_candidate(&self, file: &SourceFile, func: &str, args: &[ArgType], opts: &Options) -> DResult<Bundle> {
        let mut b = self.compile_gpu(file, func, args, opts)?;
        b.choice = opts.tune as u32;
        Ok(b)
    }

    /// The bundle at `opts.mvl`; without `ptx`, the kernels' PTX is left out (the host
    /// program and the kernels' parameters are all there).
    fn bundle_at(&self, file: &SourceFile, l: &Lowered, args: &[ArgType], opts: &Options, ptx: bool) -> DResult<Bundle> {
        let gpu = self.run(file, l.module.clone(), &self.pipeline_to(Level::Gpu, opts), None)?;
        let (ptx, kernels) = if ptx {
            target::nvptx::to_ptx(&self.ctx, &gpu, opts).map_err(|e| e.to_diagnostic(file))?
        } else {
            (String::new(), target::nvptx::kernel_infos(&gpu))
        };
        let host = target::nvptx::host_module(&gpu);
        let program = appy_ir::host::lower(&host, &kernels).map_err(|e| e.to_diagnostic(file))?;
        Ok(Bundle {
            version: BUNDLE_VERSION,
            func: l.name.clone(),
            params: l.params.clone(),
            // What the code takes: complex arrays as float arrays of one more axis.
            args: args.iter().map(ArgType::abi).collect(),
            results: l.results.clone(),
            status: l.status.clone(),
            mvl: opts.mvl,
            host,
            program,
            ptx,
            kernels,
            variants: vec![],
            choice: 0,
            vector_code: opts.vector_code,
        })
    }

    /// A GPU bundle without PTX, and its kernels as CPU functions in an LLVM-dialect
    /// module: kernel `K` with launch parameters `p...` is `K(p..., groups)`, which runs
    /// groups `[block_offset, block_offset + groups)` of the launch
    /// ([`pipelines::appy_to_cpu_kernels`]). The bundle is [`Compiler::compile_gpu`]'s
    /// but for the PTX; `cpu` chooses OpenMP and the vector math library for the CPU
    /// functions. The runtime runs such a bundle on the host (`appy_runtime::host_device`).
    pub fn compile_gpu_for_host(
        &self,
        file: &SourceFile,
        func: &str,
        args: &[ArgType],
        opts: &Options,
        cpu: &Options,
    ) -> DResult<(Bundle, Module)> {
        appy_ir::stack::deep(|| {
            let program = self.parse(file, func)?;
            let l = self.lower(file, &program, args, opts)?;
            let bundle = self.bundle_at(file, &l, args, opts, false)?;
            let t = pipelines::CpuTarget {
                openmp: cpu.openmp,
                vector_math: cpu.vector_math.clone(),
                strided: vec![],
                blas: false,
                expand_erfc: cpu.expand_erfc,
            };
            let kernels = self.run(file, l.module, &pipelines::appy_to_cpu_kernels(opts.mvl, &t), None)?;
            Ok((bundle, kernels))
        })
    }

    /// Compiles for the CPU: returns the LLVM-dialect module and the lowered function's
    /// metadata. Array parameters marked in `strided` take any strided layout (see
    /// `appy-cpu-strided`); the others must be C-contiguous.
    pub fn compile_cpu(
        &self,
        file: &SourceFile,
        func: &str,
        args: &[ArgType],
        opts: &Options,
        strided: &[bool],
    ) -> DResult<(Module, Lowered)> {
        appy_ir::stack::deep(|| {
            let program = self.parse(file, func)?;
            let l = self.lower(file, &program, args, opts)?;
            let llvm = target::cpu::to_llvm(self, file, l.module.clone(), opts, strided)?;
            Ok((llvm, l))
        })
    }
}
