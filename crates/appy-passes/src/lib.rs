//! appy's passes, their registry, and pass pipelines.
//!
//! Every Rust pass lives in a file named after it (`appy-strip-mine` in
//! `strip_mine.rs`, `appy-gpu-outline` in `gpu_outline.rs`, ...), which also holds its
//! registry entry (`INFO`: name, description, options, constructor); [`PASSES`] lists
//! them, and `appy-opt --list-passes` prints each with its file. `tensor.rs` and
//! `util.rs` hold helpers shared by several passes.
//!
//! A pipeline is a comma-separated list in MLIR's textual syntax where every element is
//! either a Rust pass from the [`Registry`] (e.g. `appy-strip-mine{mvl=128}`) or an
//! upstream MLIR pass (e.g. `canonicalize`, `func.func(cse)`). Consecutive upstream
//! elements run as one `builtin.module(...)` pass manager; Rust passes run on the owned
//! mirror ([`appy_ir::ir`]). In debug builds (and so in the tests), and with
//! `APPY_VERIFY_EACH=1`, the module is printed, re-parsed and verified by MLIR after
//! each Rust pass ([`verify_each`]); otherwise the next MLIR stage verifies it.
#![warn(missing_docs)]
// `Diagnostic`, the error of everything that can reject a user's program, is large;
// boxing it would complicate every caller for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod cpu_alloc;
pub mod cpu_atomics;
pub mod cpu_blas;
pub mod cpu_exp;
pub mod cpu_fuse;
pub mod cpu_libm;
pub mod cpu_minmax;
pub mod cpu_openmp;
pub mod cpu_print;
pub mod cpu_strided;
pub mod cpu_vector_math;
pub mod cpu_wide_math;
pub mod cpu_zeros;
pub mod expand_erfc;
pub mod gpu_libm;
pub mod gpu_map_threads;
pub mod gpu_outline;
pub mod gpu_sink_loads;
pub mod hoist_allocas;
pub mod solve_library;
pub mod strip_mine;
pub mod tensor;
pub mod tensor_columns;
pub mod tensor_fuse;
pub mod tensor_library;
pub mod tensor_sync;
pub mod tensor_temporaries;
pub mod tensor_to_loops;
pub mod test_barriers;
pub mod uniform;
pub mod util;

use appy_ir::diag::IrError;
use appy_ir::ir::Module;
use appy_ir::mlir::{self, Ctx};

/// A pass over the owned mirror of a module.
pub trait Pass {
    /// The name used in pipelines.
    fn name(&self) -> &'static str;
    /// Rewrites the module; an error is located at the op it concerns.
    fn run(&self, m: &mut Module) -> Result<(), IrError>;
}

/// How to construct a registered pass from its options.
pub type PassCtor = fn(&PassOptions) -> Result<Box<dyn Pass>, String>;

/// A registered Rust pass (each pass file defines its own as `INFO`).
#[derive(Clone, Copy)]
pub struct PassInfo {
    /// Pipeline name.
    pub name: &'static str,
    /// One-line description (for `--list-passes`).
    pub description: &'static str,
    /// The options it takes, with their defaults (`("mvl", "1024")`).
    pub options: &'static [(&'static str, &'static str)],
    /// The source file that defines it (`file!()`).
    pub file: &'static str,
    /// Constructor.
    pub make: PassCtor,
}

/// Every Rust pass, in pipeline order.
pub const PASSES: &[PassInfo] = &[
    solve_library::INFO,
    tensor_library::INFO,
    tensor_temporaries::INFO,
    tensor_fuse::INFO,
    tensor_sync::INFO,
    tensor_to_loops::INFO,
    strip_mine::INFO,
    gpu_sink_loads::INFO,
    gpu_outline::INFO,
    gpu_map_threads::INFO,
    gpu_libm::INFO,
    expand_erfc::INFO,
    cpu_openmp::INFO,
    cpu_blas::INFO,
    cpu_fuse::INFO,
    cpu_minmax::INFO,
    cpu_zeros::INFO,
    hoist_allocas::INFO,
    cpu_exp::INFO,
    cpu_wide_math::INFO,
    cpu_libm::INFO,
    cpu_print::INFO,
    cpu_strided::INFO,
    cpu_alloc::INFO,
    cpu_vector_math::INFO,
    test_barriers::INFO,
];

/// A pass's options as given in a pipeline (`appy-strip-mine{mvl=128}`): `key=value`
/// pairs separated by spaces, each key one the pass declares; the parser for every pass.
pub struct PassOptions {
    info: PassInfo,
    given: Vec<(String, String)>,
}

impl PassOptions {
    /// Parses the text between the braces for pass `info`.
    pub fn parse(info: &PassInfo, text: &str) -> Result<PassOptions, String> {
        let mut given = vec![];
        for kv in text.split_whitespace() {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("bad option `{kv}` (expected key=value)"))?;
            if !info.options.iter().any(|(n, _)| *n == k) {
                let known: Vec<&str> = info.options.iter().map(|(n, _)| *n).collect();
                return Err(if known.is_empty() {
                    format!("unknown option `{k}` (the pass takes none)")
                } else {
                    format!("unknown option `{k}` (known: {})", known.join(", "))
                });
            }
            given.push((k.to_string(), v.to_string()));
        }
        Ok(PassOptions { info: *info, given })
    }

    /// The text of option `key`: as given, else its declared default.
    pub fn text(&self, key: &str) -> Result<&str, String> {
        if let Some((_, v)) = self.given.iter().rev().find(|(k, _)| k == key) {
            return Ok(v);
        }
        self.info
            .options
            .iter()
            .find(|(n, _)| *n == key)
            .map(|(_, d)| *d)
            .ok_or_else(|| format!("{} declares no option `{key}`", self.info.name))
    }

    /// An integer option.
    pub fn i64(&self, key: &str) -> Result<i64, String> {
        let v = self.text(key)?;
        v.parse().map_err(|_| format!("option {key} expects an integer, got `{v}`"))
    }

    /// The `mvl` option: lanes per worker, a power of two in [1, 4096].
    pub fn mvl(&self) -> Result<i64, String> {
        let mvl = self.i64("mvl")?;
        if mvl <= 0 || mvl > 4096 || mvl & (mvl - 1) != 0 {
            return Err(format!("mvl must be a power of two in [1, 4096], got {mvl}"));
        }
        Ok(mvl)
    }
}

/// The table of Rust passes addressable by name in pipelines.
pub struct Registry {
    passes: Vec<PassInfo>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// The registry with every pass of [`PASSES`].
    pub fn new() -> Self {
        Registry { passes: PASSES.to_vec() }
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
                let text = el[name_end..].strip_prefix('{').and_then(|x| x.strip_suffix('}')).unwrap_or("");
                let opts = PassOptions::parse(info, text).map_err(|e| format!("{name}: {e}"))?;
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
    pub fn run(&self, ctx: &Ctx, m: Module, mut after: Option<AfterPass<'_>>) -> Result<Module, IrError> {
        let mut m = m;
        for st in &self.stages {
            match st {
                Stage::Rust(p) => {
                    let _span = tracing::debug_span!("pass", name = p.name()).entered();
                    p.run(&mut m).map_err(|e| e.context(p.name()))?;
                    if after.is_none() && !verify_each() {
                        // Release builds: the next MLIR stage (or the PTX back end)
                        // parses, and so verifies, the module anyway.
                        continue;
                    }
                    // Verify: re-parse with MLIR.
                    let parsed = ctx
                        .load(&m)
                        .map_err(|e| e.context(format!("IR after {} does not verify (compiler bug)", p.name())))?;
                    if let Some(f) = after.as_deref_mut() {
                        f(p.name(), &mlir::pretty(&parsed, false));
                    }
                    m = mlir::import(&parsed);
                }
                Stage::Upstream(text) => {
                    let _span = tracing::debug_span!("pipeline", text = text.as_str()).entered();
                    let mut parsed = ctx.load(&m).map_err(|e| e.context(format!("IR before {text} does not verify")))?;
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
    *V.get_or_init(|| cfg!(debug_assertions) || appy_ir::config::verify_each())
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
