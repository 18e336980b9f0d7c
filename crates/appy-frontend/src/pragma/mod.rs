//! `#pragma` comment lines: recognition and parsing into [`PragmaKind`].
//!
//! Supported forms:
//! - `parallel for` with clauses `simd`, `shared(a, b, ...)` and `transform(...)`
//!   (loop transforms, [`transform`]) in any order;
//! - `simd`, `sequential for`, `atomic`;
//! - tensor pragmas: whitespace-separated entries `lo:hi=>prop,prop` where `lo`/`hi` are
//!   optional expressions and each prop is `parallel`, `simd`, `reduce(op:var)` /
//!   `reduction(op:var)` (op in `sum max min + *`) or `le(N)`.

use appy_ir::diag::{DResult, Diagnostic, SourceFile, Span};

use crate::ast::{Ident, Pragma, PragmaKind, TensorDim, TensorProp};
use crate::parser;

mod transform;
pub(crate) use transform::transform_text;

/// If `comment` (a whole comment, `#` included) is a pragma, the byte offset right
/// after the word `pragma`.
pub(crate) fn pragma_body(comment: &str) -> Option<usize> {
    let rest = comment.strip_prefix('#')?.trim_start_matches([' ', '\t']);
    let after = rest.strip_prefix("pragma")?;
    if after.chars().next().is_some_and(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    Some(comment.len() - after.len())
}

/// Parses the pragma comment at `span` (the whole `#pragma ...` comment).
pub(crate) fn parse_pragma(file: &SourceFile, span: Span) -> DResult<Pragma> {
    let comment = &file.text()[span.start..span.end];
    let body = pragma_body(comment).unwrap_or(comment.len());
    let raw = &comment[body..];
    let lead = raw.len() - raw.trim_start().len();
    let text = raw.trim();
    let base = span.start + body + lead;
    let p = PragmaParser {
        file,
        text,
        base,
        whole: span,
    };
    let kind = p.parse()?;
    Ok(Pragma {
        kind,
        text: text.to_string(),
        span,
    })
}

/// A word or punctuation character of a keyword pragma, with its absolute span.
#[derive(Clone, Copy, Debug)]
struct Tok<'a> {
    text: &'a str,
    span: Span,
}

struct PragmaParser<'a> {
    file: &'a SourceFile,
    /// The pragma text after `#pragma`, trimmed.
    text: &'a str,
    /// Absolute offset of `text`.
    base: usize,
    /// The whole comment.
    whole: Span,
}

const EXPECTED: &str = "expected one of: parallel for, parallel for simd, simd, sequential for, atomic, \
                        or a tensor pragma like `:N=>parallel`";

impl<'a> PragmaParser<'a> {
    fn err(&self, span: Span, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.file, span, msg)
    }

    fn abs(&self, start: usize, end: usize) -> Span {
        Span::new(self.base + start, self.base + end)
    }

    fn unknown(&self) -> Diagnostic {
        let what = if self.text.is_empty() {
            "empty pragma".to_string()
        } else {
            format!("unknown pragma `{}`", self.text)
        };
        self.err(self.whole, format!("{what}; {EXPECTED}"))
    }

    fn tokens(&self) -> Vec<Tok<'a>> {
        let mut out = Vec::new();
        let mut it = self.text.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            if c.is_whitespace() {
                continue;
            }
            let mut end = i + c.len_utf8();
            if c.is_alphanumeric() || c == '_' {
                while let Some(&(j, d)) = it.peek() {
                    if !(d.is_alphanumeric() || d == '_') {
                        break;
                    }
                    end = j + d.len_utf8();
                    it.next();
                }
            }
            out.push(Tok {
                text: &self.text[i..end],
                span: self.abs(i, end),
            });
        }
        out
    }

    fn parse(&self) -> DResult<PragmaKind> {
        if self.text.contains("=>") {
            return self.tensor().map(PragmaKind::Tensor);
        }
        let toks = self.tokens();
        let words: Vec<&str> = toks.iter().map(|t| t.text).collect();
        let (kind, used) = match words.as_slice() {
            ["parallel", "for", ..] => return self.parallel_for(&toks[2..]),
            ["simd", ..] => (PragmaKind::Simd, 1),
            ["sequential", "for", ..] => (PragmaKind::SequentialFor, 2),
            ["atomic", ..] => (PragmaKind::Atomic, 1),
            _ => return Err(self.unknown()),
        };
        if let Some(extra) = toks.get(used) {
            let name = words[..used].join(" ");
            return Err(self
                .err(extra.span, format!("unexpected `{}` after `#pragma {name}`", extra.text))
                .with_note(format!("`#pragma {name}` takes no clauses")));
        }
        Ok(kind)
    }

    fn parallel_for(&self, toks: &[Tok<'a>]) -> DResult<PragmaKind> {
        let (mut simd, mut shared, mut transforms) = (false, Vec::new(), Vec::new());
        let mut i = 0;
        while let Some(t) = toks.get(i) {
            i += 1;
            match t.text {
                "simd" => simd = true,
                "transform" => i = self.transform_clause(toks, i, t, &mut transforms)?,
                "shared" => {
                    if toks.get(i).map(|t| t.text) != Some("(") {
                        return Err(self.err(t.span, "expected `(` after `shared`").with_note("write `shared(a, b)`"));
                    }
                    i += 1;
                    loop {
                        match toks.get(i) {
                            Some(v) if is_ident(v.text) => {
                                shared.push(Ident {
                                    name: crate::ast::normalize_ident(v.text),
                                    span: v.span,
                                });
                            }
                            Some(v) => {
                                return Err(self.err(v.span, format!("expected a variable name in `shared(...)`, found `{}`", v.text)));
                            }
                            None => return Err(self.err(t.span, "unterminated `shared(` clause")),
                        }
                        i += 1;
                        match toks.get(i).map(|t| t.text) {
                            Some(",") => i += 1,
                            Some(")") => {
                                i += 1;
                                break;
                            }
                            _ => {
                                return Err(self.err(t.span, "unterminated `shared(` clause").with_note("write `shared(a, b)`"));
                            }
                        }
                    }
                }
                other => {
                    return Err(self
                        .err(t.span, format!("unknown clause `{other}` in `#pragma parallel for`"))
                        .with_note("supported clauses: `simd`, `shared(var, ...)`, `transform(...)`"));
                }
            }
        }
        Ok(PragmaKind::ParallelFor { simd, shared, transforms })
    }

    /// Parses `lo:hi=>props lo:hi=>props ...`.
    fn tensor(&self) -> DResult<Vec<TensorDim>> {
        let t = self.text;
        let b = t.as_bytes();
        let mut dims = Vec::new();
        let mut pos = 0;
        loop {
            while pos < b.len() && b[pos].is_ascii_whitespace() {
                pos += 1;
            }
            if pos >= b.len() {
                break;
            }
            let Some(arrow) = t[pos..].find("=>").map(|i| pos + i) else {
                return Err(self
                    .err(
                        self.abs(pos, t.len()),
                        format!("expected `=>` in tensor pragma entry `{}`", &t[pos..]),
                    )
                    .with_note("a tensor pragma entry looks like `1:N-1=>parallel`"));
            };
            let (lower, upper) = self.slice(pos, arrow)?;
            let mut p = arrow + 2;
            while p < b.len() && b[p].is_ascii_whitespace() {
                p += 1;
            }
            let mut props = Vec::new();
            loop {
                let (prop, next) = self.prop(p)?;
                props.push(prop);
                p = next;
                let mut q = p;
                while q < b.len() && b[q].is_ascii_whitespace() {
                    q += 1;
                }
                if b.get(q) != Some(&b',') {
                    break;
                }
                p = q + 1;
                while p < b.len() && b[p].is_ascii_whitespace() {
                    p += 1;
                }
            }
            let text: String = t[pos..arrow].chars().filter(|c| !c.is_whitespace()).collect();
            dims.push(TensorDim {
                lower,
                upper,
                text,
                props,
                span: self.abs(pos, p),
            });
            pos = p;
        }
        Ok(dims)
    }

    /// The slice `text[start..end]` (before `=>`): `lo:hi` with optional sides.
    fn slice(&self, start: usize, end: usize) -> DResult<(Option<crate::ast::Expr>, Option<crate::ast::Expr>)> {
        let s = &self.text[start..end];
        let mut depth = 0i32;
        let mut colons = Vec::new();
        for (i, c) in s.char_indices() {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ':' if depth == 0 => colons.push(i),
                _ => {}
            }
        }
        let [colon] = colons[..] else {
            return Err(self
                .err(
                    self.abs(start, end.max(start + 1)),
                    format!("expected a slice `lo:hi` before `=>`, found `{}`", s.trim()),
                )
                .with_note("a tensor pragma entry looks like `1:N-1=>parallel` (either bound may be omitted)"));
        };
        let side = |a: usize, b: usize| -> DResult<Option<crate::ast::Expr>> {
            let part = &self.text[a..b];
            if part.trim().is_empty() {
                return Ok(None);
            }
            let lead = part.len() - part.trim_start().len();
            let trail = part.len() - part.trim_end().len();
            parser::parse_expr(self.file, self.abs(a + lead, b - trail)).map(Some)
        };
        Ok((side(start, start + colon)?, side(start + colon + 1, end)?))
    }

    /// One property starting at `pos`; returns it and the position after it.
    fn prop(&self, pos: usize) -> DResult<(TensorProp, usize)> {
        let t = self.text;
        let word_end = t[pos..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(t.len(), |i| pos + i);
        let word = &t[pos..word_end];
        let word_span = self.abs(pos, word_end.max(pos + 1).min(t.len().max(pos)));
        if word.is_empty() {
            return Err(self
                .err(word_span, "expected a property after `=>`")
                .with_note("properties: parallel, simd, reduce(op:var), le(N)"));
        }
        let args = if t[word_end..].starts_with('(') {
            let Some(close) = t[word_end..].find(')').map(|i| word_end + i) else {
                return Err(self.err(word_span, format!("unterminated `{word}(`")));
            };
            Some((word_end + 1, close))
        } else {
            None
        };
        let next = args.map_or(word_end, |(_, close)| close + 1);
        let no_args = |prop: TensorProp| -> DResult<(TensorProp, usize)> {
            match args {
                None => Ok((prop, next)),
                Some(_) => Err(self.err(word_span, format!("`{word}` takes no arguments"))),
            }
        };
        match word {
            "parallel" => no_args(TensorProp::Parallel),
            "simd" => no_args(TensorProp::Simd),
            "reduce" | "reduction" => {
                let Some((a, b)) = args else {
                    return Err(self.err(word_span, format!("expected `{word}(op:var)`")));
                };
                let inner = &t[a..b];
                let Some((op, var)) = inner.split_once(':') else {
                    return Err(self.err(self.abs(a, b), format!("expected `op:var` in `{word}(...)`, found `{inner}`")));
                };
                let op = op.trim();
                if !matches!(op, "sum" | "max" | "min" | "+" | "*") {
                    return Err(self
                        .err(
                            self.abs(a, a + inner.find(':').unwrap_or(0)),
                            format!("unknown reduction operator `{op}`"),
                        )
                        .with_note("supported: sum, max, min, +, *"));
                }
                let var_start = a + inner.find(':').unwrap_or(0) + 1;
                let lead = t[var_start..b].len() - t[var_start..b].trim_start().len();
                let name = var.trim();
                if !is_ident(name) {
                    return Err(self.err(self.abs(var_start, b), format!("expected a variable name, found `{name}`")));
                }
                let span = self.abs(var_start + lead, var_start + lead + name.len());
                Ok((
                    TensorProp::Reduce {
                        op: op.to_string(),
                        var: Ident {
                            name: crate::ast::normalize_ident(name),
                            span,
                        },
                    },
                    next,
                ))
            }
            "le" => {
                let Some((a, b)) = args else {
                    return Err(self.err(word_span, "expected `le(N)` with an integer N"));
                };
                let n = t[a..b].trim().replace('_', "");
                match n.parse::<i64>() {
                    Ok(v) => Ok((TensorProp::Le(v), next)),
                    Err(_) => Err(self.err(
                        self.abs(a, b),
                        format!("expected an integer in `le(...)`, found `{}`", t[a..b].trim()),
                    )),
                }
            }
            other => Err(self
                .err(word_span, format!("unknown tensor property `{other}`"))
                .with_note("properties: parallel, simd, reduce(op:var), le(N)")),
        }
    }
}

fn is_ident(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next().is_some_and(|c| c.is_alphabetic() || c == '_') && cs.all(|c| c.is_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_pragma_comments() {
        assert_eq!(pragma_body("#pragma simd"), Some(7));
        assert_eq!(pragma_body("# pragma simd"), Some(8));
        assert_eq!(pragma_body("#\tpragma"), Some(8));
        assert_eq!(pragma_body("#pragmatic"), None);
        assert_eq!(pragma_body("# a pragma"), None);
        assert_eq!(pragma_body("pragma"), None);
    }

    #[test]
    fn parses_pragma_text_with_offsets() {
        let file = SourceFile::new("p.py", "    #  pragma   parallel for shared(x)  ");
        let start = file.text().find('#').unwrap_or_default();
        let p = parse_pragma(&file, Span::new(start, file.text().trim_end().len())).unwrap();
        assert_eq!(p.text, "parallel for shared(x)");
        let PragmaKind::ParallelFor { shared, simd: false, .. } = p.kind else {
            panic!("{:?}", p.kind)
        };
        assert_eq!(file.line_col(shared[0].span.start), (1, 37));
    }

    #[test]
    fn is_ident_accepts_python_names() {
        assert!(is_ident("a_1") && is_ident("_") && is_ident("αβ"));
        assert!(!is_ident("1a") && !is_ident("") && !is_ident("a-b"));
    }
}
