//! Syntax errors in words a Python programmer knows: unclosed brackets, keywords appy
//! does not support, what pest expected.

use appy_ir::diag::{Diagnostic, SourceFile, Span};

use super::build::content_len;
use super::*;

/// Small builder helpers for [`Diagnostic`].
pub(super) trait DiagnosticExt {
    fn with_message(self, msg: impl Into<String>) -> Self;
    fn with_notes(self, note: Option<String>) -> Self;
}

impl DiagnosticExt for Diagnostic {
    fn with_message(mut self, msg: impl Into<String>) -> Self {
        self.message = msg.into();
        self
    }
    fn with_notes(mut self, note: Option<String>) -> Self {
        self.notes.extend(note);
        self
    }
}

/// The byte offset of the first bracket of `text` that is never closed.
pub(super) fn unclosed_bracket(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut stack = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'(' | b'[' | b'{' => stack.push(i),
            b')' | b']' | b'}' => {
                stack.pop();
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < b.len() && b[i] != q && b[i] != b'\n' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            _ => {}
        }
        i += 1;
    }
    stack.first().copied()
}

/// Statement keywords APPy rejects, with a message and a hint.
pub(super) fn unsupported_keyword(word: &str) -> Option<(&'static str, Option<&'static str>)> {
    Some(match word {
        "with" => ("`with` statements are not supported in APPy functions", None),
        "try" | "except" | "finally" => ("exception handling (`try`/`except`) is not supported in APPy functions", None),
        "raise" => (
            "`raise` is not supported in APPy functions",
            Some("help: check the inputs in the calling Python code"),
        ),
        "def" => (
            "nested function definitions are not supported in APPy functions",
            Some("help: inline the helper's code into the jitted function"),
        ),
        "class" => ("class definitions are not supported in APPy functions", None),
        "global" | "nonlocal" => (
            "`global`/`nonlocal` declarations are not supported in APPy functions",
            Some("help: pass the value as a parameter (use a 1-element array for outputs)"),
        ),
        "del" => ("`del` is not supported in APPy functions", None),
        "import" | "from" => (
            "imports inside APPy functions are not supported",
            Some("help: move the import to module level"),
        ),
        "yield" => ("generators (`yield`) are not supported in APPy functions", None),
        "async" | "await" => ("`async`/`await` is not supported in APPy functions", None),
        "lambda" => ("`lambda` expressions are not supported in APPy functions", None),
        _ => return None,
    })
}

pub(super) const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else", "except",
    "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
    "while", "with", "yield",
];

/// Turns a pest error on `text` (at byte `offset` of the file) into a diagnostic,
/// recognising the common unsupported constructs at the failure position.
pub(super) fn syntax_error(file: &SourceFile, offset: usize, text: &str, e: &pest::error::Error<Rule>) -> Diagnostic {
    let pos = match e.location {
        pest::error::InputLocation::Pos(p) => p,
        pest::error::InputLocation::Span((s, _)) => s,
    }
    .min(text.len());
    // pest reports the furthest position it tried, which can be inside a word (after a
    // string prefix such as the `r` of `raise`); report the whole word instead.
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let pos = if text[pos..].starts_with(is_word) {
        text[..pos]
            .char_indices()
            .rev()
            .take_while(|&(_, c)| is_word(c))
            .last()
            .map_or(pos, |(i, _)| i)
    } else {
        pos
    };
    let rest = &text[pos..];
    let word_len = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
    let word = &rest[..word_len];
    let tok_len = if word_len > 0 {
        word_len
    } else {
        rest.chars().next().map_or(0, char::len_utf8)
    };
    let span = Span::new(offset + pos, offset + pos + tok_len);
    let before = text[..pos].trim_end();
    let at_stmt_start = before.is_empty() || before.ends_with(':') || before.ends_with(';');
    let err = |msg: &str, note: Option<&str>| {
        let d = Diagnostic::error(file, span, msg);
        match note {
            Some(n) => d.with_note(n),
            None => d,
        }
    };
    if KEYWORDS.contains(&word) {
        let name_position = before.ends_with(['.', '(', ',', '='])
            || before.ends_with("def")
            || (rest[word_len..].trim_start().starts_with('=') && !rest[word_len..].trim_start().starts_with("=="));
        if name_position && !matches!(word, "lambda" | "yield" | "await" | "not" | "None" | "True" | "False") {
            return err(&format!("`{word}` is a keyword and cannot be used as a name"), None);
        }
        if let Some((msg, note)) = unsupported_keyword(word)
            && (at_stmt_start || matches!(word, "lambda" | "yield" | "await"))
        {
            return err(msg, note);
        }
        if word == "for" && !at_stmt_start {
            return err(
                "comprehensions and generator expressions are not supported in APPy functions",
                Some("help: write a `for` loop, or use a slice expression like `sum(a[:N])`"),
            );
        }
    }
    if rest.starts_with(":=") {
        return err(
            "assignment expressions (`:=`) are not supported in APPy functions",
            Some("help: assign the value in a separate statement"),
        );
    }
    if rest.starts_with("...") {
        return err("`...` (Ellipsis) is not supported in APPy functions", None);
    }
    if rest.starts_with('*') && (before.ends_with(['(', ',']) || before.is_empty()) {
        return err("`*`/`**` unpacking is not supported in APPy functions", None);
    }
    if let pest::error::ErrorVariant::CustomError { message } = &e.variant {
        // pest's own guards ("stack limit reached", "call limit reached").
        let d = Diagnostic::error(file, Span::new(offset, offset + text.len()), "expression is nested too deeply");
        return d.with_note(format!("help: split it into several statements ({message})"));
    }
    if content_len(rest) == 0 {
        if let Some(open) = unclosed_bracket(text) {
            let span = Span::new(offset + open, offset + open + 1);
            return Diagnostic::error(file, span, format!("`{}` was never closed", &text[open..open + 1]));
        }
        let end = offset + content_len(text);
        return Diagnostic::error(file, Span::new(end, end), "invalid syntax: unexpected end of line").with_notes(expected_note(e));
    }
    let tok = &rest[..tok_len];
    err(&format!("invalid syntax: unexpected `{tok}`"), expected_note(e).as_deref())
}

/// "expected ..." from the rules pest tried at the failure position.
pub(super) fn expected_note(e: &pest::error::Error<Rule>) -> Option<String> {
    let pest::error::ErrorVariant::ParsingError { positives, .. } = &e.variant else {
        return None;
    };
    let mut names: Vec<&str> = Vec::new();
    for r in positives {
        let n = match r {
            Rule::name
            | Rule::number
            | Rule::strings
            | Rule::string
            | Rule::paren
            | Rule::test
            | Rule::primary
            | Rule::factor
            | Rule::power
            | Rule::arith
            | Rule::term
            | Rule::comparison
            | Rule::not_test
            | Rule::kw_none
            | Rule::kw_true
            | Rule::kw_false
            | Rule::op_unary
            | Rule::kw_not
            | Rule::star_expr
            | Rule::walrus
            | Rule::slice_lo
            | Rule::argument
            | Rule::subscript
            | Rule::testlist
            | Rule::testlist_star => "an expression",
            Rule::op_bitor
            | Rule::op_bitxor
            | Rule::op_bitand
            | Rule::op_shift
            | Rule::op_arith
            | Rule::op_term
            | Rule::op_pow
            | Rule::comp_op
            | Rule::op_cmp
            | Rule::kw_and
            | Rule::kw_or
            | Rule::kw_if
            | Rule::kw_is => "an operator",
            Rule::call | Rule::index | Rule::attr => "`(`, `[` or `.`",
            Rule::eq | Rule::aug_op | Rule::augment | Rule::assign_tail | Rule::annotation => "`=`",
            Rule::trailing_comma => "`,`",
            Rule::kw_in => "`in`",
            Rule::kw_else => "`else`",
            Rule::EOI => "end of line",
            _ => continue,
        };
        if !names.contains(&n) {
            names.push(n);
        }
    }
    (!names.is_empty()).then(|| format!("expected {}", names.join(", ")))
}
