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
    /// Statements written after the colon on the same line.
    pub inline: Option<Vec<Stmt>>,
}

/// Parses `def name(params):` (with an optional inline body).
pub(crate) fn parse_def(file: &SourceFile, span: Span) -> DResult<DefLine> {
    let line = parse_rule(file, span, Rule::def_line)?;
    let cx = Ctx { file, offset: span.start };
    let mut name = None;
    let mut params = Vec::new();
    let mut inline = None;
    for p in line.into_inner() {
        match p.as_rule() {
            Rule::name => name = Some(cx.ident(&p)),
            Rule::param => params.push(cx.param(p)?),
            // Annotations are ignored: the types come from the arguments.
            Rule::ret_annot => {}
            Rule::simple_stmts => inline = Some(cx.simple_stmts(p)?),
            _ => {}
        }
    }
    let name = name.ok_or_else(|| Diagnostic::error(file, span, "expected a function name"))?;
    Ok(DefLine { name, params, inline })
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
    If(Expr),
    Elif(Expr),
    Else,
}

impl Header {
    fn keyword(&self) -> &'static str {
        match self {
            Header::For { .. } => "for",
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
                            out.push(Stmt {
                                kind: StmtKind::For { var, iter, body },
                                span,
                                pragma,
                            });
                            if i < self.nodes.len()
                                && let Line::Header {
                                    header: Header::Else,
                                    span: else_span,
                                    ..
                                } = self.peek(i)?
                            {
                                return Err(
                                    Diagnostic::error(self.file, else_span, "`for ... else` is not supported in APPy functions")
                                        .with_note("help: move the `else` body after the loop"),
                                );
                            }
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

/// Positional and keyword arguments of a call.
type CallArgs = (Vec<Expr>, Vec<(Ident, Expr)>);

/// Converts pest pairs of one logical line (at byte `offset` in the file) to AST nodes.
struct Ctx<'f> {
    file: &'f SourceFile,
    offset: usize,
}

impl Ctx<'_> {
    /// The span of `p` without the whitespace and comments pest skipped at its end.
    fn span(&self, p: &Pair<'_, Rule>) -> Span {
        let start = self.offset + p.as_span().start();
        Span::new(start, start + content_len(p.as_str()))
    }

    fn err(&self, p: &Pair<'_, Rule>, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.file, self.span(p), msg)
    }

    fn ident(&self, p: &Pair<'_, Rule>) -> Ident {
        Ident {
            name: normalize_ident(p.as_str()),
            span: self.span(p),
        }
    }

    fn param(&self, p: Pair<'_, Rule>) -> DResult<Ident> {
        let mut name = None;
        for q in p.into_inner() {
            match q.as_rule() {
                Rule::name => name = Some(self.ident(&q)),
                Rule::star_param => {
                    return Err(self
                        .err(&q, format!("`{}` parameters are not supported in APPy functions", q.as_str()))
                        .with_note("help: APPy functions take a fixed list of positional parameters"));
                }
                Rule::param_annot => {}
                Rule::param_default => {
                    return Err(self
                        .err(&q, "default parameter values are not supported in APPy functions")
                        .with_note("help: pass every argument explicitly"));
                }
                _ => {}
            }
        }
        name.ok_or_else(|| Diagnostic::bare("malformed parameter"))
    }

    fn header(&self, p: Pair<'_, Rule>) -> DResult<Header> {
        let rule = p.as_rule();
        let mut it = p.into_inner().skip(1); // the keyword
        let mut next = |what: &str| it.next().ok_or_else(|| Diagnostic::bare(format!("malformed `{what}` header")));
        Ok(match rule {
            Rule::for_hdr => {
                let target = next("for")?;
                let _in = next("for")?;
                let iter = self.testlist(next("for")?)?;
                Header::For {
                    var: self.loop_var(target)?,
                    iter,
                }
            }
            Rule::if_hdr => Header::If(self.expr(next("if")?)?),
            Rule::elif_hdr => Header::Elif(self.expr(next("elif")?)?),
            _ => Header::Else,
        })
    }

    fn loop_var(&self, target: Pair<'_, Rule>) -> DResult<Ident> {
        let e = self.testlist(target.clone())?;
        match e.kind {
            ExprKind::Name(name) => Ok(Ident { name, span: e.span }),
            ExprKind::Tuple(_) => Err(self
                .err(&target, "only a single loop variable is supported in APPy `for` loops")
                .with_note("help: loop over an index, e.g. `for i in range(n):`, and index the arrays")),
            _ => Err(self.err(&target, "the loop variable must be a plain name")),
        }
    }

    fn simple_stmts(&self, p: Pair<'_, Rule>) -> DResult<Vec<Stmt>> {
        p.into_inner().map(|s| self.simple_stmt(s)).collect()
    }

    fn simple_stmt(&self, p: Pair<'_, Rule>) -> DResult<Stmt> {
        let span = self.span(&p);
        let kind = match p.as_rule() {
            Rule::pass_stmt => StmtKind::Pass,
            Rule::continue_stmt => StmtKind::Continue,
            Rule::return_stmt => StmtKind::Return(p.into_inner().nth(1).map(|v| self.testlist(v)).transpose()?),
            _ => {
                let mut it = p.into_inner();
                let first = it.next().ok_or_else(|| Diagnostic::error(self.file, span, "invalid syntax"))?;
                let lhs = self.testlist(first)?;
                match it.next() {
                    None => StmtKind::Expr(lhs),
                    Some(tail) => match tail.as_rule() {
                        Rule::augment => {
                            let mut t = tail.into_inner();
                            let op_pair = t.next().ok_or_else(|| Diagnostic::bare("malformed augmented assignment"))?;
                            let op = binop(op_pair.as_str().trim_end_matches('=')).ok_or_else(|| self.err(&op_pair, "unknown operator"))?;
                            let value = self.testlist(t.next().ok_or_else(|| Diagnostic::bare("malformed augmented assignment"))?)?;
                            self.check_target(&lhs, true)?;
                            StmtKind::AugAssign { target: lhs, op, value }
                        }
                        // `x: float = 0.0` is `x = 0.0`; `x: float` alone declares nothing.
                        Rule::annotation => {
                            let value = tail.into_inner().filter(|q| q.as_rule() == Rule::testlist_star).last();
                            match value {
                                Some(v) => {
                                    self.check_target(&lhs, false)?;
                                    StmtKind::Assign {
                                        targets: vec![lhs],
                                        value: self.testlist(v)?,
                                    }
                                }
                                None => StmtKind::Pass,
                            }
                        }
                        _ => {
                            let mut exprs = vec![lhs];
                            for q in tail.into_inner().filter(|q| q.as_rule() != Rule::eq) {
                                exprs.push(self.testlist(q)?);
                            }
                            let value = exprs.pop().ok_or_else(|| Diagnostic::bare("malformed assignment"))?;
                            for t in &exprs {
                                self.check_target(t, false)?;
                            }
                            StmtKind::Assign { targets: exprs, value }
                        }
                    },
                }
            }
        };
        Ok(Stmt { kind, span, pragma: None })
    }

    /// Checks that `e` can be assigned to.
    fn check_target(&self, e: &Expr, augmented: bool) -> DResult<()> {
        let what = match &e.kind {
            ExprKind::Name(_) | ExprKind::Subscript { .. } | ExprKind::Attribute { .. } => {
                return Ok(());
            }
            ExprKind::Tuple(items) if !augmented => {
                return items.iter().try_for_each(|i| self.check_target(i, false));
            }
            ExprKind::Tuple(_) => "a tuple",
            ExprKind::Call { .. } => "a function call",
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::None | ExprKind::Str(_) => "a literal",
            _ => "an expression",
        };
        let msg = if augmented {
            format!("cannot use augmented assignment on {what}")
        } else {
            format!("cannot assign to {what}")
        };
        Err(Diagnostic::error(self.file, e.span, msg))
    }

    /// A `testlist`/`testlist_star`/`target_list`: one expression, or a tuple if there
    /// is a comma.
    fn testlist(&self, p: Pair<'_, Rule>) -> DResult<Expr> {
        match p.as_rule() {
            Rule::testlist | Rule::testlist_star | Rule::target_list => {}
            _ => return self.expr(p),
        }
        let span = self.span(&p);
        let mut items = Vec::new();
        let mut comma = false;
        for q in p.into_inner() {
            if q.as_rule() == Rule::trailing_comma {
                comma = true;
            } else {
                items.push(self.expr(q)?);
            }
        }
        if items.len() == 1 && !comma {
            return Ok(items.remove(0));
        }
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            span,
        })
    }

    fn expr(&self, mut p: Pair<'_, Rule>) -> DResult<Expr> {
        // Descend through single-operand precedence levels without recursing, so that
        // the recursion depth follows the nesting of the source, not of the grammar.
        while matches!(
            p.as_rule(),
            Rule::test
                | Rule::or_test
                | Rule::and_test
                | Rule::not_test
                | Rule::comparison
                | Rule::bitor
                | Rule::bitxor
                | Rule::bitand
                | Rule::shift
                | Rule::arith
                | Rule::term
                | Rule::factor
                | Rule::power
                | Rule::primary
        ) {
            let mut inner = p.clone().into_inner();
            match (inner.next(), inner.next()) {
                (Some(only), None) => p = only,
                _ => break,
            }
        }
        let span = self.span(&p);
        let mk = |kind| Ok(Expr { kind, span });
        // Each kind of node is built by its own function: this keeps the stack frames of
        // the recursion small (debug builds do not share stack slots between match arms).
        match p.as_rule() {
            Rule::test => self.if_exp(p, span),
            Rule::or_test | Rule::and_test => self.bool_op(p, span),
            Rule::not_test | Rule::factor => self.unary(p, span),
            Rule::comparison => self.comparison(p, span),
            Rule::bitor | Rule::bitxor | Rule::bitand | Rule::shift | Rule::arith | Rule::term | Rule::power => self.binary(p, span),
            Rule::primary => self.primary(p, span),
            Rule::paren => self.paren(p, span),
            Rule::list_display => Err(self.list_display(p, span)),
            Rule::set_display => Err(self
                .err_at(span)
                .with_message("dict and set literals are not supported in APPy functions")),
            Rule::ellipsis => Err(self
                .err_at(span)
                .with_message("`...` (Ellipsis) is not supported in APPy functions")),
            Rule::walrus => Err(self
                .err_at(span)
                .with_message("assignment expressions (`:=`) are not supported in APPy functions")
                .with_note("help: assign the value in a separate statement")),
            Rule::star_expr => Err(self
                .err_at(span)
                .with_message("starred expressions (`*x`) are not supported in APPy functions")),
            Rule::kw_none => mk(ExprKind::None),
            Rule::kw_true => mk(ExprKind::Bool(true)),
            Rule::kw_false => mk(ExprKind::Bool(false)),
            Rule::name => mk(ExprKind::Name(normalize_ident(p.as_str()))),
            Rule::number => self.number(p),
            Rule::strings => self.strings(p, span),
            _ => Err(self.err_at(span)),
        }
    }

    /// `a if c else b` (`test` with a conditional part).
    fn if_exp(&self, p: Pair<'_, Rule>, span: Span) -> DResult<Expr> {
        let mut it = p.into_inner();
        let (Some(then), Some(_if), Some(cond), Some(_else), Some(orelse)) = (it.next(), it.next(), it.next(), it.next(), it.next()) else {
            return Err(self.err_at(span));
        };
        let kind = ExprKind::IfExp {
            cond: Box::new(self.expr(cond)?),
            then: Box::new(self.expr(then)?),
            orelse: Box::new(self.expr(orelse)?),
        };
        Ok(Expr { kind, span })
    }

    /// `a or b or c`, `a and b`.
    fn bool_op(&self, p: Pair<'_, Rule>, span: Span) -> DResult<Expr> {
        let op = if p.as_rule() == Rule::or_test {
            BoolOpKind::Or
        } else {
            BoolOpKind::And
        };
        let values = p
            .into_inner()
            .filter(|q| !matches!(q.as_rule(), Rule::kw_or | Rule::kw_and))
            .map(|q| self.expr(q))
            .collect::<DResult<Vec<_>>>()?;
        Ok(Expr {
            kind: ExprKind::BoolOp { op, values },
            span,
        })
    }

    /// `not x`, `-x`, `+x`, `~x`.
    fn unary(&self, p: Pair<'_, Rule>, span: Span) -> DResult<Expr> {
        let mut it = p.into_inner();
        let (Some(op), Some(operand)) = (it.next(), it.next()) else {
            return Err(self.err_at(span));
        };
        let op = match op.as_str() {
            "-" => UnaryOp::Neg,
            "+" => UnaryOp::Pos,
            "~" => UnaryOp::Invert,
            _ => UnaryOp::Not,
        };
        Ok(Expr {
            kind: ExprKind::Unary {
                op,
                operand: Box::new(self.expr(operand)?),
            },
            span,
        })
    }

    /// `a < b <= c`.
    fn comparison(&self, p: Pair<'_, Rule>, span: Span) -> DResult<Expr> {
        let mut it = p.into_inner();
        let Some(first) = it.next() else {
            return Err(self.err_at(span));
        };
        let first = Box::new(self.expr(first)?);
        let mut rest = Vec::new();
        while let (Some(op), Some(rhs)) = (it.next(), it.next()) {
            rest.push((self.cmp_op(op)?, self.expr(rhs)?));
        }
        Ok(Expr {
            kind: ExprKind::Compare { first, rest },
            span,
        })
    }

    /// A left-associative chain of binary operators (or `a ** b`, whose right operand is
    /// a `factor`, which makes it right-associative).
    fn binary(&self, p: Pair<'_, Rule>, span: Span) -> DResult<Expr> {
        let mut it = p.into_inner();
        let Some(first) = it.next() else {
            return Err(self.err_at(span));
        };
        let start = self.span(&first).start;
        let mut acc = self.expr(first)?;
        let mut depth = expr_depth(&acc);
        while let (Some(op), Some(rhs)) = (it.next(), it.next()) {
            let end = self.span(&rhs).end;
            let op_span = self.span(&op);
            let op = binop(op.as_str()).ok_or_else(|| self.err(&op, "unknown operator"))?;
            let rhs = self.expr(rhs)?;
            depth = self.deeper(depth, expr_depth(&rhs), op_span)?;
            acc = Expr {
                kind: ExprKind::Binary {
                    op,
                    lhs: Box::new(acc),
                    rhs: Box::new(rhs),
                },
                span: Span::new(start, end),
            };
        }
        Ok(acc)
    }

    /// An atom followed by calls, subscripts and attribute accesses.
    fn primary(&self, p: Pair<'_, Rule>, span: Span) -> DResult<Expr> {
        let mut it = p.into_inner();
        let Some(atom) = it.next() else {
            return Err(self.err_at(span));
        };
        let start = self.span(&atom).start;
        let mut acc = self.expr(atom)?;
        let mut depth = expr_depth(&acc);
        for t in it {
            let span = Span::new(start, self.span(&t).end);
            let trailer_span = self.span(&t);
            let kind = match t.as_rule() {
                Rule::attr => {
                    let name = t.into_inner().next().ok_or_else(|| self.err_at(span))?;
                    ExprKind::Attribute {
                        value: Box::new(acc),
                        attr: self.ident(&name),
                    }
                }
                Rule::call => {
                    let (args, kwargs) = self.call_args(t)?;
                    ExprKind::Call {
                        func: Box::new(acc),
                        args,
                        kwargs,
                    }
                }
                _ => {
                    let indices = t
                        .into_inner()
                        .filter(|q| q.as_rule() == Rule::subscript)
                        .map(|q| self.subscript(q))
                        .collect::<DResult<Vec<_>>>()?;
                    ExprKind::Subscript {
                        value: Box::new(acc),
                        indices,
                    }
                }
            };
            acc = Expr { kind, span };
            // The callee or subscripted value, and the arguments or indices.
            let mut operands = 0;
            acc.for_each_child(&mut |c| operands = operands.max(expr_depth(c)));
            depth = self.deeper(depth, operands, trailer_span)?;
        }
        Ok(acc)
    }

    /// The depth of a node over operands `lhs` and `rhs` deep; an error at `at` past
    /// [`MAX_EXPR_DEPTH`].
    fn deeper(&self, lhs: usize, rhs: usize, at: Span) -> DResult<usize> {
        let d = lhs.max(rhs) + 1;
        if d > MAX_EXPR_DEPTH {
            return Err(Diagnostic::error(
                self.file,
                at,
                format!("expression is too deep: more than {MAX_EXPR_DEPTH} operations nested in one expression"),
            )
            .with_note("help: split it into several statements, e.g. `t = a + b + ...` then `t += ...`"));
        }
        Ok(d)
    }

    /// `(e)` (its span includes the parentheses) or a tuple `(a, b)`, `()`, `(a,)`.
    fn paren(&self, p: Pair<'_, Rule>, span: Span) -> DResult<Expr> {
        let mut items = Vec::new();
        let mut comma = false;
        for q in p.into_inner() {
            match q.as_rule() {
                Rule::trailing_comma => comma = true,
                Rule::comp_for => {
                    return Err(self
                        .err_at(span)
                        .with_message("generator expressions are not supported in APPy functions")
                        .with_note("help: write a `for` loop, or use a slice expression like `sum(a[:N])`"));
                }
                _ => items.push(self.expr(q)?),
            }
        }
        if items.len() == 1 && !comma {
            let mut e = items.remove(0);
            e.span = span;
            return Ok(e);
        }
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            span,
        })
    }

    /// The error for a list display or comprehension.
    fn list_display(&self, p: Pair<'_, Rule>, span: Span) -> Diagnostic {
        if p.into_inner().any(|q| q.as_rule() == Rule::comp_for) {
            return self
                .err_at(span)
                .with_message("list comprehensions are not supported in APPy functions")
                .with_note("help: write a `for` loop over `range(...)` instead");
        }
        self.err_at(span)
            .with_message("list literals are not supported in APPy functions")
            .with_note("help: pass a NumPy array as a parameter, or use a tuple")
    }

    /// Adjacent string literals, concatenated.
    fn strings(&self, p: Pair<'_, Rule>, span: Span) -> DResult<Expr> {
        let mut parts: Vec<FPart> = vec![];
        let mut any_f = false;
        for q in p.into_inner() {
            match self.string(q)? {
                StrLit::Plain(s) => parts.push(FPart::Lit(s)),
                StrLit::F(ps) => {
                    any_f = true;
                    parts.extend(ps);
                }
            }
        }
        if !any_f {
            let s = parts
                .into_iter()
                .map(|p| match p {
                    FPart::Lit(s) => s,
                    FPart::Field { .. } => unreachable!("no f-string"),
                })
                .collect();
            return Ok(Expr {
                kind: ExprKind::Str(s),
                span,
            });
        }
        // Adjacent literal parts merge.
        let mut merged: Vec<FPart> = vec![];
        for p in parts {
            match (merged.last_mut(), p) {
                (Some(FPart::Lit(a)), FPart::Lit(b)) => a.push_str(&b),
                (_, p) => merged.push(p),
            }
        }
        Ok(Expr {
            kind: ExprKind::FString(merged),
            span,
        })
    }

    /// The literal text and fields of an f-string's body (`body` starts at byte `at`
    /// of the file).
    fn fstring(&self, body: &str, at: usize, raw: bool, whole: Span) -> DResult<Vec<FPart>> {
        let b = body.as_bytes();
        let mut parts = vec![];
        let mut lit = String::new();
        let mut i = 0;
        let flush = |lit: &mut String, parts: &mut Vec<FPart>| {
            if !lit.is_empty() {
                let t = if raw { lit.clone() } else { unescape(lit) };
                parts.push(FPart::Lit(t));
                lit.clear();
            }
        };
        let here = |k: usize| Span::new(at + k, at + k + 1);
        while i < b.len() {
            match b[i] {
                b'{' if b.get(i + 1) == Some(&b'{') => {
                    lit.push('{');
                    i += 2;
                }
                b'}' if b.get(i + 1) == Some(&b'}') => {
                    lit.push('}');
                    i += 2;
                }
                b'}' => return Err(Diagnostic::error(self.file, here(i), "f-string: single '}' is not allowed")),
                b'{' => {
                    flush(&mut lit, &mut parts);
                    // The field runs to the matching `}`; `!` and `:` at depth 0 end
                    // the expression.
                    let start = i + 1;
                    let (mut depth, mut j) = (0i32, start);
                    let (mut expr_end, mut conv, mut spec_start) = (None, None, None);
                    let mut quote: Option<u8> = None;
                    while j < b.len() {
                        let c = b[j];
                        if let Some(q) = quote {
                            if c == q {
                                quote = None;
                            }
                        } else if spec_start.is_some() {
                            if c == b'{' {
                                return Err(Diagnostic::error(
                                    self.file,
                                    here(j),
                                    "nested fields in f-string format specs are not supported",
                                ));
                            }
                            if c == b'}' {
                                break;
                            }
                        } else {
                            match c {
                                b'\'' | b'"' => quote = Some(c),
                                b'(' | b'[' | b'{' => depth += 1,
                                b')' | b']' => depth -= 1,
                                b'}' if depth > 0 => depth -= 1,
                                b'}' => {
                                    expr_end.get_or_insert(j);
                                    break;
                                }
                                b'!' if depth == 0 && b.get(j + 1) != Some(&b'=') => {
                                    expr_end.get_or_insert(j);
                                    conv = b.get(j + 1).map(|c| *c as char);
                                    j += 1;
                                }
                                b':' if depth == 0 => {
                                    expr_end.get_or_insert(j);
                                    spec_start = Some(j + 1);
                                }
                                _ => {}
                            }
                        }
                        j += 1;
                    }
                    if j >= b.len() {
                        return Err(Diagnostic::error(self.file, whole, "f-string: expecting '}'"));
                    }
                    let end = expr_end.unwrap_or(j);
                    let text = &body[start..end];
                    if text.trim().is_empty() {
                        return Err(Diagnostic::error(
                            self.file,
                            Span::new(at + i, at + j + 1),
                            "f-string: empty expression not allowed",
                        ));
                    }
                    if text.trim_end().ends_with('=') && !text.trim_end().ends_with("==") {
                        return Err(
                            Diagnostic::error(self.file, Span::new(at + start, at + end), "`{x=}` in f-strings is not supported")
                                .with_note("help: write the name out: `x={x}`"),
                        );
                    }
                    if let Some(c) = conv
                        && !matches!(c, 'r' | 's' | 'a')
                    {
                        return Err(Diagnostic::error(
                            self.file,
                            Span::new(at + i, at + j + 1),
                            "f-string: invalid conversion character",
                        ));
                    }
                    let expr = parse_expr(self.file, Span::new(at + start, at + end))?;
                    let spec = spec_start.map(|s| body[s..j].to_string()).unwrap_or_default();
                    parts.push(FPart::Field {
                        expr: Box::new(expr),
                        conv,
                        spec,
                    });
                    i = j + 1;
                }
                _ => {
                    let ch = body[i..].chars().next().expect("a char");
                    lit.push(ch);
                    i += ch.len_utf8();
                }
            }
        }
        flush(&mut lit, &mut parts);
        Ok(parts)
    }

    fn err_at(&self, span: Span) -> Diagnostic {
        Diagnostic::error(self.file, span, "invalid syntax")
    }

    fn cmp_op(&self, p: Pair<'_, Rule>) -> DResult<CmpOp> {
        let inner = p.into_inner().next().ok_or_else(|| Diagnostic::bare("malformed comparison"))?;
        let op = match (inner.as_rule(), inner.as_str()) {
            (Rule::op_cmp, "<") => CmpOp::Lt,
            (Rule::op_cmp, "<=") => CmpOp::Le,
            (Rule::op_cmp, ">") => CmpOp::Gt,
            (Rule::op_cmp, ">=") => CmpOp::Ge,
            (Rule::op_cmp, "==") => CmpOp::Eq,
            (Rule::op_cmp, "!=") => CmpOp::Ne,
            (rule, _) => {
                let name = match rule {
                    Rule::not_in => "not in",
                    Rule::is_not => "is not",
                    Rule::kw_in => "in",
                    _ => "is",
                };
                return Err(self
                    .err(&inner, format!("the `{name}` operator is not supported in APPy functions"))
                    .with_note("help: compare values with `==`, `!=`, `<`, `<=`, `>`, `>=`"));
            }
        };
        Ok(op)
    }

    fn call_args(&self, p: Pair<'_, Rule>) -> DResult<CallArgs> {
        let (mut args, mut kwargs) = (Vec::new(), Vec::new());
        for a in p.into_inner().filter(|q| q.as_rule() == Rule::argument) {
            let mut it = a.clone().into_inner();
            let Some(first) = it.next() else { continue };
            match first.as_rule() {
                Rule::kwarg => {
                    let mut k = first.into_inner();
                    let (Some(name), Some(_eq), Some(value)) = (k.next(), k.next(), k.next()) else {
                        return Err(self.err(&a, "invalid syntax"));
                    };
                    kwargs.push((self.ident(&name), self.expr(value)?));
                }
                Rule::star_arg | Rule::dstar_arg => {
                    return Err(self.err(
                        &first,
                        "argument unpacking (`*args`, `**kwargs`) is not supported in APPy functions",
                    ));
                }
                _ => {
                    if it.next().is_some() {
                        return Err(self
                            .err(&a, "generator expressions are not supported in APPy functions")
                            .with_note("help: write a `for` loop, or use a slice expression like `sum(a[:N])`"));
                    }
                    if !kwargs.is_empty() {
                        return Err(self.err(&a, "positional argument follows keyword argument"));
                    }
                    args.push(self.expr(first)?);
                }
            }
        }
        Ok((args, kwargs))
    }

    fn subscript(&self, p: Pair<'_, Rule>) -> DResult<Index> {
        let span = self.span(&p);
        let mut lower = None;
        let mut rest = None;
        for q in p.into_inner() {
            match q.as_rule() {
                Rule::slice_lo => {
                    let inner = q.into_inner().next().ok_or_else(|| self.err_at(span))?;
                    lower = Some(self.expr(inner)?);
                }
                Rule::slice_rest => rest = Some(q),
                _ => lower = Some(self.expr(q)?),
            }
        }
        let Some(rest) = rest else {
            let e = lower.ok_or_else(|| self.err_at(span))?;
            return Ok(match e.kind {
                ExprKind::None => Index::NewAxis(e.span),
                _ => Index::Expr(e),
            });
        };
        let (mut upper, mut step) = (None, None);
        for q in rest.into_inner() {
            let slot = if q.as_rule() == Rule::slice_hi { &mut upper } else { &mut step };
            let inner = q.into_inner().next().ok_or_else(|| self.err_at(span))?;
            *slot = Some(Box::new(self.expr(inner)?));
        }
        Ok(Index::Slice {
            lower: lower.map(Box::new),
            upper,
            step,
            span,
        })
    }

    fn number(&self, p: Pair<'_, Rule>) -> DResult<Expr> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let lit = it.next().ok_or_else(|| self.err_at(span))?;
        if it.next().is_some() {
            return Err(self
                .err_at(span)
                .with_message("complex literals are not supported in APPy functions"));
        }
        let digits = lit.as_str().replace('_', "");
        let too_big = || {
            self.err_at(span)
                .with_message(format!("integer literal `{}` does not fit in 64 bits", lit.as_str()))
        };
        let kind = match lit.as_rule() {
            Rule::float_lit => ExprKind::Float(
                digits
                    .parse()
                    .map_err(|_| self.err_at(span).with_message("invalid float literal"))?,
            ),
            Rule::hex_lit | Rule::oct_lit | Rule::bin_lit => {
                let radix = match lit.as_rule() {
                    Rule::hex_lit => 16,
                    Rule::oct_lit => 8,
                    _ => 2,
                };
                ExprKind::Int(i64::from_str_radix(&digits[2..], radix).map_err(|_| too_big())?)
            }
            _ => {
                if digits.len() > 1 && digits.starts_with('0') && digits.bytes().any(|b| b != b'0') {
                    return Err(self
                        .err_at(span)
                        .with_message("leading zeros in decimal integer literals are not permitted")
                        .with_note("help: use an `0o` prefix for octal integers"));
                }
                ExprKind::Int(digits.parse().map_err(|_| too_big())?)
            }
        };
        Ok(Expr { kind, span })
    }

    fn string(&self, p: Pair<'_, Rule>) -> DResult<StrLit> {
        let span = self.span(&p);
        let mut prefix = "";
        let mut body = "";
        let mut body_at = span.start;
        for q in p.into_inner() {
            match q.as_rule() {
                Rule::str_prefix => prefix = q.as_str(),
                _ => {
                    body = q.as_str();
                    body_at = self.span(&q).start;
                }
            }
        }
        let lower = prefix.to_ascii_lowercase();
        if lower.contains('b') {
            return Err(self.err_at(span).with_message("bytes literals are not supported in APPy functions"));
        }
        let q = if body.starts_with("'''") || body.starts_with("\"\"\"") {
            3
        } else {
            1
        };
        let inner = body.get(q..body.len().saturating_sub(q)).unwrap_or_default();
        if lower.contains('f') {
            return Ok(StrLit::F(self.fstring(inner, body_at + q, lower.contains('r'), span)?));
        }
        Ok(StrLit::Plain(if lower.contains('r') { inner.to_string() } else { unescape(inner) }))
    }
}

/// A string literal: plain text or the parts of an f-string.
enum StrLit {
    Plain(String),
    F(Vec<FPart>),
}

/// The length of `text` (a fragment of a logical line starting at a token) without its
/// trailing whitespace, comments and backslash continuations.
fn content_len(text: &str) -> usize {
    let b = text.as_bytes();
    let (mut i, mut end) = (0, 0);
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' => i += 1,
            b'\\' if matches!(b.get(i + 1), Some(b'\n' | b'\r')) => i += 2,
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            q @ (b'\'' | b'"') => {
                let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
                let close = if triple { 3 } else { 1 };
                // An empty string `''` is not the start of a triple-quoted one.
                if !triple && b.get(i + 1) == Some(&q) {
                    i += 2;
                } else {
                    i += close;
                    while i < b.len() {
                        if b[i] == b'\\' {
                            i += 2;
                        } else if b[i] == q && (!triple || (b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q))) {
                            i += close;
                            break;
                        } else {
                            i += 1;
                        }
                    }
                }
                end = i.min(b.len());
            }
            _ => {
                i += 1;
                end = i;
            }
        }
    }
    end
}

/// Processes the common backslash escapes of a (non-raw) Python string.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('\\') => out.push('\\'),
            Some('\'') => out.push('\''),
            Some('"') => out.push('"'),
            Some('\n') => {}
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

fn binop(s: &str) -> Option<BinOp> {
    Some(match s {
        "+" => BinOp::Add,
        "-" => BinOp::Sub,
        "*" => BinOp::Mul,
        "/" => BinOp::Div,
        "//" => BinOp::FloorDiv,
        "%" => BinOp::Mod,
        "**" => BinOp::Pow,
        "@" => BinOp::MatMul,
        "&" => BinOp::BitAnd,
        "|" => BinOp::BitOr,
        "^" => BinOp::BitXor,
        "<<" => BinOp::LShift,
        ">>" => BinOp::RShift,
        _ => return None,
    })
}

/// Small builder helpers for [`Diagnostic`].
trait DiagnosticExt {
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
fn unclosed_bracket(text: &str) -> Option<usize> {
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
fn unsupported_keyword(word: &str) -> Option<(&'static str, Option<&'static str>)> {
    Some(match word {
        "while" => (
            "`while` loops are not supported in APPy functions",
            Some("help: use a `for` loop over `range(...)`"),
        ),
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
        "break" => (
            "`break` is not supported in APPy functions",
            Some("help: APPy loops always run their full range; guard the body with `if` instead"),
        ),
        "yield" => ("generators (`yield`) are not supported in APPy functions", None),
        "async" | "await" => ("`async`/`await` is not supported in APPy functions", None),
        "assert" => (
            "`assert` is not supported in APPy functions",
            Some("help: check the condition in the calling Python code"),
        ),
        "lambda" => ("`lambda` expressions are not supported in APPy functions", None),
        _ => return None,
    })
}

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else", "except",
    "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
    "while", "with", "yield",
];

/// Turns a pest error on `text` (at byte `offset` of the file) into a diagnostic,
/// recognising the common unsupported constructs at the failure position.
fn syntax_error(file: &SourceFile, offset: usize, text: &str, e: &pest::error::Error<Rule>) -> Diagnostic {
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
fn expected_note(e: &pest::error::Error<Rule>) -> Option<String> {
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

#[cfg(test)]
mod tests {
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
