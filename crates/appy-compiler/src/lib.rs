//! appy's compiler driver: the [`Compiler`] (an MLIR context and the pass registry),
//! the IR [`Level`]s, the compile entry points, every pipeline ([`pipelines`]) and the
//! targets ([`target::nvptx`], [`target::cpu`]).
//!
//! ```text
//! .py ──parse──▶ ast ──lower──▶ appy ──tensor passes, appy-strip-mine──▶ loops ─┬─appy-gpu-*──▶ gpu ──NVVM──▶ PTX
//!                                                                                └─CPU pipeline──▶ llvm ──ExecutionEngine
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
use appy_ir::diag::{DResult, Diagnostic, SourceFile};
use appy_ir::ir::Module;
use appy_ir::mlir::Ctx;
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
            Level::Gpu => "gpu",
            Level::Llvm => "llvm",
            Level::Ptx => "ptx",
        }
    }

    /// The level of a module: `llvm` when it holds LLVM dialect functions, `gpu` with a
    /// `gpu.module` or a launch, `loops` with strip-mined lanes or chunks
    /// (`appy.lanes`, `appy.chunks`), else `appy`. (A module without parallel or
    /// vector loops reads as `appy`; its `loops` form is the same.)
    pub fn of(m: &Module) -> Level {
        if m.op.walk_any(&|o| o.name == "llvm.func") {
            Level::Llvm
        } else if m.op.walk_any(&|o| o.name == "gpu.module" || o.name == "gpu.launch_func") {
            Level::Gpu
        } else if m
            .op
            .walk_any(&|o| o.attr("appy.lanes").is_some() || o.attr("appy.chunks").is_some())
        {
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
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mvl: DEFAULT_MVL,
            libdevice: None,
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
pub const ICE: &str = "internal compiler error (please report): ";

/// The first `"NAME":LINE:COL` in `msg` for one of `names`, as a span of `file`.
fn located(file: &SourceFile, msg: &str, names: &[&str]) -> Option<appy_ir::diag::Span> {
    for name in names {
        let quoted = format!("\"{name}\":");
        if let Some(pos) = msg.find(&quoted) {
            let rest = &msg[pos + quoted.len()..];
            let mut it = rest.split(|c: char| !c.is_ascii_digit());
            if let (Some(l), Some(c)) = (it.next().and_then(|x| x.parse().ok()), it.next().and_then(|x| x.parse().ok())) {
                let off = file.offset(l, c);
                return Some(appy_ir::diag::Span::new(off, off + 1));
            }
        }
    }
    None
}

/// Turns an MLIR failure on IR appy produced into an internal compiler error at the
/// source location it names.
pub fn mlir_error(file: &SourceFile, msg: &str) -> Diagnostic {
    let text = format!("{ICE}{msg}");
    match located(file, msg, &[file.name()]) {
        Some(span) => Diagnostic::error(file, span, text),
        None => Diagnostic::bare(text),
    }
}

/// Turns an MLIR failure on IR or a pipeline the user gave (`appy-opt x.mlir`,
/// `--pass-pipeline`) into an error at the location it names in `file` (MLIR names a
/// parsed buffer `-`): the user's mistake, not a compiler bug.
pub fn mlir_user_error(file: &SourceFile, msg: &str) -> Diagnostic {
    // `what:\nloc("-":2:19): detail` reads `what: detail` at 2:19.
    let text = match msg.split_once(":\n") {
        Some((what, rest)) => {
            let detail = rest.lines().next().unwrap_or("");
            let detail = match detail.find("): ") {
                Some(p) if detail.starts_with("loc(") => &detail[p + 3..],
                _ => detail,
            };
            let more: Vec<&str> = rest.lines().skip(1).collect();
            if more.is_empty() {
                format!("{what}: {detail}")
            } else {
                format!("{what}: {detail}\n{}", more.join("\n"))
            }
        }
        None => msg.to_string(),
    };
    match located(file, msg, &[file.name(), "-"]) {
        Some(span) => Diagnostic::error(file, span, text),
        None => Diagnostic::bare(text),
    }
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
    pub fn lower(&self, file: &SourceFile, program: &Program, args: &[ArgType], _opts: &Options) -> DResult<Lowered> {
        let _span = tracing::debug_span!("lower").entered();
        appy_ir::stack::deep(|| {
            let l = appy_frontend::lower::lower(file, program, args, &LowerOptions::default())?;
            self.ctx.load(&l.module).map_err(|e| mlir_error(file, &e))?;
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
        appy_ir::stack::deep(|| p.run(&self.ctx, m, after)).map_err(|e| mlir_error(file, &e))
    }

    /// [`Compiler::run`] for a pipeline or module the user gave: failures are the
    /// user's errors ([`mlir_user_error`]), not internal compiler errors.
    pub fn run_user(&self, file: &SourceFile, m: Module, pipeline: &str, after: Option<AfterPass<'_>>) -> DResult<Module> {
        let p = Pipeline::parse(pipeline, &self.registry).map_err(Diagnostic::bare)?;
        appy_ir::stack::deep(|| p.run(&self.ctx, m, after)).map_err(|e| mlir_user_error(file, &e))
    }

    /// The pipeline from the `appy` level to `level` ([`pipelines::to_level`]).
    pub fn pipeline_to(&self, level: Level, opts: &Options) -> String {
        pipelines::to_level(level, opts.mvl)
    }

    /// Compiles for the GPU: returns a bundle (host program + PTX).
    pub fn compile_gpu(&self, file: &SourceFile, func: &str, args: &[ArgType], opts: &Options) -> DResult<Bundle> {
        self.compile_gpu_tuned(file, func, args, opts, &[])
    }

    /// Compiles for the GPU at `opts.mvl` and, as autotuning candidates
    /// ([`Bundle::variants`]), at each other vector length in `mvls`. The `appy` level
    /// does not depend on the vector length, so the source is parsed and lowered once.
    pub fn compile_gpu_tuned(&self, file: &SourceFile, func: &str, args: &[ArgType], opts: &Options, mvls: &[i64]) -> DResult<Bundle> {
        appy_ir::stack::deep(|| self.compile_gpu_on_stack(file, func, args, opts, mvls))
    }

    fn compile_gpu_on_stack(&self, file: &SourceFile, func: &str, args: &[ArgType], opts: &Options, mvls: &[i64]) -> DResult<Bundle> {
        let program = self.parse(file, func)?;
        let l = self.lower(file, &program, args, opts)?;
        let mut main = self.bundle_at(file, &l, args, opts)?;
        for &m in mvls.iter().filter(|m| **m != opts.mvl) {
            let o = Options { mvl: m, ..opts.clone() };
            main.variants.push(self.bundle_at(file, &l, args, &o)?);
        }
        Ok(main)
    }

    fn bundle_at(&self, file: &SourceFile, l: &Lowered, args: &[ArgType], opts: &Options) -> DResult<Bundle> {
        let gpu = self.run(file, l.module.clone(), &self.pipeline_to(Level::Gpu, opts), None)?;
        let (ptx, kernels) = target::nvptx::to_ptx(&self.ctx, &gpu, opts).map_err(|e| mlir_error(file, &e))?;
        let host = target::nvptx::host_module(&gpu);
        Ok(Bundle {
            version: BUNDLE_VERSION,
            func: l.name.clone(),
            params: l.params.clone(),
            args: args.to_vec(),
            results: l.results.clone(),
            mvl: opts.mvl,
            host,
            ptx,
            kernels,
            variants: vec![],
        })
    }

    /// Compiles for the CPU: returns the LLVM-dialect module and the lowered function's
    /// metadata.
    pub fn compile_cpu(&self, file: &SourceFile, func: &str, args: &[ArgType], opts: &Options) -> DResult<(Module, Lowered)> {
        appy_ir::stack::deep(|| {
            let program = self.parse(file, func)?;
            let l = self.lower(file, &program, args, opts)?;
            let llvm = target::cpu::to_llvm(self, file, l.module.clone(), opts)?;
            Ok((llvm, l))
        })
    }
}
