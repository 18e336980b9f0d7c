//! Source files, spans and located diagnostics (`FILE:LINE:COL: error: ...`).
//!
//! Every compiler error a user can see is a [`Diagnostic`]: a message, a primary
//! [`Span`] into a [`SourceFile`], and optional notes. [`Diagnostic::render`]
//! prints it with the offending source line and a caret, in the style of rustc
//! and miette.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// A half-open byte range `[start, end)` into a [`SourceFile`]'s text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// A named source text (a `.py` or `.mlir` file, or a string given by an API user).
#[derive(Clone, Debug)]
pub struct SourceFile {
    name: Arc<str>,
    text: Arc<str>,
    line_starts: Arc<[usize]>,
}

impl SourceFile {
    /// Wraps `text` under the display name `name`.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        let name: String = name.into();
        let text: String = text.into();
        let mut starts = vec![0];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                starts.push(i + 1);
            }
        }
        SourceFile {
            name: name.into(),
            text: text.into(),
            line_starts: starts.into(),
        }
    }
    /// Reads a file from disk.
    pub fn read(path: &std::path::Path) -> std::io::Result<Self> {
        Ok(Self::new(path.display().to_string(), std::fs::read_to_string(path)?))
    }
    /// Reads a source file from disk: a file that is not UTF-8 is an error at the line
    /// and column of its first invalid byte; one that cannot be read, an error naming it.
    pub fn load(path: &std::path::Path) -> Result<Self, Diagnostic> {
        let bytes = std::fs::read(path).map_err(|e| Diagnostic::bare(format!("cannot read {}: {e}", path.display())))?;
        Self::from_bytes(path.display().to_string(), bytes)
    }
    /// [`SourceFile::load`] for bytes in memory.
    pub fn from_bytes(name: impl Into<String>, bytes: Vec<u8>) -> Result<Self, Diagnostic> {
        match String::from_utf8(bytes) {
            Ok(text) => Ok(Self::new(name, text)),
            Err(e) => {
                let at = e.utf8_error().valid_up_to();
                let bad = e.as_bytes()[at];
                // The text up to the invalid byte is the same in the lossy copy, so the
                // offset locates it there (shown as U+FFFD).
                let lossy = String::from_utf8_lossy(e.as_bytes()).into_owned();
                let f = Self::new(name, lossy);
                Err(Diagnostic::error(
                    &f,
                    Span::new(at, at + '\u{FFFD}'.len_utf8()),
                    format!("the file is not valid UTF-8 (byte 0x{bad:02x})"),
                )
                .with_note("help: Python source files are UTF-8; save the file in that encoding"))
            }
        }
    }
    /// The display name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The whole text.
    pub fn text(&self) -> &str {
        &self.text
    }
    /// 1-based line and column (in characters) of byte offset `pos`.
    pub fn line_col(&self, pos: usize) -> (usize, usize) {
        let pos = pos.min(self.text.len());
        let line = match self.line_starts.binary_search(&pos) {
            Ok(l) => l,
            Err(l) => l - 1,
        };
        let start = self.line_starts[line];
        let col = self.text.get(start..pos).map(|s| s.chars().count()).unwrap_or(pos - start);
        (line + 1, col + 1)
    }
    /// The text of 1-based line `line`, without its newline.
    pub fn line_text(&self, line: usize) -> &str {
        if line == 0 || line > self.line_starts.len() {
            return "";
        }
        let start = self.line_starts[line - 1];
        let end = self.line_starts.get(line).copied().unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }
    /// Byte offset of 1-based `line` and `col` (characters), clamped to the text.
    pub fn offset(&self, line: usize, col: usize) -> usize {
        if line == 0 || line > self.line_starts.len() {
            return self.text.len();
        }
        let start = self.line_starts[line - 1];
        let text = self.line_text(line);
        let byte = text.char_indices().nth(col.saturating_sub(1)).map(|(b, _)| b).unwrap_or(text.len());
        start + byte
    }
}

/// Severity of a [`Diagnostic`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The program is rejected.
    Error,
    /// The program is accepted, but something in it is probably not what was meant
    /// (printed as `FILE:LINE:COL: warning: ...`).
    Warning,
    /// Informational, attached to an error.
    Note,
}

/// A located compiler message.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    /// Error or note.
    pub severity: Severity,
    /// What went wrong, in words a user understands.
    pub message: String,
    /// Where; `None` for errors with no source location (e.g. a missing file).
    pub span: Option<Span>,
    /// The file the span points into.
    pub file: Option<SourceFile>,
    /// Further hints ("help: write ... instead").
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// An error at `span` in `file`.
    pub fn error(file: &SourceFile, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span: Some(span),
            file: Some(file.clone()),
            notes: vec![],
        }
    }
    /// A warning at `span` in `file`.
    pub fn warning(file: &SourceFile, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(file, span, message)
        }
    }
    /// An error with no location.
    pub fn bare(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span: None,
            file: None,
            notes: vec![],
        }
    }
    /// A runtime error reported as a line `FILE:LINE:COL: error: message` (the status
    /// buffer's errors, [`crate::status`]) as a diagnostic located in `file`, which then
    /// renders with its source line; `None` when the line names another file or no
    /// position.
    pub fn from_runtime_line(file: &SourceFile, line: &str) -> Option<Diagnostic> {
        let rest = line.strip_prefix(file.name())?.strip_prefix(':')?;
        let mut it = rest.splitn(3, ':');
        let l: usize = it.next()?.parse().ok()?;
        let c: usize = it.next()?.parse().ok()?;
        let msg = it.next()?.strip_prefix(" error: ")?;
        if l == 0 || l > file.text().lines().count().max(1) {
            return None;
        }
        let off = file.offset(l, c);
        Some(Diagnostic::error(file, Span::new(off, off + 1), msg))
    }
    /// Adds a note or help line.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }
    /// `FILE:LINE:COL` of the primary span, if any.
    pub fn location(&self) -> Option<(String, usize, usize)> {
        let (f, s) = (self.file.as_ref()?, self.span?);
        let (l, c) = f.line_col(s.start);
        Some((f.name().to_string(), l, c))
    }
    /// The full rendering: `FILE:LINE:COL: error: message`, the source line, a caret line, notes.
    pub fn render(&self) -> String {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        };
        let mut out = String::new();
        match (&self.file, self.span) {
            (Some(f), Some(s)) => {
                let (l, c) = f.line_col(s.start);
                out.push_str(&format!("{}:{}:{}: {}: {}\n", f.name(), l, c, sev, self.message));
                let text = f.line_text(l);
                let (el, ec) = f.line_col(s.end.max(s.start + 1) - 1);
                let width = if el == l {
                    (ec + 1).saturating_sub(c).max(1)
                } else {
                    text.chars().count().saturating_sub(c - 1).max(1)
                };
                out.push_str(&format!("{:>5} | {}\n", l, text));
                out.push_str(&format!("      | {}{}\n", " ".repeat(c - 1), "^".repeat(width)));
            }
            (Some(f), None) => out.push_str(&format!("{}: {}: {}\n", f.name(), sev, self.message)),
            _ => out.push_str(&format!("{}: {}\n", sev, self.message)),
        }
        for n in &self.notes {
            out.push_str(&format!("      = {}\n", n));
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.render().trim_end())
    }
}

impl std::error::Error for Diagnostic {}

/// Result type of everything that can reject a user's program.
pub type DResult<T> = Result<T, Diagnostic>;

/// A source position as an MLIR location records it: `"k.py":3:5`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    /// The file name, as the frontend recorded it.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
}

impl Location {
    /// The first file position in an MLIR location's text (an op's `loc` in the owned
    /// mirror, without `loc(...)`): `"k.py":3:5`, also inside `fused[...]`, a
    /// name location's child or a call site.
    pub fn parse(text: &str) -> Option<Location> {
        let start = text.find('"')?;
        let rest = &text[start + 1..];
        let end = rest.find('"')?;
        let file = &rest[..end];
        let after = rest[end + 1..].strip_prefix(':');
        let Some(after) = after else {
            // A name location (`"x"(...)`): look further.
            return Location::parse(&rest[end + 1..]);
        };
        let mut nums = after.split(|c: char| !c.is_ascii_digit());
        let line = nums.next()?.parse().ok()?;
        let col = nums.next()?.parse().ok()?;
        Some(Location {
            file: file.to_string(),
            line,
            col,
        })
    }
    /// The span of this position in `file`, if it is that file.
    pub fn span_in(&self, file: &SourceFile) -> Option<Span> {
        (self.file == file.name()).then(|| {
            let off = file.offset(self.line, self.col);
            Span::new(off, off + 1)
        })
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// The start of an internal compiler error's message.
pub const ICE: &str = "internal compiler error (please report): ";

/// An error about IR, located at the source position of the op (or MLIR diagnostic) it
/// concerns: what the Rust passes and MLIR report. The compiler driver turns it into a
/// [`Diagnostic`] on the source file ([`IrError::to_diagnostic`]). Such errors are
/// compiler bugs (the frontend rejects what appy cannot compile), except those made
/// with [`IrError::user_at`]: a pass refusing what the program asked of it by name (a
/// loop transform of a pragma's `transform(...)` clause).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IrError {
    /// What went wrong.
    pub message: String,
    /// Where, if the IR knew.
    pub location: Option<Location>,
    /// Further messages (other MLIR diagnostics, their notes), each with its location.
    pub notes: Vec<(Option<Location>, String)>,
    /// The program's mistake, not the compiler's ([`IrError::user_at`]).
    pub user: bool,
}

impl IrError {
    /// An error with no location.
    pub fn new(message: impl Into<String>) -> Self {
        IrError {
            message: message.into(),
            location: None,
            notes: vec![],
            user: false,
        }
    }
    /// The program's error at the location of `op`: a request the pass refuses (an
    /// illegal transform), reported without the internal-error prefix.
    pub fn user_at(op: &crate::ir::Op, message: impl Into<String>) -> Self {
        IrError {
            user: true,
            ..IrError::at(op, message)
        }
    }
    /// An error at the location of `op`.
    pub fn at(op: &crate::ir::Op, message: impl Into<String>) -> Self {
        IrError::located(op.loc.as_deref(), message)
    }
    /// An error at an MLIR location text (an op's `loc`), if it names a file position.
    pub fn located(loc: Option<&str>, message: impl Into<String>) -> Self {
        IrError {
            location: loc.and_then(Location::parse),
            ..IrError::new(message)
        }
    }
    /// The same error with `context: ` before its message (e.g. the pass's name).
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }
    /// The diagnostic on `file`: an internal compiler error at the location when it is
    /// in `file`, with the notes.
    pub fn to_diagnostic(&self, file: &SourceFile) -> Diagnostic {
        self.diagnostic(file, if self.user { "" } else { ICE }, &[file.name()])
    }
    /// The diagnostic on `file` of an error in IR or a pipeline the user wrote
    /// (`appy-opt x.mlir`): the user's mistake, at the location when it is in `file`
    /// (MLIR names a buffer it parsed `-`), with the notes.
    pub fn to_user_diagnostic(&self, file: &SourceFile) -> Diagnostic {
        self.diagnostic(file, "", &[file.name(), "-"])
    }
    fn diagnostic(&self, file: &SourceFile, prefix: &str, names: &[&str]) -> Diagnostic {
        let text = format!("{prefix}{}", self.message);
        let span = self.location.as_ref().filter(|l| names.contains(&l.file.as_str())).map(|l| {
            let off = file.offset(l.line, l.col);
            Span::new(off, off + 1)
        });
        let mut d = match (span, &self.location) {
            (Some(span), _) => Diagnostic::error(file, span, text),
            (None, Some(l)) => Diagnostic::bare(format!("{l}: {text}")),
            (None, None) => Diagnostic::bare(text),
        };
        for (l, n) in &self.notes {
            d = d.with_note(match l {
                Some(l) => format!("note: {l}: {n}"),
                // What to write instead, as the frontend's diagnostics give it.
                None if n.starts_with("help: ") => n.clone(),
                None => format!("note: {n}"),
            });
        }
        d
    }
}

impl fmt::Display for IrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(l) = &self.location {
            write!(f, "{l}: ")?;
        }
        f.write_str(&self.message)?;
        for (l, n) in &self.notes {
            match l {
                Some(l) => write!(f, "\n  note: {l}: {n}")?,
                None => write!(f, "\n  note: {n}")?,
            }
        }
        Ok(())
    }
}

impl std::error::Error for IrError {}

impl From<IrError> for String {
    fn from(e: IrError) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_is_located() {
        let mut bytes = b"import appy\n\n@appy.jit\ndef f(a):\n    x = 1 # caf".to_vec();
        bytes.push(0xe9);
        bytes.extend_from_slice(b"\n    return x\n");
        let d = SourceFile::from_bytes("k.py", bytes).unwrap_err();
        let r = d.render();
        assert!(r.starts_with("k.py:5:16: error: the file is not valid UTF-8 (byte 0xe9)\n"), "{r}");
        assert!(r.contains("UTF-8; save the file"), "{r}");
        assert!(SourceFile::from_bytes("k.py", "é = 1\n".as_bytes().to_vec()).is_ok());
    }

    #[test]
    fn line_col_and_render() {
        let f = SourceFile::new("k.py", "def f(a):\n    x = a +\n");
        let pos = f.text().find('+').unwrap();
        assert_eq!(f.line_col(pos), (2, 11));
        let d = Diagnostic::error(&f, Span::new(pos, pos + 1), "expected an operand");
        let r = d.render();
        assert!(r.starts_with("k.py:2:11: error: expected an operand\n"), "{r}");
        assert!(r.contains("          ^"), "{r}");
        assert_eq!(f.offset(2, 11), pos);
    }

    #[test]
    fn locations_from_mlir_text() {
        let l = Location::parse("\"k.py\":3:5").unwrap();
        assert_eq!((l.file.as_str(), l.line, l.col), ("k.py", 3, 5));
        let fused = Location::parse("fused[\"a.py\":1:2, \"b.py\":3:4]").unwrap();
        assert_eq!(fused.file, "a.py");
        let named = Location::parse("\"x\"(\"k.py\":7:1)").unwrap();
        assert_eq!((named.file.as_str(), named.line), ("k.py", 7));
        assert!(Location::parse("unknown").is_none());
        let f = SourceFile::new("k.py", "a\nbcd\n");
        let d = IrError::located(Some("\"k.py\":2:2"), "boom").context("appy-x").to_diagnostic(&f);
        assert!(
            d.render()
                .starts_with("k.py:2:2: error: internal compiler error (please report): appy-x: boom"),
            "{}",
            d.render()
        );
    }
}
