//! Pest pairs of one logical line to AST nodes: expressions, statements, string
//! and f-string literals. One `impl Ctx` with a method per grammar rule: it stays one file
//! (a little over 800 lines) so that the mapping from `grammar.pest` to the AST reads in
//! one place.

use appy_ir::diag::{DResult, Diagnostic, SourceFile, Span};
use pest::iterators::Pair;

use super::errors::*;
use super::*;

/// Positional and keyword arguments of a call.
type CallArgs = (Vec<Expr>, Vec<(Ident, Expr)>);

/// Converts pest pairs of one logical line (at byte `offset` in the file) to AST nodes.
pub(super) struct Ctx<'f> {
    pub(super) file: &'f SourceFile,
    pub(super) offset: usize,
}

impl Ctx<'_> {
    /// The span of `p` without the whitespace and comments pest skipped at its end.
    pub(super) fn span(&self, p: &Pair<'_, Rule>) -> Span {
        let start = self.offset + p.as_span().start();
        Span::new(start, start + content_len(p.as_str()))
    }

    fn err(&self, p: &Pair<'_, Rule>, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.file, self.span(p), msg)
    }

    pub(super) fn ident(&self, p: &Pair<'_, Rule>) -> Ident {
        Ident {
            name: normalize_ident(p.as_str()),
            span: self.span(p),
        }
    }

    /// A parameter and its default value, if it has one.
    pub(super) fn param(&self, p: Pair<'_, Rule>) -> DResult<(Ident, Option<Expr>)> {
        let mut name = None;
        let mut default = None;
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
                    let e = q.into_inner().find(|x| x.as_rule() == Rule::test);
                    default = e.map(|e| self.expr(e)).transpose()?;
                }
                _ => {}
            }
        }
        Ok((name.ok_or_else(|| Diagnostic::bare("malformed parameter"))?, default))
    }

    pub(super) fn header(&self, p: Pair<'_, Rule>) -> DResult<Header> {
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
            Rule::while_hdr => Header::While(self.expr(next("while")?)?),
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

    pub(super) fn simple_stmts(&self, p: Pair<'_, Rule>) -> DResult<Vec<Stmt>> {
        p.into_inner().map(|s| self.simple_stmt(s)).collect()
    }

    fn simple_stmt(&self, p: Pair<'_, Rule>) -> DResult<Stmt> {
        let span = self.span(&p);
        let kind = match p.as_rule() {
            Rule::pass_stmt => StmtKind::Pass,
            Rule::continue_stmt => StmtKind::Continue,
            Rule::break_stmt => StmtKind::Break,
            Rule::return_stmt => StmtKind::Return(p.into_inner().nth(1).map(|v| self.testlist(v)).transpose()?),
            // `assert cond[, msg]` is `if not cond: <fail>` (see `ast::ASSERT_FAILED`); the
            // message is not evaluated.
            Rule::assert_stmt => {
                let cond = p
                    .into_inner()
                    .nth(1)
                    .ok_or_else(|| Diagnostic::error(self.file, span, "invalid syntax"))?;
                let cond = self.expr(cond)?;
                let at = cond.span;
                let fail = Expr {
                    kind: ExprKind::Call {
                        func: Box::new(Expr {
                            kind: ExprKind::Name(crate::ast::ASSERT_FAILED.into()),
                            span,
                        }),
                        args: vec![],
                        kwargs: vec![],
                    },
                    span,
                };
                StmtKind::If {
                    cond: Expr {
                        kind: ExprKind::Unary {
                            op: UnaryOp::Not,
                            operand: Box::new(cond),
                        },
                        span: at,
                    },
                    then: vec![Stmt {
                        kind: StmtKind::Expr(fail),
                        span,
                        pragma: None,
                    }],
                    orelse: vec![],
                }
            }
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
            ExprKind::Call { func, .. } if matches!(&func.kind, ExprKind::Name(f) if f == crate::sema::constants::LIST) => {
                return Err(Diagnostic::error(self.file, e.span, "cannot assign to a list display")
                    .with_note("help: unpack into a tuple: `a, b = c`"));
            }
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

    pub(super) fn expr(&self, mut p: Pair<'_, Rule>) -> DResult<Expr> {
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
            Rule::list_display => self.list_display(p, span),
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

    /// A list display, as a call of [`crate::sema::constants::LIST`] (only constant
    /// lists of numbers are accepted, by `sema::constants`); a comprehension is an
    /// error.
    fn list_display(&self, p: Pair<'_, Rule>, span: Span) -> DResult<Expr> {
        if p.clone().into_inner().any(|q| q.as_rule() == Rule::comp_for) {
            return Err(self
                .err_at(span)
                .with_message("list comprehensions are not supported in APPy functions")
                .with_note("help: write a `for` loop over `range(...)` instead"));
        }
        let args = p
            .into_inner()
            .filter(|q| q.as_rule() != Rule::trailing_comma)
            .map(|q| self.expr(q))
            .collect::<DResult<Vec<_>>>()?;
        Ok(Expr {
            kind: ExprKind::Call {
                func: Box::new(Expr {
                    kind: ExprKind::Name(crate::sema::constants::LIST.into()),
                    span,
                }),
                args,
                kwargs: vec![],
            },
            span,
        })
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
        let digits = lit.as_str().replace('_', "");
        if it.next().is_some() {
            // An imaginary literal (`2j`, `1.5e3J`): decimal digits or a float.
            if !matches!(lit.as_rule(), Rule::float_lit | Rule::dec_lit) {
                return Err(self.err_at(span).with_message("invalid imaginary literal"));
            }
            let v: f64 = digits
                .parse()
                .map_err(|_| self.err_at(span).with_message("invalid imaginary literal"))?;
            return Ok(Expr {
                kind: ExprKind::Imag(v),
                span,
            });
        }
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
pub(super) fn content_len(text: &str) -> usize {
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
