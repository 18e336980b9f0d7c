//! From the pest parse of each logical line to the [`ast`](crate::ast).
//!
//! Every logical line is parsed on its own (with the rules of `grammar.pest`), at its
//! byte offset in the file, so all spans point into the whole file. Blocks come from
//! [`lines::build_blocks`](crate::lines::build_blocks).

use appy_ir::diag::{DResult, Diagnostic, SourceFile, Span};
use pest::Parser as _;
use pest::iterators::Pair;

use crate::ast::*;
use crate::lines::Node;
use crate::pragma;

mod build;
mod errors;

use build::Ctx;
use errors::*;

/// The pest parser of one logical line.
#[derive(pest_derive::Parser)]
#[grammar = "grammar.pest"]
struct LineParser;

/// Bracket nesting deeper than this is refused (CPython refuses 200); it bounds recursion.
pub(crate) const MAX_NESTING: usize = 100;

use appy_ir::stack::MAX_EXPR_DEPTH;

/// The depth of an expression tree (a leaf is 1), without recursion.
pub(crate) fn expr_depth(e: &Expr) -> usize {
    let mut max = 0;
    let mut stack = vec![(e, 1usize)];
    while let Some((e, d)) = stack.pop() {
        max = max.max(d);
        e.for_each_child(&mut |c| stack.push((c, d + 1)));
    }
    max
}

/// Parses `file.text()[span]` with `rule`; the pair of the entry rule.
fn parse_rule(file: &SourceFile, span: Span, rule: Rule) -> DResult<Pair<'_, Rule>> {
    let text = &file.text()[span.start..span.end];
    if nesting_risk(text) > MAX_NESTING {
        return Err(Diagnostic::error(file, span, "expression is nested too deeply").with_note("help: split it into several statements"));
    }
    match LineParser::parse(rule, text) {
        Ok(mut pairs) => pairs.next().ok_or_else(|| Diagnostic::error(file, span, "invalid syntax")),
        Err(e) => Err(syntax_error(file, span.start, text, &e)),
    }
}

/// An upper bound of how deeply the parse of `text` recurses: bracket nesting plus the
/// operators parsed by right recursion (prefix operators, `**`, `not`, the `else` of
/// conditional expressions). Flat left-associative chains (`a + b + ...`, `x and y and
/// ...`, `-a + -b + ...`, `a**2 + b**2 + ...`) are parsed by iteration and add nothing:
/// a run of right-recursive operators ends at the next binary operator, except a run of
/// `else`s, which only a closing bracket ends.
fn nesting_risk(text: &str) -> usize {
    // Per open bracket: the runs pending outside it (they nest around its contents).
    let mut outer: Vec<(usize, usize)> = vec![];
    let (mut run, mut cond_run, mut risk) = (0usize, 0usize, 0usize);
    let b = text.as_bytes();
    let mut prev_operand = false;
    let mut i = 0;
    let mut bump = |outer: &Vec<(usize, usize)>, run: usize, cond_run: usize| {
        let pending: usize = outer.iter().map(|(r, c)| r + c).sum();
        risk = risk.max(outer.len() + pending + run + cond_run);
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b'(' | b'[' | b'{' => {
                outer.push((run, cond_run));
                (run, cond_run) = (0, 0);
                bump(&outer, run, cond_run);
                prev_operand = false;
            }
            b')' | b']' | b'}' => {
                (run, cond_run) = outer.pop().unwrap_or((0, 0));
                prev_operand = true;
            }
            b'\'' | b'"' => {
                // Skip the string (escapes included); its contents do not nest.
                let q = c;
                i += 1;
                while i < b.len() && b[i] != q {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                prev_operand = true;
            }
            b'-' | b'+' | b'~' if !prev_operand => {
                run += 1;
                bump(&outer, run, cond_run);
            }
            b'*' if b.get(i + 1) == Some(&b'*') => {
                run += 1;
                bump(&outer, run, cond_run);
                prev_operand = false;
                i += 1;
            }
            c if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                    i += 1;
                }
                let word = &text[start..i];
                match word {
                    "not" => run += 1,
                    "else" => cond_run += 1,
                    "and" | "or" | "in" | "is" | "if" | "lambda" => run = 0,
                    _ => {}
                }
                bump(&outer, run, cond_run);
                prev_operand = !matches!(word, "not" | "if" | "else" | "lambda" | "and" | "or" | "in" | "is");
                continue;
            }
            c if c.is_ascii_whitespace() => {}
            // Any other operator or separator ends a run of right-recursive operators.
            _ => {
                run = 0;
                prev_operand = false;
            }
        }
        i += 1;
    }
    risk
}

/// Parses one expression written at `span` (used for tensor-pragma slice bounds).
pub(crate) fn parse_expr(file: &SourceFile, span: Span) -> DResult<Expr> {
    let line = parse_rule(file, span, Rule::expr_line)?;
    let cx = Ctx { file, offset: span.start };
    cx.expr(first_inner(line, file, span)?)
}

fn first_inner<'i>(p: Pair<'i, Rule>, file: &SourceFile, span: Span) -> DResult<Pair<'i, Rule>> {
    p.into_inner()
        .find(|q| q.as_rule() != Rule::EOI)
        .ok_or_else(|| Diagnostic::error(file, span, "invalid syntax"))
}

/// Parses a module-level import line; `None` if it is not a well-formed import.
pub(crate) fn parse_import(file: &SourceFile, span: Span) -> Option<Vec<Import>> {
    let line = parse_rule(file, span, Rule::import_line).ok()?;
    let stmt = line.into_inner().next()?;
    let dotted = |p: Pair<'_, Rule>| p.into_inner().map(|n| normalize_ident(n.as_str())).collect::<Vec<_>>().join(".");
    match stmt.as_rule() {
        Rule::import_name => Some(
            stmt.into_inner()
                .filter(|p| p.as_rule() == Rule::dotted_as)
                .map(|p| {
                    let mut it = p.into_inner();
                    let module = it.next().map(dotted).unwrap_or_default();
                    match it.find(|q| q.as_rule() == Rule::name) {
                        Some(a) => Import::Module {
                            module,
                            alias: normalize_ident(a.as_str()),
                            span,
                        },
                        // `import scipy.special` binds `scipy`, the top-level package.
                        None => {
                            let top = module.split('.').next().unwrap_or_default().to_string();
                            Import::Module {
                                module: top.clone(),
                                alias: top,
                                span,
                            }
                        }
                    }
                })
                .collect(),
        ),
        Rule::import_from => {
            let mut module = String::new();
            let mut names = Vec::new();
            for p in stmt.into_inner() {
                match p.as_rule() {
                    Rule::from_module => {
                        for q in p.into_inner() {
                            match q.as_rule() {
                                Rule::rel_dots => module.push_str(q.as_str()),
                                _ => module.push_str(&dotted(q)),
                            }
                        }
                    }
                    Rule::import_as_list => {
                        for q in p.into_inner() {
                            let ns: Vec<String> = q
                                .into_inner()
                                .filter(|n| n.as_rule() == Rule::name)
                                .map(|n| normalize_ident(n.as_str()))
                                .collect();
                            let alias = ns.get(1).unwrap_or(&ns[0]).clone();
                            names.push((ns[0].clone(), alias));
                        }
                    }
                    Rule::import_star => names.push(("*".to_string(), "*".to_string())),
                    _ => {}
                }
            }
            Some(vec![Import::From { module, names, span }])
        }
        _ => None,
    }
}

/// Parses a decorator line (`@expr`) into its expression.
pub(crate) fn parse_decorator(file: &SourceFile, span: Span) -> DResult<Expr> {
    let line = parse_rule(file, span, Rule::decorator_line)?;
    let cx = Ctx { file, offset: span.start };
    cx.expr(first_inner(line, file, span)?)
}

/// The parsed `def` line of the jitted function.
pub(crate) struct DefLine {
    pub name: Ident,
    pub params: Vec<Ident>,
    /// Each parameter's default value, if it has one.
    pub defaults: Vec<Option<Expr>>,
    /// Statements written after the colon on the same line.
    pub inline: Option<Vec<Stmt>>,
}

/// Parses `def name(params):` (with an optional inline body).
pub(crate) fn parse_def(file: &SourceFile, span: Span) -> DResult<DefLine> {
    let line = parse_rule(file, span, Rule::def_line)?;
    let cx = Ctx { file, offset: span.start };
    let mut name = None;
    let mut params = Vec::new();
    let mut defaults = Vec::new();
    let mut inline = None;
    for p in line.into_inner() {
        match p.as_rule() {
            Rule::name => name = Some(cx.ident(&p)),
            Rule::param => {
                let (name, default) = cx.param(p)?;
                params.push(name);
                defaults.push(default);
            }
            // Annotations are ignored: the types come from the arguments.
            Rule::ret_annot => {}
            Rule::simple_stmts => inline = Some(cx.simple_stmts(p)?),
            _ => {}
        }
    }
    let name = name.ok_or_else(|| Diagnostic::error(file, span, "expected a function name"))?;
    Ok(DefLine {
        name,
        params,
        defaults,
        inline,
    })
}

/// Parses the body blocks of a function into statements.
pub(crate) fn parse_block(file: &SourceFile, nodes: &[Node]) -> DResult<Vec<Stmt>> {
    Block {
        file,
        nodes,
        cache: vec![None; nodes.len()],
    }
    .parse()
}

/// A parsed statement line.
#[derive(Clone, Debug)]
enum Line {
    /// One or more simple statements.
    Simple(Vec<Stmt>),
    /// A compound-statement header, with the statements after its colon if any.
    Header {
        header: Header,
        span: Span,
        inline: Option<Vec<Stmt>>,
    },
}

#[derive(Clone, Debug)]
enum Header {
    For { var: Ident, iter: Expr },
    While(Expr),
    If(Expr),
    Elif(Expr),
    Else,
}

impl Header {
    fn keyword(&self) -> &'static str {
        match self {
            Header::For { .. } => "for",
            Header::While(_) => "while",
            Header::If(_) => "if",
            Header::Elif(_) => "elif",
            Header::Else => "else",
        }
    }
}

/// One block being turned into statements; lines are parsed lazily, in source order.
struct Block<'a> {
    file: &'a SourceFile,
    nodes: &'a [Node],
    cache: Vec<Option<Line>>,
}

impl Block<'_> {
    fn line(&mut self, i: usize) -> DResult<Line> {
        if let Some(l) = self.cache[i].take() {
            return Ok(l);
        }
        parse_line(self.file, &self.nodes[i])
    }

    fn pragma(&self, node: &Node) -> DResult<Option<Pragma>> {
        node.pragma.map(|s| pragma::parse_pragma(self.file, s)).transpose()
    }

    /// The body of the compound statement at node `i`.
    fn body(&self, i: usize, header: &Header, span: Span, inline: Option<Vec<Stmt>>) -> DResult<Vec<Stmt>> {
        let node = &self.nodes[i];
        match (inline, node.children.first()) {
            (Some(_), Some(child)) => Err(Diagnostic::error(self.file, child.first_line, "unexpected indent")),
            (Some(stmts), None) => Ok(stmts),
            (None, Some(_)) => parse_block(self.file, &node.children),
            (None, None) => Err(Diagnostic::error(
                self.file,
                span,
                format!("expected an indented block after `{}` statement", header.keyword()),
            )),
        }
    }

    fn parse(mut self) -> DResult<Vec<Stmt>> {
        let nodes = self.nodes;
        let mut out = Vec::new();
        let mut i = 0;
        while i < nodes.len() {
            let node = &nodes[i];
            let pragma = self.pragma(node)?;
            match self.line(i)? {
                Line::Simple(stmts) => {
                    if let Some(child) = node.children.first() {
                        return Err(Diagnostic::error(self.file, child.first_line, "unexpected indent"));
                    }
                    let start = out.len();
                    out.extend(stmts);
                    if let Some(first) = out.get_mut(start) {
                        first.pragma = pragma;
                    }
                    i += 1;
                }
                Line::Header { header, span, inline } => {
                    let body = self.body(i, &header, span, inline)?;
                    i += 1;
                    match header {
                        Header::For { var, iter } => {
                            let kind = StmtKind::For {
                                var,
                                iter,
                                body,
                                stop: None,
                            };
                            out.push(Stmt { kind, span, pragma });
                            self.no_loop_else(i, "for")?;
                        }
                        Header::While(cond) => {
                            out.push(Stmt {
                                kind: StmtKind::While { cond, body },
                                span,
                                pragma,
                            });
                            self.no_loop_else(i, "while")?;
                        }
                        Header::If(cond) => {
                            // Collect the `elif`/`else` clauses that follow.
                            let mut clauses = vec![(cond, span, body, pragma)];
                            let mut orelse = Vec::new();
                            while i < self.nodes.len() {
                                let (h, s, inl) = match self.peek(i)? {
                                    Line::Header {
                                        header: h @ (Header::Elif(_) | Header::Else),
                                        span: s,
                                        inline: inl,
                                    } => (h, s, inl),
                                    _ => break,
                                };
                                self.cache[i] = None;
                                if let Some(p) = self.nodes[i].pragma {
                                    return Err(Diagnostic::error(self.file, p, "pragma is not followed by a statement")
                                        .with_note(format!("help: an `{}` clause cannot carry a pragma", h.keyword())));
                                }
                                let b = self.body(i, &h, s, inl)?;
                                i += 1;
                                match h {
                                    Header::Elif(c) => clauses.push((c, s, b, None)),
                                    _ => {
                                        orelse = b;
                                        break;
                                    }
                                }
                            }
                            for (cond, span, then, pragma) in clauses.into_iter().rev() {
                                let kind = StmtKind::If { cond, then, orelse };
                                orelse = vec![Stmt { kind, span, pragma }];
                            }
                            out.append(&mut orelse);
                        }
                        Header::Elif(_) | Header::Else => {
                            let kw = header.keyword();
                            return Err(Diagnostic::error(self.file, span, format!("`{kw}` without a matching `if`")));
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// An error if line `i` is the `else` of the loop (`keyword`) that ends above it.
    fn no_loop_else(&mut self, i: usize, keyword: &str) -> DResult<()> {
        if i < self.nodes.len()
            && let Line::Header {
                header: Header::Else,
                span,
                ..
            } = self.peek(i)?
        {
            return Err(
                Diagnostic::error(self.file, span, format!("`{keyword} ... else` is not supported in APPy functions"))
                    .with_note("help: move the `else` body after the loop, guarded by a flag that `break` sets"),
            );
        }
        Ok(())
    }

    /// Parses line `i` (caching it) and returns a copy.
    fn peek(&mut self, i: usize) -> DResult<Line> {
        let l = self.line(i)?;
        self.cache[i] = Some(l.clone());
        Ok(l)
    }
}

/// Parses one statement line of a block.
fn parse_line(file: &SourceFile, node: &Node) -> DResult<Line> {
    let line = parse_rule(file, node.span, Rule::stmt_line)?;
    let cx = Ctx {
        file,
        offset: node.span.start,
    };
    let p = first_inner(line, file, node.span)?;
    match p.as_rule() {
        Rule::simple_stmts => Ok(Line::Simple(cx.simple_stmts(p)?)),
        _ => {
            let mut it = p.into_inner();
            let hdr = it.next().ok_or_else(|| Diagnostic::error(file, node.span, "invalid syntax"))?;
            let span = cx.span(&hdr);
            let inline = it.next().map(|s| cx.simple_stmts(s)).transpose()?;
            let header = cx.header(hdr)?;
            Ok(Line::Header { header, span, inline })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::build::content_len;
    use super::*;

    #[test]
    fn nesting_risk_counts_brackets_and_prefix_ops() {
        assert_eq!(nesting_risk("a + b - c"), 0);
        assert_eq!(nesting_risk("f((a))"), 2);
        assert!(nesting_risk(&"-".repeat(200)) >= 100);
        assert!(nesting_risk(&"not ".repeat(200)) >= 100);
        assert!(nesting_risk(&"a ** ".repeat(200)) >= 100);
        assert!(nesting_risk(&"a if b else ".repeat(200)) >= 100);
        assert!(nesting_risk(&format!("{}a{}", "-(".repeat(60), ")".repeat(60))) >= 100);
        assert_eq!(nesting_risk("'((((('"), 0);
        // Flat chains do not nest, whatever their length.
        assert!(nesting_risk(&vec!["-a[i] ** 2"; 1000].join(" + ")) <= 3);
        assert!(nesting_risk(&vec!["not a > -1.5"; 1000].join(" and ")) <= 3);
    }

    #[test]
    fn content_len_skips_trailing_whitespace_and_comments() {
        assert_eq!(content_len("a + b  # c\n  "), 5);
        assert_eq!(content_len("f(x, # c\n y) \\\n "), 12);
        assert_eq!(content_len("'#' "), 3);
        assert_eq!(content_len("'' "), 2);
        assert_eq!(content_len("'''a ''' "), 8);
        assert_eq!(content_len("x"), 1);
    }
}
