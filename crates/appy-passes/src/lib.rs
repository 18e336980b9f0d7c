//! appy's passes, their registry, and pass pipelines.
//!
//! The passes are in folders by level, each in a file named after it without the level
//! (`appy-tensor-fuse` in `tensor/fuse.rs`, `appy-strip-mine` in `loops/strip_mine.rs`,
//! `appy-gpu-outline` in `gpu/outline.rs`, `appy-cpu-exp` in `cpu/exp.rs`), which also
//! holds its registry entry (`INFO`: name, description, options, constructor):
//! - `tensor/`: the `appy` level (library calls, tensor statements to loop nests);
//! - `loops/`: `appy` → `loops` (strip-mining and the named transforms);
//! - `kernel/`: `loops` → `kernel` (Loopy's kernel model, `appy-kernel-form`);
//! - `gpu/`: `loops` → `gpu` and the kernels' math;
//! - `cpu/`: `appy` → `cpu` → the LLVM dialect;
//! - `analyses/`: what passes share and nothing rewrites (`uniform.rs`, `barriers.rs`,
//!   and `affine` from `appy-ir`);
//! - at the top, passes both back ends run (`hoist_allocas.rs`, `expand_erfc.rs`, `half_in_f32.rs`) and
//!   helpers (`util.rs`).
//!
//! [`PASSES`] lists them, and `appy-opt --list-passes` prints each with its file.
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

pub mod analyses;
pub mod cpu;
pub mod expand_erfc;
pub mod gpu;
pub mod half_in_f32;
pub mod hoist_allocas;
pub mod kernel;
pub mod loops;
pub mod tensor;
pub mod util;

use appy_ir::diag::IrError;
use appy_ir::ir::Module;
use appy_ir::mlir::{self, Ctx};
use appy_ir::schedule::Tag;

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
    /// The options it takes: name, type, default and meaning, declared once.
    pub options: &'static [PassOpt],
    /// The source file that defines it (`file!()`).
    pub file: &'static str,
    /// Constructor.
    pub make: PassCtor,
}

/// Every Rust pass, in pipeline order.
pub const PASSES: &[PassInfo] = &[
    tensor::solve_library::INFO,
    tensor::library::INFO,
    tensor::temporaries::INFO,
    tensor::fuse::INFO,
    tensor::sync::INFO,
    tensor::to_loops::INFO,
    loops::schedule::INFO,
    loops::split_iname::INFO,
    loops::tag_inames::INFO,
    loops::reorder::INFO,
    loops::join_inames::INFO,
    loops::assume::INFO,
    loops::privatize::INFO,
    loops::strip_mine::INFO,
    loops::add_prefetch::INFO,
    loops::ilp::INFO,
    loops::unroll::INFO,
    kernel::form::INFO,
    gpu::sink_loads::INFO,
    gpu::outline::INFO,
    gpu::keep_reductions::INFO,
    gpu::map_threads::INFO,
    gpu::one_strip::INFO,
    gpu::unroll_and_jam::INFO,
    gpu::redundant_loads::INFO,
    gpu::vector_loads::INFO,
    gpu::libm::INFO,
    expand_erfc::INFO,
    half_in_f32::INFO,
    cpu::kernels::INFO,
    cpu::openmp::INFO,
    cpu::blas::INFO,
    cpu::fuse::INFO,
    cpu::minmax::INFO,
    cpu::zeros::INFO,
    hoist_allocas::INFO,
    cpu::exp::INFO,
    cpu::wide_math::INFO,
    cpu::libm::INFO,
    cpu::print::INFO,
    cpu::strided::INFO,
    cpu::alloc::INFO,
    cpu::vector_math::INFO,
    gpu::test_barriers::INFO,
];

/// What values a pass option accepts (the option's type).
#[derive(Clone, Copy, Debug)]
pub enum OptKind {
    /// An integer in `[min, max]`.
    Int {
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
    },
    /// A power of two in `[min, max]` (vector lengths).
    Pow2 {
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
    },
    /// `0` or `1`.
    Bool,
    /// A string of `0`/`1`, one per parameter of the function (empty: all `0`).
    Flags,
    /// A string of letters, each one of these (empty: none).
    Letters(&'static str),
    /// A Loopy iname tag (`g.0`, `l.0`, `unr`, `ilp`, `vec`, `ord`, `for`).
    Tag,
    /// An iname: letters, digits and `_`, not starting with a digit (empty: none).
    Iname,
    /// Inames with tags, `i:g.0,j:unr` (empty: none); the names may be globs.
    InameTags,
    /// The loops a transform addresses: an iname or a glob over inames (`j*`: the
    /// loops of source variable `j`); empty: none.
    Loops,
    /// Loopy's `within=` match expression over loops ([`analyses::within`]); empty:
    /// every loop.
    Within,
}

/// Whether `s` is a well-formed iname.
fn is_iname(s: &str) -> bool {
    !s.is_empty() && !s.starts_with(|c: char| c.is_ascii_digit()) && s.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Whether `s` is an iname or a glob over inames (`*`, `?`).
fn is_loop_pattern(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '*' || c == '?')
}

impl OptKind {
    /// Checks `v` against the type; the error says what was expected.
    pub fn check(self, v: &str) -> Result<(), String> {
        let int = || v.parse::<i64>().map_err(|_| format!("expects an integer, got `{v}`"));
        match self {
            OptKind::Int { min, max } => {
                let n = int()?;
                if n < min || n > max {
                    return Err(format!("must be in [{min}, {max}], got {n}"));
                }
            }
            OptKind::Pow2 { min, max } => {
                let n = int()?;
                if n < min || n > max || n & (n - 1) != 0 {
                    return Err(format!("must be a power of two in [{min}, {max}], got {n}"));
                }
            }
            OptKind::Bool => {
                if v != "0" && v != "1" {
                    return Err(format!("expects 0 or 1, got `{v}`"));
                }
            }
            OptKind::Flags => {
                if let Some(c) = v.chars().find(|c| *c != '0' && *c != '1') {
                    return Err(format!("expects one 0 or 1 per parameter, got `{c}` in `{v}`"));
                }
            }
            OptKind::Letters(set) => {
                if let Some(c) = v.chars().find(|c| !set.contains(*c)) {
                    return Err(format!("expects letters from `{set}`, got `{c}` in `{v}`"));
                }
            }
            OptKind::Tag => {
                v.parse::<Tag>()?;
            }
            OptKind::Iname => {
                if !v.is_empty() && !is_iname(v) {
                    return Err(format!("expects a loop name (letters, digits, `_`), got `{v}`"));
                }
            }
            OptKind::InameTags => {
                parse_iname_tags(v)?;
            }
            OptKind::Loops => {
                if !v.is_empty() && !is_loop_pattern(v) {
                    return Err(format!(
                        "expects a loop name or a glob over names (letters, digits, `_`, `*`, `?`), got `{v}`"
                    ));
                }
            }
            OptKind::Within => {
                if !v.is_empty() {
                    analyses::within::Within::parse(v)?;
                }
            }
        }
        Ok(())
    }

    /// The type as `--list-passes` prints it.
    pub fn describe(self) -> String {
        match self {
            OptKind::Int { min, max } => format!("int in [{min}, {max}]"),
            OptKind::Pow2 { min, max } => format!("power of two in [{min}, {max}]"),
            OptKind::Bool => "0|1".into(),
            OptKind::Flags => "0/1 per parameter".into(),
            OptKind::Letters(set) => format!("letters of `{set}`"),
            OptKind::Tag => "tag".into(),
            OptKind::Iname => "iname".into(),
            OptKind::InameTags => "iname:tag,...".into(),
            OptKind::Loops => "iname or glob".into(),
            OptKind::Within => "match expression".into(),
        }
    }
}

/// One option of a pass, declared in its `INFO` (in the spirit of Triton's Passes.td:
/// name, type, default and meaning in one place; `--list-passes` prints them and the
/// pipeline parser checks values against them).
#[derive(Clone, Copy, Debug)]
pub struct PassOpt {
    /// The key (`mvl`).
    pub name: &'static str,
    /// Its type.
    pub kind: OptKind,
    /// The value when not given.
    pub default: &'static str,
    /// What it means.
    pub help: &'static str,
}

impl PassOpt {
    /// `mvl`: lanes per worker, a power of two in [1, 4096], 1024 by default.
    pub const MVL: PassOpt = PassOpt {
        name: "mvl",
        kind: OptKind::Pow2 { min: 1, max: 4096 },
        default: "1024",
        help: "lanes per worker (the maximum vector length)",
    };
    /// `cpu`: compile for the CPU back end (0 by default).
    pub const CPU: PassOpt = PassOpt {
        name: "cpu",
        kind: OptKind::Bool,
        default: "0",
        help: "for the CPU back end",
    };
    /// `within`: Loopy's match expression restricting the loops a transform addresses
    /// (every loop by default).
    pub const WITHIN: PassOpt = PassOpt {
        name: "within",
        kind: OptKind::Within,
        default: "",
        help: "only the loops matching this expression (iname:, writes:, reads:, func:, line:, and, or, not)",
    };
    /// `strided`: which parameters take strided views (none by default).
    pub const STRIDED: PassOpt = PassOpt {
        name: "strided",
        kind: OptKind::Flags,
        default: "",
        help: "the parameters passed as strided views",
    };
}

/// A pass's options as given in a pipeline (`appy-strip-mine{mvl=128}`): `key=value`
/// pairs separated by spaces, each key one the pass declares and each value of its type;
/// the parser for every pass.
pub struct PassOptions {
    info: PassInfo,
    given: Vec<(String, String)>,
}

impl PassOptions {
    /// Parses the text between the braces for pass `info`, checking every value
    /// against its declared type.
    pub fn parse(info: &PassInfo, text: &str) -> Result<PassOptions, String> {
        let mut given = vec![];
        for kv in option_words(text)? {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("bad option `{kv}` (expected key=value)"))?;
            // A value with spaces is quoted: within="writes:b and not iname:k".
            let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v);
            let Some(opt) = info.options.iter().find(|o| o.name == k) else {
                let known: Vec<&str> = info.options.iter().map(|o| o.name).collect();
                return Err(if known.is_empty() {
                    format!("unknown option `{k}` (the pass takes none)")
                } else {
                    format!("unknown option `{k}` (known: {})", known.join(", "))
                });
            };
            opt.kind.check(v).map_err(|e| format!("option {k} {e}"))?;
            given.push((k.to_string(), v.to_string()));
        }
        Ok(PassOptions { info: *info, given })
    }

    /// The text of option `key`: as given, else its declared default.
    fn text(&self, key: &str) -> Result<&str, String> {
        if let Some((_, v)) = self.given.iter().rev().find(|(k, _)| k == key) {
            return Ok(v);
        }
        self.info
            .options
            .iter()
            .find(|o| o.name == key)
            .map(|o| o.default)
            .ok_or_else(|| format!("{} declares no option `{key}`", self.info.name))
    }

    /// An integer option (`Int` or `Pow2`).
    pub fn int(&self, key: &str) -> Result<i64, String> {
        let v = self.text(key)?;
        v.parse().map_err(|_| format!("option {key} expects an integer, got `{v}`"))
    }

    /// A `Bool` option.
    pub fn flag(&self, key: &str) -> Result<bool, String> {
        Ok(self.text(key)? == "1")
    }

    /// A `Flags` option: one flag per parameter.
    pub fn flags(&self, key: &str) -> Result<Vec<bool>, String> {
        Ok(self.text(key)?.chars().map(|c| c == '1').collect())
    }

    /// A `Letters` option.
    pub fn letters(&self, key: &str) -> Result<String, String> {
        Ok(self.text(key)?.to_string())
    }

    /// A `Tag` option.
    pub fn tag(&self, key: &str) -> Result<Tag, String> {
        self.text(key)?.parse()
    }

    /// An `Iname` option (empty when not given and without a default).
    pub fn iname(&self, key: &str) -> Result<String, String> {
        Ok(self.text(key)?.to_string())
    }

    /// An `InameTags` option.
    pub fn iname_tags(&self, key: &str) -> Result<Vec<(String, Tag)>, String> {
        parse_iname_tags(self.text(key)?)
    }

    /// A `Loops` option (empty when not given and without a default).
    pub fn loops(&self, key: &str) -> Result<String, String> {
        Ok(self.text(key)?.to_string())
    }

    /// The `within` option ([`PassOpt::WITHIN`]): `None` when not given.
    pub fn within(&self) -> Result<Option<analyses::within::Within>, String> {
        let v = self.text("within")?;
        if v.is_empty() {
            return Ok(None);
        }
        analyses::within::Within::parse(v).map(Some)
    }

    /// The `mvl` option ([`PassOpt::MVL`]).
    pub fn mvl(&self) -> Result<i64, String> {
        self.int("mvl")
    }
}

/// The `key=value` words of a pass's options: separated by spaces, except inside
/// double quotes.
fn option_words(text: &str) -> Result<Vec<String>, String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut quoted = false;
    for c in text.chars() {
        if c == '"' {
            quoted = !quoted;
            cur.push(c);
        } else if c.is_whitespace() && !quoted {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
    }
    if quoted {
        return Err(format!("an option's quote is not closed in `{text}`"));
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    Ok(out)
}

/// Parses `i:g.0,j:unr` (an `InameTags` option).
fn parse_iname_tags(v: &str) -> Result<Vec<(String, Tag)>, String> {
    let mut out = vec![];
    for item in v.split(',').filter(|x| !x.is_empty()) {
        let (name, tag) = item
            .split_once(':')
            .ok_or_else(|| format!("expects `iname:tag` items, got `{item}`"))?;
        if !is_loop_pattern(name) {
            return Err(format!("expects a loop name or glob before `:`, got `{name}`"));
        }
        out.push((name.to_string(), tag.parse::<Tag>()?));
    }
    Ok(out)
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
                    // A refused request (a user error) speaks for itself; a failure is
                    // the pass's.
                    p.run(&mut m).map_err(|e| if e.user { e } else { e.context(p.name()) })?;
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

    #[test]
    fn options_are_checked_against_their_types() {
        let reg = Registry::new();
        let err = |p: &str| Pipeline::parse(p, &reg).err().unwrap_or_default();
        assert!(err("appy-strip-mine{mvl=96}").contains("mvl must be a power of two in [1, 4096], got 96"));
        assert!(err("appy-strip-mine{mvl=x}").contains("mvl expects an integer"));
        assert!(err("appy-cpu-openmp{openmp=2}").contains("openmp expects 0 or 1"));
        assert!(err("appy-cpu-strided{args=10x}").contains("got `x`"));
        assert!(err("appy-cpu-vector-math{isa=bq}").contains("letters from `bcde`"));
        assert!(Pipeline::parse("appy-cpu-vector-math{isa=bd full=0},appy-cpu-strided{args=101}", &reg).is_ok());
        assert!(OptKind::Tag.check("g.1").is_ok() && OptKind::Tag.check("g.7").is_err());
        assert!(err("appy-split-iname{iname=2j}").contains("expects a loop name"));
        assert!(err("appy-tag-inames{tags=j:unr,k}").contains("expects `iname:tag` items, got `k`"));
        assert!(err("appy-tag-inames{tags=j:par}").contains("unknown tag `par`"));
        assert!(Pipeline::parse("appy-tag-inames{tags=j:unr,k_1:ilp}", &reg).is_ok());
    }

    #[test]
    fn every_declared_default_has_its_type() {
        for p in PASSES {
            for o in p.options {
                assert!(o.kind.check(o.default).is_ok(), "{} {}={}", p.name, o.name, o.default);
                assert!(!o.help.is_empty());
            }
            let opts = PassOptions::parse(p, "").unwrap();
            assert!((p.make)(&opts).is_ok(), "{} with its defaults", p.name);
        }
    }
}
