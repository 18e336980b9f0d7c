//! appy's passes and pass pipelines.
//!
//! A pipeline is a comma-separated list in MLIR's textual syntax where every element is
//! either a Rust pass from the [`Registry`] (e.g. `appy-strip-mine{mvl=128}`) or an
//! upstream MLIR pass (e.g. `canonicalize`, `func.func(cse)`). Consecutive upstream
//! elements run as one `builtin.module(...)` pass manager; Rust passes run on the owned
//! mirror ([`appy_ir::ir`]) and the result is printed, re-parsed and verified by MLIR
//! after each one, so every pass's output is checked.
#![warn(missing_docs)]
// `Diagnostic`, the error of everything that can reject a user's program, is large;
// boxing it would complicate every caller for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod hoist_allocas;
pub mod solve_library;
pub mod strip_mine;
pub mod tensor;
pub mod tensor_fuse;
pub mod tensor_library;
pub mod tensor_sync;
pub mod tensor_temporaries;
pub mod tensor_to_loops;
pub mod util;

use appy_ir::ir::Module;
use appy_ir::mlir::{self, Ctx};

/// An error from a Rust pass, with the MLIR location of the offending op if known.
#[derive(Clone, Debug)]
pub struct PassError {
    /// What went wrong.
    pub message: String,
    /// MLIR location text (e.g. `"k.py":3:5`).
    pub loc: Option<String>,
}

impl PassError {
    /// An error at `loc`.
    pub fn new(message: impl Into<String>, loc: Option<String>) -> Self {
        PassError {
            message: message.into(),
            loc,
        }
    }
}

impl std::fmt::Display for PassError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.loc {
            Some(l) => write!(f, "{l}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// A pass over the owned mirror of a module.
pub trait Pass {
    /// The name used in pipelines.
    fn name(&self) -> &'static str;
    /// Rewrites the module.
    fn run(&self, m: &mut Module) -> Result<(), PassError>;
}

/// How to construct a registered pass from its options (`key=value` pairs).
pub type PassCtor = fn(&[(String, String)]) -> Result<Box<dyn Pass>, String>;

/// A registered Rust pass.
pub struct PassInfo {
    /// Pipeline name.
    pub name: &'static str,
    /// One-line description (for `--list-passes`).
    pub description: &'static str,
    /// Options, as documentation (e.g. `mvl=256`).
    pub options: &'static str,
    /// Constructor.
    pub make: PassCtor,
}

/// The table of Rust passes addressable by name in pipelines.
pub struct Registry {
    passes: Vec<PassInfo>,
}

fn opt_i64(opts: &[(String, String)], key: &str, default: i64) -> Result<i64, String> {
    match opts.iter().find(|(k, _)| k == key) {
        Some((_, v)) => v.parse().map_err(|_| format!("option {key} expects an integer, got `{v}`")),
        None => Ok(default),
    }
}

fn check_opts(opts: &[(String, String)], known: &[&str]) -> Result<(), String> {
    for (k, _) in opts {
        if !known.contains(&k.as_str()) {
            return Err(format!("unknown option `{k}` (known: {})", known.join(", ")));
        }
    }
    Ok(())
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// The registry with the passes of this crate.
    pub fn new() -> Self {
        let mut r = Registry { passes: vec![] };
        r.add(PassInfo {
            name: "appy-strip-mine",
            description: "appy → loops: strip-mine simd and parallel loops into MVL-wide lanes (scf.parallel {appy.lanes})",
            options: "mvl=1024",
            make: |o| {
                check_opts(o, &["mvl"])?;
                let mvl = opt_i64(o, "mvl", 1024)?;
                if mvl <= 0 || mvl > 4096 || mvl & (mvl - 1) != 0 {
                    return Err(format!("mvl must be a power of two in [1, 4096], got {mvl}"));
                }
                Ok(Box::new(strip_mine::StripMine { mvl }))
            },
        });
        r.add(PassInfo {
            name: "appy-tensor-temporaries",
            description: "split tensor statements that read their target through another slice (temporary array, seed 001 §5.1.1)",
            options: "",
            make: |o| {
                check_opts(o, &[])?;
                Ok(Box::new(tensor_temporaries::TensorTemporaries))
            },
        });
        r.add(PassInfo {
            name: "appy-tensor-fuse",
            description: "reduction-bounded fusion: split reductions used inside larger element-wise expressions (seed 001 §5.1.4)",
            options: "",
            make: |o| {
                check_opts(o, &[])?;
                Ok(Box::new(tensor_fuse::TensorFuse))
            },
        });
        r.add(PassInfo {
            name: "appy-tensor-library",
            description: "matrix products in tensor statements → appy.gemm (cuBLAS on the GPU)",
            options: "",
            make: |o| {
                check_opts(o, &[])?;
                Ok(Box::new(tensor_library::TensorLibrary))
            },
        });
        r.add(PassInfo {
            name: "appy-solve-library",
            description: "sequential loops computing a triangular solve or a Cholesky factorisation → appy.trsv / appy.potrf (cuBLAS / cuSOLVER on the GPU)",
            options: "",
            make: |o| {
                check_opts(o, &[])?;
                Ok(Box::new(solve_library::SolveLibrary))
            },
        });
        r.add(PassInfo {
            name: "appy-tensor-sync",
            description: "mark tensor statements in workers that need no barriers (appy.nosync, seed 001 §5.1.2)",
            options: "",
            make: |o| {
                check_opts(o, &[])?;
                Ok(Box::new(tensor_sync::TensorSync))
            },
        });
        r.add(PassInfo {
            name: "appy-tensor-to-loops",
            description: "lower appy.assign and the tensor ops to fused loop nests (seed 001 §5.1.3)",
            options: "",
            make: |o| {
                check_opts(o, &[])?;
                Ok(Box::new(tensor_to_loops::TensorToLoops))
            },
        });
        r.add(PassInfo {
            name: "appy-hoist-allocas",
            description: "move scalar slots (memref.alloca) to the entry block of their function",
            options: "",
            make: |o| {
                check_opts(o, &[])?;
                Ok(Box::new(hoist_allocas::HoistAllocas))
            },
        });
        r
    }
    /// Registers a pass (later registrations shadow earlier ones of the same name).
    pub fn add(&mut self, p: PassInfo) {
        self.passes.retain(|q| q.name != p.name);
        self.passes.push(p);
    }
    /// Looks a pass up.
    pub fn get(&self, name: &str) -> Option<&PassInfo> {
        self.passes.iter().find(|p| p.name == name)
    }
    /// All registered passes.
    pub fn all(&self) -> &[PassInfo] {
        &self.passes
    }
}

/// One stage of a pipeline.
pub enum Stage {
    /// A Rust pass.
    Rust(Box<dyn Pass>),
    /// An upstream pipeline (`builtin.module(...)` text).
    Upstream(String),
}

/// A callback receiving a stage's name and the IR printed after it.
pub type AfterPass<'a> = &'a mut dyn FnMut(&str, &str);

/// A parsed pipeline.
pub struct Pipeline {
    /// Stages in order.
    pub stages: Vec<Stage>,
}

/// Splits `a,b(c,d),e{x=1}` at top-level commas.
fn split_top(s: &str) -> Vec<String> {
    let mut out = vec![];
    let mut depth = 0i32;
    let mut cur = String::new();
    for ch in s.chars() {
        match ch {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth -= 1,
            _ => {}
        }
        if ch == ',' && depth == 0 {
            out.push(cur.trim().to_string());
            cur.clear();
        } else {
            cur.push(ch);
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

impl Pipeline {
    /// Parses pipeline text against a registry.
    pub fn parse(text: &str, reg: &Registry) -> Result<Pipeline, String> {
        let mut t = text.trim();
        if let Some(inner) = t.strip_prefix("builtin.module(").and_then(|x| x.strip_suffix(')')) {
            t = inner;
        }
        let mut stages = vec![];
        let mut upstream: Vec<String> = vec![];
        for el in split_top(t) {
            let name_end = el.find(['{', '(']).unwrap_or(el.len());
            let name = el[..name_end].trim();
            if let Some(info) = reg.get(name) {
                if !upstream.is_empty() {
                    stages.push(Stage::Upstream(format!("builtin.module({})", upstream.join(","))));
                    upstream.clear();
                }
                let mut opts = vec![];
                if let Some(o) = el[name_end..].strip_prefix('{').and_then(|x| x.strip_suffix('}')) {
                    for kv in o.split_whitespace() {
                        let (k, v) = kv.split_once('=').ok_or_else(|| format!("bad option `{kv}` for {name}"))?;
                        opts.push((k.to_string(), v.to_string()));
                    }
                }
                stages.push(Stage::Rust((info.make)(&opts).map_err(|e| format!("{name}: {e}"))?));
            } else {
                upstream.push(el);
            }
        }
        if !upstream.is_empty() {
            stages.push(Stage::Upstream(format!("builtin.module({})", upstream.join(","))));
        }
        Ok(Pipeline { stages })
    }

    /// Runs the pipeline. `after` is called with the stage name and the module's
    /// pretty text after each stage when IR printing is requested.
    pub fn run(&self, ctx: &Ctx, m: Module, mut after: Option<AfterPass<'_>>) -> Result<Module, String> {
        let mut m = m;
        for st in &self.stages {
            match st {
                Stage::Rust(p) => {
                    let _span = tracing::debug_span!("pass", name = p.name()).entered();
                    p.run(&mut m).map_err(|e| format!("{}: {e}", p.name()))?;
                    if after.is_none() && !verify_each() {
                        // Release builds: the next MLIR stage (or the PTX back end)
                        // parses, and so verifies, the module anyway.
                        continue;
                    }
                    // Verify: re-parse with MLIR.
                    let parsed = ctx
                        .load(&m)
                        .map_err(|e| format!("IR after {} does not verify (compiler bug): {e}", p.name()))?;
                    if let Some(f) = after.as_deref_mut() {
                        f(p.name(), &mlir::pretty(&parsed, false));
                    }
                    m = mlir::import(&parsed);
                }
                Stage::Upstream(text) => {
                    let _span = tracing::debug_span!("pipeline", text = text.as_str()).entered();
                    let mut parsed = ctx.load(&m).map_err(|e| format!("IR before {text} does not verify: {e}"))?;
                    ctx.run_pipeline(&mut parsed, text)?;
                    if let Some(f) = after.as_deref_mut() {
                        f(text, &mlir::pretty(&parsed, false));
                    }
                    m = mlir::import(&parsed);
                }
            }
        }
        Ok(m)
    }
}

/// Whether the IR is re-parsed and verified by MLIR after every Rust pass: always in
/// debug builds (and so in the tests), in release builds with `APPY_VERIFY_EACH=1`.
/// Without it, a release build verifies at the next MLIR stage, so a malformed module
/// is still caught, only attributed to the stage after the pass that made it.
pub fn verify_each() -> bool {
    static V: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *V.get_or_init(|| cfg!(debug_assertions) || std::env::var("APPY_VERIFY_EACH").is_ok_and(|v| !v.is_empty() && v != "0"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_mixed_pipeline() {
        let reg = Registry::new();
        let p = Pipeline::parse("builtin.module(canonicalize,cse,appy-strip-mine{mvl=64},func.func(cse))", &reg).unwrap();
        assert_eq!(p.stages.len(), 3);
        assert!(matches!(&p.stages[0], Stage::Upstream(t) if t == "builtin.module(canonicalize,cse)"));
        assert!(matches!(&p.stages[1], Stage::Rust(x) if x.name() == "appy-strip-mine"));
        assert!(Pipeline::parse("appy-strip-mine{mvl=3}", &reg).is_err());
        assert!(Pipeline::parse("appy-strip-mine{bogus=3}", &reg).is_err());
    }
}
