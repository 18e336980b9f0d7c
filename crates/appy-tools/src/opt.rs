//! `appy-opt`: appy's pass-debugging driver, in the style of `mlir-opt`, as a library
//! (the `appy-opt` binary and the lit tests call [`run`]).
//!
//! ```text
//! appy-opt kernel.py --func f --signature 'f32[:],f32[:],int' --emit=loops
//! appy-opt kernel.py --pass-pipeline='appy-strip-mine{mvl=128},canonicalize' --print-ir-after-all
//! appy-opt level.mlir --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-gpu-map-threads' -o out.mlir
//! appy-opt loops.mlir --emit=gpu     # MLIR input is lowered from the level it is at
//! appy-opt - < level.mlir            # read MLIR from standard input
//! appy-opt --list-passes
//! ```

use appy_compiler::{Compiler, Level, Options, mlir_error, mlir_user_error};
use appy_frontend::ast::{ExprKind, Index, Program, Stmt, StmtKind};
use appy_ir::diag::{Diagnostic, SourceFile};
use appy_ir::types::{ArgType, DType};
use clap::{Parser, ValueEnum};

#[derive(Parser)]
#[command(
    name = "appy-opt",
    about = "Print and transform appy's IR levels (ast, appy, loops, kernel, gpu, cpu, llvm, ptx)"
)]
/// `appy-opt`'s command line.
pub struct Args {
    /// Input: an APPy `.py` file or an `.mlir` file at any level.
    input: Option<String>,
    /// Jitted function to compile (default: the only one in the file).
    #[arg(long)]
    func: Option<String>,
    /// Argument types, comma-separated: `f32[:,:]`, `f64[:]`, `int`, `float`, `i32`, ...
    /// (default: arrays are float64 with the rank of their subscripts, scalars int).
    #[arg(long)]
    signature: Option<String>,
    /// The level to print (default: `appy` for Python input; MLIR input, which is
    /// lowered from the level it is at, is printed as it is).
    #[arg(long, value_enum)]
    emit: Option<Emit>,
    /// A pipeline of appy and upstream MLIR passes to run instead of the one `--emit` implies.
    #[arg(long = "pass-pipeline")]
    pass_pipeline: Option<String>,
    /// Print the IR after every pass.
    #[arg(long = "print-ir-after-all")]
    print_ir_after_all: bool,
    /// List the Rust passes.
    #[arg(long = "list-passes")]
    list_passes: bool,
    /// Print locations.
    #[arg(long = "print-locations")]
    locations: bool,
    /// Maximum vector length (lanes; threads per block on the GPU).
    #[arg(long, default_value_t = appy_compiler::DEFAULT_MVL)]
    mvl: i64,
    /// Checked mode: bounds checks on every array subscript.
    #[arg(long = "bounds-check")]
    bounds_check: bool,
    /// GPU: seed 002's code generation (a thread's lanes consecutive, unrolled and
    /// jammed, vector loads and stores); also `APPY_GPU_VECTOR=1`.
    #[arg(long = "vector-code")]
    vector_code: bool,
    /// Output file (default: stdout).
    #[arg(short = 'o')]
    output: Option<String>,
}

/// The levels `--emit` names ([`Level`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// The parsed AST.
    Ast,
    /// The `appy` level (frontend output).
    Appy,
    /// Strip-mined loops.
    Loops,
    /// Loopy's kernel model on the strip-mined loops (docs/KERNEL_IR.md).
    Kernel,
    /// CPU loops: OpenMP regions and sequential loops.
    Cpu,
    /// Kernels in a `gpu.module` and a host function with launches.
    Gpu,
    /// The LLVM dialect for the CPU.
    Llvm,
    /// PTX text.
    Ptx,
    /// The step schedule of the `gpu` level's host function (its kernels, library
    /// calls and host loops in steps of independent nodes).
    Schedule,
}

impl From<Emit> for Level {
    fn from(e: Emit) -> Level {
        match e {
            Emit::Ast => Level::Ast,
            Emit::Appy => Level::Appy,
            Emit::Loops => Level::Loops,
            Emit::Kernel => Level::Kernel,
            Emit::Cpu => Level::Cpu,
            Emit::Gpu => Level::Gpu,
            Emit::Llvm => Level::Llvm,
            Emit::Ptx => Level::Ptx,
            Emit::Schedule => Level::Gpu,
        }
    }
}

/// Runs `appy-opt` with command-line `argv` (the first element is the program name);
/// `stdin` is the input when the file is `-`. Returns the output text, or the rendered
/// error.
pub fn run(argv: &[String], stdin: &str) -> Result<String, String> {
    let args = Args::try_parse_from(argv).map_err(|e| e.to_string())?;
    let out = run_args(&args, stdin).map_err(|d| d.render())?;
    match &args.output {
        Some(p) => {
            let output = crate::output::Output {
                path: p.into(),
                what: "the output".into(),
                bytes: out.into_bytes(),
            };
            let inputs: Vec<crate::output::Input> = args
                .input
                .iter()
                .filter(|i| *i != "-")
                .map(|i| crate::output::Input {
                    path: i.into(),
                    what: "the input".into(),
                })
                .collect();
            crate::output::write_all(&[output], &inputs).map_err(|e| format!("error: {e}\n"))?;
            Ok(String::new())
        }
        None => Ok(out),
    }
}

fn infer_signature(p: &Program) -> Vec<ArgType> {
    fn walk(stmts: &[Stmt], name: &str, rank: &mut Option<usize>) {
        fn expr(e: &appy_frontend::ast::Expr, name: &str, rank: &mut Option<usize>) {
            if rank.is_none() {
                match &e.kind {
                    ExprKind::Subscript { value, indices } if matches!(&value.kind, ExprKind::Name(n) if n == name) => {
                        *rank = Some(indices.iter().filter(|i| !matches!(i, Index::NewAxis(_))).count());
                    }
                    ExprKind::Attribute { value, attr }
                        if attr.name == "shape" && matches!(&value.kind, ExprKind::Name(n) if n == name) =>
                    {
                        *rank = Some(1);
                    }
                    _ => {}
                }
            }
            e.for_each_child(&mut |c| expr(c, name, rank));
        }
        for s in stmts {
            match &s.kind {
                StmtKind::Assign { targets, value } => {
                    targets.iter().for_each(|t| expr(t, name, rank));
                    expr(value, name, rank);
                }
                StmtKind::AugAssign { target, value, .. } => {
                    expr(target, name, rank);
                    expr(value, name, rank);
                }
                StmtKind::For { iter, body, .. } | StmtKind::While { cond: iter, body } => {
                    expr(iter, name, rank);
                    walk(body, name, rank);
                }
                StmtKind::If { cond, then, orelse } => {
                    expr(cond, name, rank);
                    walk(then, name, rank);
                    walk(orelse, name, rank);
                }
                StmtKind::Return(Some(e)) | StmtKind::Expr(e) => expr(e, name, rank),
                _ => {}
            }
        }
    }
    p.function
        .params
        .iter()
        .map(|prm| {
            let mut rank = None;
            walk(&p.function.body, &prm.name, &mut rank);
            match rank {
                Some(r) => ArgType::Array {
                    dtype: DType::F64,
                    rank: r,
                },
                None => ArgType::Scalar {
                    dtype: DType::I64,
                    weak: true,
                },
            }
        })
        .collect()
}

fn run_args(a: &Args, stdin: &str) -> Result<String, Diagnostic> {
    let compiler = Compiler::new();
    if a.list_passes {
        let mut s = String::from("Rust passes (usable in --pass-pipeline next to any upstream MLIR pass):\n");
        for p in compiler.registry.all() {
            s.push_str(&format!(
                "  {:<24} {}
  {:<24} ({})
",
                p.name, p.description, "", p.file
            ));
            for o in p.options {
                s.push_str(&format!(
                    "  {:<24}   {}={} ({}): {}
",
                    "",
                    o.name,
                    o.default,
                    o.kind.describe(),
                    o.help
                ));
            }
        }
        return Ok(s);
    }
    let Some(input) = &a.input else {
        return Err(Diagnostic::bare("no input file (see --help)"));
    };
    let level = Level::from(a.emit.unwrap_or(Emit::Appy));
    let file = if input == "-" {
        SourceFile::new("<stdin>", stdin)
    } else {
        SourceFile::load(std::path::Path::new(input))?
    };
    let is_mlir = input == "-" || input.ends_with(".mlir");
    // MLIR input or a pipeline the user wrote: MLIR's complaints are the user's errors.
    let user_ir = is_mlir || a.pass_pipeline.is_some();
    let ir_error = |e: &appy_ir::diag::IrError| if user_ir { mlir_user_error(&file, e) } else { mlir_error(&file, e) };
    let opts = Options {
        mvl: a.mvl,
        bounds_check: a.bounds_check,
        vector_code: a.vector_code || appy_ir::config::gpu_vector(),
        ..Default::default()
    };
    let mut printed = String::new();
    let mut after = |name: &str, text: &str| {
        eprintln!("// -----// IR Dump After {name} //----- //\n{text}");
    };
    let after: Option<appy_compiler::AfterPass<'_>> = if a.print_ir_after_all { Some(&mut after) } else { None };
    let (module, from) = if is_mlir {
        if level == Level::Ast {
            return Err(Diagnostic::bare("--emit=ast needs a Python source"));
        }
        let parsed = compiler.ctx.parse(file.text()).map_err(|e| mlir_user_error(&file, &e))?;
        let m = appy_ir::mlir::import(&parsed);
        let from = Level::of(&m);
        (m, from)
    } else {
        let func = match &a.func {
            Some(f) => f.clone(),
            None => {
                let fs = appy_frontend::jit_functions(&file);
                match fs.as_slice() {
                    [(f, _)] => f.clone(),
                    [] => return Err(Diagnostic::bare(format!("{input}: no @appy.jit function found"))),
                    _ => {
                        return Err(Diagnostic::bare(format!(
                            "{input} has several jitted functions ({}); choose one with --func",
                            fs.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>().join(", ")
                        )));
                    }
                }
            }
        };
        let program = compiler.parse(&file, &func)?;
        if level == Level::Ast && a.pass_pipeline.is_none() {
            return Ok(appy_frontend::dump(&program));
        }
        let sig = match &a.signature {
            Some(s) => appy_ir::types::parse_signature(s).map_err(|e| Diagnostic::bare(format!("--signature: {e}")))?,
            None => infer_signature(&program),
        };
        let l = compiler.lower(&file, &program, &sig, &opts)?;
        for w in compiler.take_warnings() {
            eprint!("{}", w.render());
        }
        (l.module, Level::Appy)
    };
    let pipeline = match &a.pass_pipeline {
        Some(p) => p.clone(),
        // MLIR input without --emit is printed as it is.
        None if is_mlir && a.emit.is_none() => String::new(),
        None => appy_compiler::pipelines::between(from, level, opts.mvl)
            .map(|p| {
                if opts.vector_code {
                    appy_compiler::pipelines::with_vector_code(&p)
                } else {
                    p
                }
            })
            .map_err(|e| Diagnostic::bare(format!("--emit={}: {e}", level.name())))?,
    };
    // The parameters' source names, which the `gpu` level no longer carries, name the
    // arrays of a step schedule.
    let arg_names: Vec<(String, String)> = module
        .body()
        .iter()
        .filter_map(|f| Some((f.attr("sym_name")?.to_string(), f.attr(appy_ir::kernel::ARG_NAMES)?.to_string())))
        .collect();
    let out = if pipeline.is_empty() {
        module
    } else if user_ir {
        compiler.run_user(&file, module, &pipeline, after)?
    } else {
        compiler.run(&file, module, &pipeline, after)?
    };
    if a.emit == Some(Emit::Schedule) {
        let mut out = out;
        for f in out.body_mut().iter_mut() {
            if let Some((_, names)) = arg_names.iter().find(|(n, _)| f.attr("sym_name") == Some(n.as_str())) {
                f.set_attr(appy_ir::kernel::ARG_NAMES, names.clone());
            }
        }
        return Ok(appy_ir::steps::of_module(&out).iter().map(|s| s.render()).collect());
    }
    if level == Level::Ptx {
        let (ptx, _) = appy_compiler::target::nvptx::to_ptx(&compiler.ctx, &out, &opts).map_err(|e| ir_error(&e))?;
        return Ok(ptx);
    }
    let parsed = compiler.ctx.load(&out).map_err(|e| ir_error(&e))?;
    printed.push_str(&appy_ir::mlir::pretty(&parsed, a.locations));
    printed.push('\n');
    Ok(printed)
}
