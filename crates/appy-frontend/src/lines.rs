//! Logical lines, indentation, and cutting one function out of a module.
//!
//! Python's lexical structure is line based: a *logical line* is one or more physical
//! lines joined inside `()`, `[]`, `{}`, after a trailing backslash, or inside a
//! triple-quoted string. [`logical_lines`] splits a whole file this way without ever
//! failing (the module may contain arbitrary Python we must skip). [`function_lines`]
//! then cuts a module-level function out by indentation, like `inspect.getsource`, and
//! [`build_blocks`] turns its body into a tree of blocks (Python's INDENT/DEDENT),
//! attaching `#pragma` comment lines to the statement that follows them.

use std::cmp::Ordering;

use appy_ir::diag::{DResult, Diagnostic, SourceFile, Span};

use crate::pragma::pragma_body;

/// CPython refuses more than 100 levels of indentation; so do we (it bounds recursion).
const MAX_INDENT_DEPTH: usize = 100;

/// What a logical line contains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LineKind {
    /// Only whitespace.
    Blank,
    /// Only a comment (`start..end` is the comment, `#` included).
    Comment,
    /// Code, possibly followed by a comment.
    Code,
}

/// The indentation of a line, measured the two ways CPython measures it (tabs to the
/// next multiple of 8, and tabs as one column); if the two disagree about which of two
/// lines is indented deeper, the use of tabs and spaces is inconsistent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Indent {
    tab8: usize,
    tab1: usize,
}

impl Indent {
    fn push(&mut self, b: u8) {
        match b {
            b'\t' => {
                self.tab8 = (self.tab8 / 8 + 1) * 8;
                self.tab1 += 1;
            }
            b'\x0c' => *self = Indent::default(),
            _ => {
                self.tab8 += 1;
                self.tab1 += 1;
            }
        }
    }

    /// Compares two indentations; `None` if tabs and spaces are mixed inconsistently.
    fn compare(self, other: Indent) -> Option<Ordering> {
        let a = self.tab8.cmp(&other.tab8);
        (a == self.tab1.cmp(&other.tab1)).then_some(a)
    }
}

/// One logical line of a file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawLine {
    /// First byte of its first physical line.
    pub line_start: usize,
    /// First byte after the indentation.
    pub start: usize,
    /// End of the logical line: before its final newline, trailing whitespace trimmed.
    pub end: usize,
    /// Blank, comment or code.
    pub kind: LineKind,
    /// Its indentation.
    pub indent: Indent,
}

impl RawLine {
    /// `start..end`.
    pub fn span(&self) -> Span {
        Span::new(self.start, self.end)
    }

    /// Not indented at all.
    pub fn at_module_level(&self) -> bool {
        self.start == self.line_start
    }

    /// Whether this is a comment line starting with `#pragma` / `# pragma`.
    pub fn is_pragma(&self, text: &str) -> bool {
        self.kind == LineKind::Comment && pragma_body(&text[self.start..self.end]).is_some()
    }

    /// The span of the first physical line of this logical line (for error carets).
    fn first_physical(&self, text: &str) -> Span {
        let end = text[self.start..self.end].find('\n').map_or(self.end, |i| self.start + i);
        Span::new(self.start, end.max(self.start))
    }
}

/// Splits `text` into logical lines. Never fails: unterminated strings and unbalanced
/// brackets simply run to the end of the line or file.
pub(crate) fn logical_lines(text: &str) -> Vec<RawLine> {
    let b = text.as_bytes();
    let n = b.len();
    let mut pos = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut out = Vec::new();
    while pos < n {
        let line_start = pos;
        let mut indent = Indent::default();
        while pos < n && matches!(b[pos], b' ' | b'\t' | b'\x0c' | b'\r') {
            if b[pos] != b'\r' {
                indent.push(b[pos]);
            }
            pos += 1;
        }
        let start = pos;
        let mut line = RawLine {
            line_start,
            start,
            end: start,
            kind: LineKind::Blank,
            indent,
        };
        if pos >= n || b[pos] == b'\n' {
            out.push(line);
            pos += 1;
            continue;
        }
        if b[pos] == b'#' {
            while pos < n && b[pos] != b'\n' {
                pos += 1;
            }
            line.kind = LineKind::Comment;
            line.end = trim_end(b, start, pos);
            out.push(line);
            pos += 1;
            continue;
        }
        let mut depth = 0usize;
        let end = loop {
            if pos >= n {
                break n;
            }
            match b[pos] {
                b'#' => {
                    while pos < n && b[pos] != b'\n' {
                        pos += 1;
                    }
                }
                q @ (b'\'' | b'"') => pos = skip_string(b, pos, q),
                b'(' | b'[' | b'{' => {
                    depth += 1;
                    pos += 1;
                }
                b')' | b']' | b'}' => {
                    depth = depth.saturating_sub(1);
                    pos += 1;
                }
                b'\\' => {
                    pos += match (b.get(pos + 1), b.get(pos + 2)) {
                        (Some(b'\n'), _) => 2,
                        (Some(b'\r'), Some(b'\n')) => 3,
                        _ => 1,
                    }
                }
                b'\n' if depth == 0 => {
                    let end = pos;
                    pos += 1;
                    break end;
                }
                _ => pos += 1,
            }
        };
        line.kind = LineKind::Code;
        line.end = trim_end(b, start, end);
        out.push(line);
    }
    out
}

/// `end` moved back over trailing whitespace, but not before `start`.
fn trim_end(b: &[u8], start: usize, mut end: usize) -> usize {
    while end > start && matches!(b[end - 1], b' ' | b'\t' | b'\r' | b'\x0c') {
        end -= 1;
    }
    end
}

/// The position after the string literal whose opening quote `q` is at `pos`. A
/// single-quoted string stops (unterminated) before the end of its line.
fn skip_string(b: &[u8], mut pos: usize, q: u8) -> usize {
    let n = b.len();
    let triple = pos + 2 < n && b[pos + 1] == q && b[pos + 2] == q;
    pos += if triple { 3 } else { 1 };
    while pos < n {
        match b[pos] {
            b'\\' => pos += 2,
            b'\n' if !triple => return pos,
            c if c == q => {
                if !triple {
                    return pos + 1;
                }
                if pos + 2 < n && b[pos + 1] == q && b[pos + 2] == q {
                    return pos + 3;
                }
                pos += 1;
            }
            _ => pos += 1,
        }
    }
    n
}

/// A module-level `def` and the decorator lines right above it.
#[derive(Clone, Debug)]
pub(crate) struct FuncDef {
    /// Indices (into the logical lines) of its decorators.
    pub decorators: Vec<usize>,
    /// Index of the `def` line.
    pub def: usize,
    /// The function's name.
    pub name: String,
    /// Where the name is written.
    pub name_span: Span,
}

/// Every module-level `def` of the file (decorated or not), in order.
pub(crate) fn module_functions(text: &str, lines: &[RawLine]) -> Vec<FuncDef> {
    let mut out = Vec::new();
    let mut decorators = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.kind != LineKind::Code {
            continue;
        }
        let src = &text[l.start..l.end];
        if !l.at_module_level() {
            decorators.clear();
        } else if src.starts_with('@') {
            decorators.push(i);
        } else if let Some((name, off)) = def_name(src) {
            let name_span = Span::new(l.start + off, l.start + off + name.len());
            out.push(FuncDef {
                decorators: std::mem::take(&mut decorators),
                def: i,
                // Python reads `def ｆ` as `def f` (NFKC); the span keeps the text as written.
                name: crate::ast::normalize_ident(&name),
                name_span,
            });
        } else {
            decorators.clear();
        }
    }
    out
}

/// For a line `def NAME...`, the name and its byte offset in the line.
fn def_name(src: &str) -> Option<(String, usize)> {
    let rest = src.strip_prefix("def")?;
    let after = rest.trim_start_matches([' ', '\t']);
    if after.len() == rest.len() {
        return None;
    }
    let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty()).then(|| (name, src.len() - after.len()))
}

/// The index range of the logical lines of function `f`: from its first decorator to
/// the last line of its body (lines after the `def` up to the next unindented code line,
/// minus trailing blank and comment lines, except indented `#pragma` lines, which must
/// still be reported as dangling).
pub(crate) fn function_lines(text: &str, lines: &[RawLine], f: &FuncDef) -> std::ops::Range<usize> {
    let first = f.decorators.first().copied().unwrap_or(f.def);
    let mut end = f.def + 1;
    while end < lines.len() && !(lines[end].kind == LineKind::Code && lines[end].at_module_level()) {
        end += 1;
    }
    while end > f.def + 1 {
        let l = &lines[end - 1];
        let keep = l.kind == LineKind::Code || (l.is_pragma(text) && !l.at_module_level());
        if keep {
            break;
        }
        end -= 1;
    }
    first..end
}

/// A statement line with its pragma and its indented block (if any).
#[derive(Clone, Debug)]
pub(crate) struct Node {
    /// The logical line (code only; its trailing comment included).
    pub span: Span,
    /// The span of its first physical line (for "unexpected indent" carets).
    pub first_line: Span,
    /// The `#pragma ...` comment line right above it, if any.
    pub pragma: Option<Span>,
    /// The lines indented deeper right after it.
    pub children: Vec<Node>,
}

/// Builds the block tree of a function body. `lines` are the logical lines after the
/// `def` line; `base` is the indentation of the `def`.
pub(crate) fn build_blocks(file: &SourceFile, lines: &[RawLine], base: Indent) -> DResult<Vec<Node>> {
    let text = file.text();
    let mut items: Vec<(RawLine, Option<RawLine>)> = Vec::new();
    let mut pending: Option<RawLine> = None;
    for l in lines {
        match l.kind {
            LineKind::Blank => {}
            LineKind::Comment => {
                if !l.is_pragma(text) {
                    continue;
                }
                if pending.is_some() {
                    return Err(Diagnostic::error(file, l.span(), "a statement can have only one pragma")
                        .with_note("help: merge the clauses into a single `#pragma` line"));
                }
                pending = Some(*l);
            }
            LineKind::Code => {
                let pragma = pending.take();
                if let Some(p) = pragma
                    && l.indent.tab8 < p.indent.tab8
                {
                    return Err(dangling_pragma(file, &p));
                }
                items.push((*l, pragma));
            }
        }
    }
    if let Some(p) = pending {
        return Err(dangling_pragma(file, &p));
    }
    let Some((first, _)) = items.first() else {
        return Ok(Vec::new());
    };
    match first.indent.compare(base) {
        Some(Ordering::Greater) => {}
        None => return Err(inconsistent_tabs(file, first)),
        Some(_) => {
            return Err(Diagnostic::error(file, first.first_physical(text), "expected an indented block"));
        }
    }
    let mut pos = 0;
    let nodes = block(file, &items, &mut pos, first.indent, 1)?;
    if let Some((l, _)) = items.get(pos) {
        return Err(unindent_mismatch(file, l));
    }
    Ok(nodes)
}

/// Parses the block of lines indented exactly `indent`, starting at `*pos`.
fn block(file: &SourceFile, items: &[(RawLine, Option<RawLine>)], pos: &mut usize, indent: Indent, depth: usize) -> DResult<Vec<Node>> {
    let text = file.text();
    let mut out = Vec::new();
    while let Some((line, pragma)) = items.get(*pos) {
        match line.indent.compare(indent) {
            None => return Err(inconsistent_tabs(file, line)),
            Some(Ordering::Less) => break,
            Some(Ordering::Greater) => {
                return Err(Diagnostic::error(file, line.first_physical(text), "unexpected indent"));
            }
            Some(Ordering::Equal) => {}
        }
        *pos += 1;
        let mut node = Node {
            span: line.span(),
            first_line: line.first_physical(text),
            pragma: pragma.map(|p| p.span()),
            children: Vec::new(),
        };
        if let Some((next, _)) = items.get(*pos) {
            match next.indent.compare(indent) {
                None => return Err(inconsistent_tabs(file, next)),
                Some(Ordering::Greater) => {
                    if depth >= MAX_INDENT_DEPTH {
                        return Err(Diagnostic::error(file, next.first_physical(text), "too many levels of indentation"));
                    }
                    node.children = block(file, items, pos, next.indent, depth + 1)?;
                    if let Some((after, _)) = items.get(*pos)
                        && after.indent.compare(indent) != Some(Ordering::Equal)
                        && after.indent.compare(indent) != Some(Ordering::Less)
                    {
                        return Err(unindent_mismatch(file, after));
                    }
                }
                Some(_) => {}
            }
        }
        out.push(node);
    }
    Ok(out)
}

fn dangling_pragma(file: &SourceFile, p: &RawLine) -> Diagnostic {
    Diagnostic::error(file, p.span(), "pragma is not followed by a statement")
        .with_note("help: a `#pragma` line applies to the statement right below it, in the same block")
}

fn inconsistent_tabs(file: &SourceFile, l: &RawLine) -> Diagnostic {
    Diagnostic::error(
        file,
        l.first_physical(file.text()),
        "inconsistent use of tabs and spaces in indentation",
    )
}

fn unindent_mismatch(file: &SourceFile, l: &RawLine) -> Diagnostic {
    Diagnostic::error(
        file,
        l.first_physical(file.text()),
        "unindent does not match any outer indentation level",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(LineKind, &str)> {
        logical_lines(text).iter().map(|l| (l.kind, &text[l.start..l.end])).collect()
    }

    #[test]
    fn joins_brackets_backslashes_and_triple_quotes() {
        let text = "x = (1,\n  2)  # c\ny = 1 + \\\n  2\n\n# note\ns = '''a\n(b\n'''\nt = 'it''s' # )\n";
        assert_eq!(
            kinds(text),
            vec![
                (LineKind::Code, "x = (1,\n  2)  # c"),
                (LineKind::Code, "y = 1 + \\\n  2"),
                (LineKind::Blank, ""),
                (LineKind::Comment, "# note"),
                (LineKind::Code, "s = '''a\n(b\n'''"),
                (LineKind::Code, "t = 'it''s' # )"),
            ]
        );
    }

    #[test]
    fn unterminated_things_do_not_panic() {
        for text in ["x = '''abc", "x = 'abc\ny = 1", "x = (((", "x = )))\ny", "\\", "'", "\u{feff}x\r\n"] {
            let _ = logical_lines(text);
        }
        assert_eq!(kinds("x = 'abc\ny = 1").len(), 2);
        assert_eq!(
            kinds("a\r\n\r\nb\r\n"),
            vec![(LineKind::Code, "a"), (LineKind::Blank, ""), (LineKind::Code, "b")]
        );
    }

    #[test]
    fn indentation_with_tabs() {
        let l = logical_lines("\tx\n        y\n    \tz\n");
        assert_eq!(l[0].indent.compare(l[1].indent), None);
        assert_eq!(l[0].indent.compare(l[2].indent), None);
        let l = logical_lines("\tx\n\t\ty\n");
        assert_eq!(l[0].indent.compare(l[1].indent), Some(Ordering::Less));
    }

    #[test]
    fn finds_module_functions_and_cuts_them() {
        let text = "@a\n# c\n@b\ndef f(x):\n    return x\n\n    # trailing\n\nclass C:\n    def g(self): pass\ndef h(): pass\n";
        let lines = logical_lines(text);
        let fs = module_functions(text, &lines);
        let names: Vec<_> = fs.iter().map(|f| (f.name.as_str(), f.decorators.len())).collect();
        assert_eq!(names, vec![("f", 2), ("h", 0)]);
        let r = function_lines(text, &lines, &fs[0]);
        assert_eq!(
            &text[lines[r.start].start..lines[r.end - 1].end],
            "@a\n# c\n@b\ndef f(x):\n    return x"
        );
    }
}
