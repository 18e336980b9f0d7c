//! The package's exceptions (defined in `appy/_errors.py`, so that they exist without
//! the extension under `APPY_DISABLE_JIT=1`), raised from Rust.

use appy_ir::diag::Diagnostic;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static COMPILE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static RUNTIME_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `appy.RuntimeError(msg)`.
pub fn runtime_error(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    match RUNTIME_ERROR.import(py, "appy._errors", "RuntimeError") {
        Ok(t) => PyErr::from_type(t.clone(), msg.into()),
        Err(e) => e,
    }
}

/// `appy.CompileError` for a diagnostic: `filename`/`lineno`/`offset` are the
/// diagnostic's location (in the user's file), or `fallback` (file, line) when it has
/// none; the message is the rendered diagnostic.
pub fn compile_error(py: Python<'_>, d: &Diagnostic, fallback: (&str, usize)) -> PyErr {
    let t = match COMPILE_ERROR.import(py, "appy._errors", "CompileError") {
        Ok(t) => t.clone(),
        Err(e) => return e,
    };
    let msg = d.render().trim_end().to_string();
    let (file, line, col, text) = match (&d.file, d.span) {
        (Some(f), Some(s)) => {
            let (l, c) = f.line_col(s.start);
            (f.name().to_string(), l, c, f.line_text(l).to_string())
        }
        (Some(f), None) => (f.name().to_string(), fallback.1, 0, f.line_text(fallback.1).to_string()),
        _ => (fallback.0.to_string(), fallback.1, 0, String::new()),
    };
    PyErr::from_type(t, (msg, (file, line, col, text)))
}
