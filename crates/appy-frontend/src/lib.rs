//! appy's frontend: parses the APPy Python subset (pest grammar, real indentation
//! handling, spans on every node) and attaches `#pragma` directives.
//!
//! A source file is ordinary Python. [`jit_functions`] lists its module-level functions
//! decorated with `@appy.jit` (or `@jit`, or an alias of either); [`parse_function`]
//! parses the module-level imports and one of those functions into an [`ast::Program`],
//! skipping everything else in the file. [`dump`] prints a program as a tree.
//!
//! ```
//! use appy_frontend::{parse_function, ast::StmtKind};
//! use appy_ir::diag::SourceFile;
//!
//! let file = SourceFile::new("k.py", "import appy\n\n@appy.jit\ndef f(a, N):\n    #pragma parallel for\n    for i in range(N):\n        a[i] = 0.0\n");
//! let program = parse_function(&file, "f").unwrap();
//! assert!(matches!(program.function.body[0].kind, StmtKind::For { .. }));
//! assert!(program.function.body[0].pragma.is_some());
//! ```
#![warn(missing_docs)]
// `Diagnostic` (the error type of every fallible function here) is about 128 bytes;
// boxing it would complicate every caller for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod ast;
mod lines;
pub mod lower;
mod parser;
mod pragma;
mod print;
pub mod sema;

use appy_ir::diag::{DResult, Diagnostic, Severity, SourceFile, Span};

use crate::ast::{Expr, ExprKind, Function, Helper, Import, Program, Source};
use crate::lines::{FuncDef, LineKind, RawLine};
pub use crate::print::dump;
/// The Markdown table of supported functions in `docs/SUBSET.md` (generated from the
/// catalogue that lowering dispatches on).
pub use crate::sema::catalog::markdown as functions_markdown;

/// The module-level structure of a file: its logical lines, imports and functions.
struct Module<'f> {
    file: &'f SourceFile,
    lines: Vec<RawLine>,
    imports: Vec<Import>,
    functions: Vec<FuncDef>,
}

impl<'f> Module<'f> {
    fn scan(file: &'f SourceFile) -> Self {
        let text = file.text();
        let lines = lines::logical_lines(text);
        let imports = lines
            .iter()
            .filter(|l| l.kind == LineKind::Code && l.at_module_level())
            .filter(|l| {
                let src = &text[l.start..l.end];
                ["import", "from"].iter().any(|kw| {
                    src.strip_prefix(kw)
                        .is_some_and(|rest| rest.starts_with([' ', '\t', '\\', '.', '(']))
                })
            })
            .filter_map(|l| parser::parse_import(file, l.span()))
            .flatten()
            .collect();
        let functions = lines::module_functions(text, &lines);
        Module {
            file,
            lines,
            imports,
            functions,
        }
    }

    /// Names bound to the `appy` module, to `appy.jit`, and to APPy's individual-mode
    /// decorators `appy.shader` and `appy.cpu_shader`.
    fn jit_aliases(&self) -> (Vec<&str>, Vec<&str>, Vec<&str>) {
        let (mut modules, mut jits, mut shaders) = (vec!["appy"], vec!["jit"], vec![]);
        for imp in &self.imports {
            match imp {
                Import::Module { module, alias, .. } if module == "appy" => modules.push(alias),
                Import::From { module, names, .. } if module == "appy" => {
                    jits.extend(names.iter().filter(|(n, _)| n == "jit").map(|(_, a)| a.as_str()));
                    shaders.extend(names.iter().filter(|(n, _)| SHADERS.contains(&n.as_str())).map(|(_, a)| a.as_str()));
                }
                _ => {}
            }
        }
        (modules, jits, shaders)
    }

    /// The `@appy.jit` decorator of `f`, if it has one, and whether it is one of APPy's
    /// individual-mode decorators (`@appy.shader`, `@appy.cpu_shader`).
    fn jit_decorator(&self, f: &FuncDef) -> Option<(Expr, bool)> {
        let (modules, jits, shaders) = self.jit_aliases();
        // Some(shader?) when `e` names a jit decorator.
        let jit_ref = |e: &Expr| match &e.kind {
            ExprKind::Name(n) if jits.contains(&n.as_str()) => Some(false),
            ExprKind::Name(n) if shaders.contains(&n.as_str()) => Some(true),
            ExprKind::Attribute { value, attr } if matches!(&value.kind, ExprKind::Name(m) if modules.contains(&m.as_str())) => {
                if attr.name == "jit" {
                    Some(false)
                } else {
                    SHADERS.contains(&attr.name.as_str()).then_some(true)
                }
            }
            _ => None,
        };
        f.decorators.iter().find_map(|&i| {
            let e = parser::parse_decorator(self.file, self.lines[i].span()).ok()?;
            let shader = match &e.kind {
                ExprKind::Call { func, .. } => jit_ref(func),
                _ => jit_ref(&e),
            }?;
            Some((e, shader))
        })
    }
}

/// APPy's individual-mode decorators: a jitted function whose top-level `range` loops
/// are parallel (see `sema::desugar`, "shader").
const SHADERS: [&str; 2] = ["shader", "cpu_shader"];

/// The module-level functions of `file` decorated with `@appy.jit`, `@appy.jit(...)`,
/// `@jit` or `@jit(...)` (or aliases such as `import appy as ap` → `@ap.jit`, `from
/// appy import jit as j` → `@j`), in source order, each with the span of its name.
pub fn jit_functions(file: &SourceFile) -> Vec<(String, Span)> {
    let m = Module::scan(file);
    m.functions
        .iter()
        .filter(|f| m.jit_decorator(f).is_some())
        .map(|f| (f.name.clone(), f.name_span))
        .collect()
}

/// Parses the module-level imports of `file` and its jitted function `name` (the last
/// one, if several have that name). Everything else in the file is skipped. All spans
/// are byte offsets into the whole file.
pub fn parse_function(file: &SourceFile, name: &str) -> DResult<Program> {
    // Deep expressions recurse through parsing and desugaring: see `appy_ir::stack`.
    appy_ir::stack::deep(|| parse_function_on_stack(file, name))
}

fn parse_function_on_stack(file: &SourceFile, name: &str) -> DResult<Program> {
    let name = crate::ast::normalize_ident(name);
    let name = name.as_str();
    let m = Module::scan(file);
    let found = m
        .functions
        .iter()
        .rev()
        .filter(|f| f.name == name)
        .find_map(|f| Some((f, m.jit_decorator(f)?)));
    let Some((f, (decorator, shader))) = found else {
        return Err(missing_function(&m, name));
    };
    let (def, body, span) = parse_body(&m, f)?;
    let decorator_span = decorator.span;
    let mut options = match decorator.kind {
        ExprKind::Call { args, kwargs, .. } => {
            if let Some(a) = args.first() {
                return Err(Diagnostic::error(file, a.span, "`@appy.jit` options must be keyword arguments")
                    .with_note("help: write e.g. `@appy.jit(auto_simd=True)`"));
            }
            kwargs
        }
        _ => Vec::new(),
    };
    if shader {
        // `@appy.shader` is `@appy.jit(shader=True)`.
        options.push((
            ast::Ident {
                name: "shader".into(),
                span: decorator_span,
            },
            Expr {
                kind: ExprKind::Bool(true),
                span: decorator_span,
            },
        ));
    }
    tracing::debug!(function = name, statements = body.len(), "parsed APPy function");
    let function = Function {
        name: def.name,
        params: def.params,
        defaults: def.defaults,
        options,
        body,
        span,
    };
    // The file's other module-level functions, which the function may call (they are
    // inlined); one that does not parse is an error only if it is called.
    let helpers = m
        .functions
        .iter()
        .filter(|g| !std::ptr::eq(*g, f))
        .map(|g| {
            let parsed = parse_body(&m, g)
                .map(|(def, body, span)| Function {
                    name: def.name,
                    params: def.params,
                    defaults: def.defaults,
                    options: vec![],
                    body,
                    span,
                })
                .map_err(Box::new);
            Helper {
                name: g.name.clone(),
                span: g.name_span,
                function: parsed,
            }
        })
        .collect();
    Ok(Program {
        imports: m.imports,
        function,
        helpers,
        source: Source(file.clone()),
    })
}

/// Parses the `def` line and the body of a module-level function.
fn parse_body(m: &Module<'_>, f: &FuncDef) -> DResult<(parser::DefLine, Vec<ast::Stmt>, Span)> {
    let file = m.file;
    let text = file.text();
    let range = lines::function_lines(text, &m.lines, f);
    let def_line = &m.lines[f.def];
    let mut def = parser::parse_def(file, def_line.span())?;
    let nodes = lines::build_blocks(file, &m.lines[f.def + 1..range.end], def_line.indent)?;
    let body = match (def.inline.take(), nodes.first()) {
        (Some(_), Some(n)) => {
            return Err(Diagnostic::error(file, n.first_line, "unexpected indent"));
        }
        (Some(stmts), None) => stmts,
        (None, None) => {
            return Err(Diagnostic::error(
                file,
                def_line.span(),
                "expected an indented block after function definition",
            ));
        }
        (None, Some(_)) => parser::parse_block(file, &nodes)?,
    };
    let last = &m.lines[range.end - 1];
    let span = Span::new(def_line.start, last.end.max(def_line.end));
    Ok((def, body, span))
}

/// The error for a `name` that is not a jitted function of the file.
fn missing_function(m: &Module<'_>, name: &str) -> Diagnostic {
    let jitted: Vec<&str> = m
        .functions
        .iter()
        .filter(|f| m.jit_decorator(f).is_some())
        .map(|f| f.name.as_str())
        .collect();
    let available = if jitted.is_empty() {
        "the file has no `@appy.jit` functions".to_string()
    } else {
        format!("jitted functions: {}", jitted.join(", "))
    };
    if let Some(f) = m.functions.iter().rev().find(|f| f.name == name) {
        return Diagnostic::error(
            m.file,
            f.name_span,
            format!("function `{name}` is not decorated with `@appy.jit` ({available})"),
        )
        .with_note("help: add `@appy.jit` above its `def` line");
    }
    Diagnostic {
        severity: Severity::Error,
        message: format!("no function named `{name}` decorated with `@appy.jit`; {available}"),
        span: None,
        file: Some(m.file.clone()),
        notes: vec![],
    }
}
