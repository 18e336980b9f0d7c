//! Jumps out of the straight line, rewritten into flags and guards before lowering,
//! each keeping its Python meaning:
//!
//! * an early `return` stores its value in `_appy_rv<k>` (one variable per element of a
//!   returned tuple), sets `_appy_ret<k>` and breaks out of the loops around it; what
//!   follows a statement that may return runs under `if not _appy_ret<k>`, and the
//!   function ends with `return _appy_rv<k>`;
//! * `break` sets `_appy_brk<k>`, and what follows it in the loop body runs under
//!   `if not _appy_brk<k>`: a `while` loop's condition becomes
//!   `not _appy_brk<k> and (cond)`, and a `for` loop records the flag
//!   ([`StmtKind::For::stop`]), which lowering tests before each iteration;
//! * `continue` becomes guards: the statements after an `if` that may continue run
//!   under `if not _appy_skip<k>` (`if c: continue` alone becomes `if not c:` around the
//!   rest).
//!
//! A `break` (or a `return`) in a parallel or `simd` loop would leave it: an error, as
//! APPy documents.

use super::resolve::Imports;
use crate::ast::*;
use appy_ir::diag::{DResult, Diagnostic, SourceFile, Span};

/// The reserved prefix of the names these rewrites introduce.
const PREFIX: &str = "_appy_";

/// A jump out of the straight line of a loop body.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Jump {
    Continue,
    Break,
}

impl Jump {
    fn is(self, s: &Stmt) -> bool {
        matches!(
            (self, &s.kind),
            (Jump::Continue, StmtKind::Continue) | (Jump::Break, StmtKind::Break)
        )
    }

    /// Whether `s` may execute this jump of the loop around it (nested loops have lost
    /// theirs already).
    fn may(self, s: &Stmt) -> bool {
        match &s.kind {
            StmtKind::If { then, orelse, .. } => then.iter().chain(orelse).any(|x| self.may(x)),
            _ => self.is(s),
        }
    }
}

/// The rewriter: a counter for fresh names.
pub(crate) struct Jumps<'a> {
    file: &'a SourceFile,
    imports: &'a Imports,
    counter: usize,
}

impl<'a> Jumps<'a> {
    /// A rewriter for the functions of `file`.
    pub(crate) fn new(file: &'a SourceFile, imports: &'a Imports) -> Self {
        Jumps { file, imports, counter: 0 }
    }

    fn fresh(&mut self, what: &str) -> String {
        self.counter += 1;
        format!("{PREFIX}{what}{}", self.counter)
    }

    fn err(&self, span: Span, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.file, span, msg)
    }

    // ----- return -----------------------------------------------------------------

    /// A function body whose only `return` is its last statement (the body unchanged
    /// when that holds already); `name` names the function in messages.
    pub(crate) fn returns(&mut self, body: Vec<Stmt>, name: &str) -> DResult<Vec<Stmt>> {
        let n = body.len();
        let early = body.iter().enumerate().any(|(k, s)| match &s.kind {
            StmtKind::Return(_) => k + 1 != n,
            _ => contains_return(s),
        });
        if !early {
            return Ok(body);
        }
        // The shape of the result: every `return` must agree.
        let mut shapes = vec![];
        collect_returns(&body, &mut shapes);
        let (first, first_span) = shapes[0];
        if let Some(&(_, sp)) = shapes.iter().find(|(k, _)| *k != first) {
            let what = |k: Option<usize>| match k {
                None => "no value".to_string(),
                Some(1) => "one value".to_string(),
                Some(k) => format!("a tuple of {k} values"),
            };
            return Err(self
                .err(
                    sp,
                    format!(
                        "`{name}` returns {} here but {} at line {}",
                        what(shapes.iter().find(|(k, _)| *k != first).unwrap().0),
                        what(first),
                        self.file.line_col(first_span.start).0
                    ),
                )
                .with_note("help: return the same number of values on every path"));
        }
        if first.is_some() && !always_returns(&body) {
            let sp = body.last().map(|s| s.span).unwrap_or(first_span);
            return Err(self
                .err(
                    sp,
                    format!("`{name}` returns a value on some paths and falls off its end on others"),
                )
                .with_note("help: end the function with a `return` of the value for the remaining paths"));
        }
        let flag = self.fresh("ret");
        let vars: Vec<String> = match first {
            None => vec![],
            Some(1) => vec![self.fresh("rv")],
            Some(k) => {
                let base = self.fresh("rv");
                (0..k).map(|i| format!("{base}_{i}")).collect()
            }
        };
        let span = body.first().map(|s| s.span).unwrap_or_default();
        let mut out = vec![assign_bool(&flag, false, span)];
        out.extend(self.ret_block(body, &flag, &vars, false));
        if !vars.is_empty() {
            out.push(Stmt {
                kind: StmtKind::Return(Some(names_expr(&vars, span))),
                span,
                pragma: None,
            });
        }
        Ok(out)
    }

    /// Statements with each `return` turned into stores, the flag and (`in_loop`) a
    /// `break`; what follows a statement that may return runs under `if not flag`.
    fn ret_block(&mut self, stmts: Vec<Stmt>, flag: &str, vars: &[String], in_loop: bool) -> Vec<Stmt> {
        let mut out = vec![];
        let mut it = stmts.into_iter();
        while let Some(mut s) = it.next() {
            if let StmtKind::Return(v) = s.kind {
                if let Some(v) = v {
                    out.push(Stmt {
                        kind: StmtKind::Assign {
                            targets: vec![names_expr(vars, v.span)],
                            value: v,
                        },
                        span: s.span,
                        pragma: None,
                    });
                }
                out.push(assign_bool(flag, true, s.span));
                if in_loop {
                    out.push(Stmt {
                        kind: StmtKind::Break,
                        span: s.span,
                        pragma: None,
                    });
                }
                // What follows a `return` never runs.
                return out;
            }
            if !contains_return(&s) {
                out.push(s);
                continue;
            }
            let loop_ = matches!(s.kind, StmtKind::For { .. } | StmtKind::While { .. });
            match &mut s.kind {
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                    *body = self.ret_block(std::mem::take(body), flag, vars, true);
                }
                StmtKind::If { then, orelse, .. } => {
                    *then = self.ret_block(std::mem::take(then), flag, vars, in_loop);
                    *orelse = self.ret_block(std::mem::take(orelse), flag, vars, in_loop);
                }
                _ => unreachable!("only compound statements contain a `return`"),
            }
            let span = s.span;
            out.push(s);
            let rest: Vec<Stmt> = it.collect();
            // After a loop that returned, the loop around it breaks too (an `if` that
            // returned broke already).
            if loop_ && in_loop {
                out.push(Stmt {
                    kind: StmtKind::If {
                        cond: name_expr(flag, span),
                        then: vec![Stmt {
                            kind: StmtKind::Break,
                            span,
                            pragma: None,
                        }],
                        orelse: vec![],
                    },
                    span,
                    pragma: None,
                });
            }
            let rest = self.ret_block(rest, flag, vars, in_loop);
            out.extend(unless_flag(flag, rest));
            return out;
        }
        out
    }

    // ----- break ------------------------------------------------------------------

    /// Removes `break` from the loops of `stmts` (`in_loop`: `stmts` is a loop body).
    pub(crate) fn breaks(&mut self, stmts: Vec<Stmt>, in_loop: bool) -> DResult<Vec<Stmt>> {
        let mut out = vec![];
        for mut s in stmts {
            match &mut s.kind {
                StmtKind::For { iter, body, stop, .. } => {
                    let b = self.breaks(std::mem::take(body), true)?;
                    if let Some(at) = first_jump(&b, Jump::Break) {
                        if let Some(what) = self.parallel(&s.pragma, iter) {
                            // A `break` made from an early `return` is at the `return`.
                            let jump = if self.file.text().get(at.start..).is_some_and(|t| t.starts_with("return")) {
                                "return"
                            } else {
                                "break"
                            };
                            return Err(self
                                .err(at, format!("`{jump}` cannot leave a {what} loop"))
                                .with_note("help: the iterations of a parallel loop all run; guard the rest of the body with `if` instead, or make the loop sequential"));
                        }
                        let flag = self.fresh("brk");
                        out.push(assign_bool(&flag, false, s.span));
                        *body = self.loop_body(b, Jump::Break, &flag);
                        *stop = Some(flag);
                    } else {
                        *body = b;
                    }
                }
                StmtKind::While { cond, body } => {
                    let b = self.breaks(std::mem::take(body), true)?;
                    if first_jump(&b, Jump::Break).is_some() {
                        let flag = self.fresh("brk");
                        out.push(assign_bool(&flag, false, s.span));
                        *body = self.loop_body(b, Jump::Break, &flag);
                        let c = std::mem::replace(cond, name_expr(&flag, s.span));
                        let span = c.span;
                        *cond = Expr {
                            kind: ExprKind::BoolOp {
                                op: BoolOpKind::And,
                                values: vec![not(name_expr(&flag, span)), c],
                            },
                            span,
                        };
                    } else {
                        *body = b;
                    }
                }
                StmtKind::If { then, orelse, .. } => {
                    *then = self.breaks(std::mem::take(then), in_loop)?;
                    *orelse = self.breaks(std::mem::take(orelse), in_loop)?;
                }
                StmtKind::Break if !in_loop => return Err(self.err(s.span, "`break` outside a loop")),
                _ => {}
            }
            out.push(s);
        }
        Ok(out)
    }

    /// What kind of parallel loop a `for` loop is, if it is one.
    fn parallel(&self, pragma: &Option<Pragma>, iter: &Expr) -> Option<&'static str> {
        match pragma.as_ref().map(|p| &p.kind) {
            Some(PragmaKind::ParallelFor { .. }) => Some("`parallel for`"),
            Some(PragmaKind::Simd) => Some("`simd`"),
            _ => {
                let ExprKind::Call { func, .. } = &iter.kind else { return None };
                let q = super::resolve::qualify(self.imports, func).unwrap_or_default();
                q.ends_with(".prange").then_some("`prange`")
            }
        }
    }

    // ----- continue ---------------------------------------------------------------

    /// Removes `continue` from the bodies of the loops in `stmts` (`in_loop`: `stmts`
    /// is itself a loop body, where `continue` belongs).
    pub(crate) fn continues(&mut self, stmts: Vec<Stmt>, in_loop: bool) -> DResult<Vec<Stmt>> {
        let mut out = vec![];
        for mut s in stmts {
            match &mut s.kind {
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                    let b = self.continues(std::mem::take(body), true)?;
                    *body = match first_jump(&b, Jump::Continue) {
                        Some(_) => {
                            let flag = self.fresh("skip");
                            self.loop_body(b, Jump::Continue, &flag)
                        }
                        None => b,
                    };
                }
                StmtKind::If { then, orelse, .. } => {
                    *then = self.continues(std::mem::take(then), in_loop)?;
                    *orelse = self.continues(std::mem::take(orelse), in_loop)?;
                }
                StmtKind::Continue if !in_loop => {
                    return Err(self.err(s.span, "`continue` outside a loop"));
                }
                _ => {}
            }
            out.push(s);
        }
        Ok(out)
    }

    // ----- guards -----------------------------------------------------------------

    /// A loop body without `jump` (nested loops are done), using `flag`.
    fn loop_body(&mut self, body: Vec<Stmt>, jump: Jump, flag: &str) -> Vec<Stmt> {
        let span = body.first().map(|s| s.span).unwrap_or_default();
        let mut used = false;
        let rest = self.guard(body, jump, flag, &mut used);
        if !used || jump == Jump::Break {
            // A `break` flag is set before the loop, and read by its test.
            return rest;
        }
        let mut out = vec![assign_bool(flag, false, span)];
        out.extend(rest);
        out
    }

    /// Statements up to the first that may jump; the rest under a guard.
    fn guard(&mut self, stmts: Vec<Stmt>, jump: Jump, flag: &str, used: &mut bool) -> Vec<Stmt> {
        let mut out = vec![];
        let mut it = stmts.into_iter();
        while let Some(s) = it.next() {
            if !jump.may(&s) {
                out.push(s);
                continue;
            }
            let rest: Vec<Stmt> = it.collect();
            match s.kind {
                StmtKind::Continue => {}
                StmtKind::Break => {
                    *used = true;
                    out.push(assign_bool(flag, true, s.span));
                }
                // `if c: continue` (alone in its branch, no else): the rest runs when
                // `not c`.
                StmtKind::If { cond, then, orelse }
                    if jump == Jump::Continue && orelse.is_empty() && then.len() == 1 && matches!(then[0].kind, StmtKind::Continue) =>
                {
                    let rest = self.guard(rest, jump, flag, used);
                    out.extend(when(not(cond), rest, s.span));
                }
                StmtKind::If { cond, then, orelse } => {
                    *used = true;
                    let then = self.set_flag(then, jump, flag);
                    let orelse = self.set_flag(orelse, jump, flag);
                    out.push(Stmt {
                        kind: StmtKind::If { cond, then, orelse },
                        ..s
                    });
                    let rest = self.guard(rest, jump, flag, used);
                    out.extend(unless_flag(flag, rest));
                }
                _ => unreachable!("only a jump and `if` may jump"),
            }
            return out;
        }
        out
    }

    /// A branch in which the jump sets the flag (and what follows it is dropped).
    fn set_flag(&mut self, stmts: Vec<Stmt>, jump: Jump, flag: &str) -> Vec<Stmt> {
        let mut out = vec![];
        let mut it = stmts.into_iter();
        while let Some(s) = it.next() {
            if !jump.may(&s) {
                out.push(s);
                continue;
            }
            let rest: Vec<Stmt> = it.collect();
            match s.kind {
                StmtKind::Continue | StmtKind::Break => out.push(assign_bool(flag, true, s.span)),
                StmtKind::If { cond, then, orelse } => {
                    let then = self.set_flag(then, jump, flag);
                    let orelse = self.set_flag(orelse, jump, flag);
                    out.push(Stmt {
                        kind: StmtKind::If { cond, then, orelse },
                        ..s
                    });
                    let rest = self.set_flag(rest, jump, flag);
                    out.extend(unless_flag(flag, rest));
                }
                _ => unreachable!("only a jump and `if` may jump"),
            }
            return out;
        }
        out
    }
}

/// Whether a statement may `continue` or `break` the loop around it.
pub(crate) fn may_jump(s: &Stmt) -> bool {
    Jump::Continue.may(s) || Jump::Break.may(s)
}

/// Where the first `jump` of a loop body is (not looking into nested loops).
fn first_jump(stmts: &[Stmt], jump: Jump) -> Option<Span> {
    stmts.iter().find_map(|s| match &s.kind {
        StmtKind::If { then, orelse, .. } => first_jump(then, jump).or_else(|| first_jump(orelse, jump)),
        _ => jump.is(s).then_some(s.span),
    })
}

/// Whether no path through `stmts` falls off their end: the last statement returns, is
/// an `if` whose branches both never fall off, or is a `while True:` loop (`while 1:`)
/// without a `break` of its own, which only a `return` leaves.
fn always_returns(stmts: &[Stmt]) -> bool {
    match stmts.last().map(|s| &s.kind) {
        Some(StmtKind::Return(_)) => true,
        Some(StmtKind::If { then, orelse, .. }) => always_returns(then) && always_returns(orelse),
        Some(StmtKind::While { cond, body }) => {
            matches!(cond.kind, ExprKind::Bool(true) | ExprKind::Int(1..)) && first_jump(body, Jump::Break).is_none()
        }
        _ => false,
    }
}

/// Whether a statement is or contains a `return`.
pub(crate) fn contains_return(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::For { body, .. } | StmtKind::While { body, .. } => body.iter().any(contains_return),
        StmtKind::If { then, orelse, .. } => then.iter().chain(orelse).any(contains_return),
        _ => false,
    }
}

/// The number of values of each `return` (`None`: no value), with its place.
fn collect_returns(stmts: &[Stmt], out: &mut Vec<(Option<usize>, Span)>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Return(None) => out.push((None, s.span)),
            StmtKind::Return(Some(e)) => out.push((
                Some(match &e.kind {
                    ExprKind::Tuple(es) => es.len(),
                    _ => 1,
                }),
                s.span,
            )),
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => collect_returns(body, out),
            StmtKind::If { then, orelse, .. } => {
                collect_returns(then, out);
                collect_returns(orelse, out);
            }
            _ => {}
        }
    }
}

fn name_expr(name: &str, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Name(name.to_string()),
        span,
    }
}

/// `a` or the tuple `a, b, ...`.
fn names_expr(names: &[String], span: Span) -> Expr {
    match names {
        [one] => name_expr(one, span),
        _ => Expr {
            kind: ExprKind::Tuple(names.iter().map(|n| name_expr(n, span)).collect()),
            span,
        },
    }
}

pub(super) fn assign_bool(name: &str, v: bool, span: Span) -> Stmt {
    Stmt {
        kind: StmtKind::Assign {
            targets: vec![name_expr(name, span)],
            value: Expr {
                kind: ExprKind::Bool(v),
                span,
            },
        },
        span,
        pragma: None,
    }
}

/// `if cond: then` at `span`; nothing when `then` is empty.
fn when(cond: Expr, then: Vec<Stmt>, span: Span) -> Option<Stmt> {
    (!then.is_empty()).then(|| Stmt {
        kind: StmtKind::If {
            cond,
            then,
            orelse: vec![],
        },
        span,
        pragma: None,
    })
}

/// `if not flag: rest` (at the first statement of `rest`); nothing when `rest` is empty.
fn unless_flag(flag: &str, rest: Vec<Stmt>) -> Option<Stmt> {
    let sp = rest.first()?.span;
    when(not(name_expr(flag, sp)), rest, sp)
}

pub(super) fn not(e: Expr) -> Expr {
    let span = e.span;
    Expr {
        kind: ExprKind::Unary {
            op: UnaryOp::Not,
            operand: Box::new(e),
        },
        span,
    }
}

#[cfg(test)]
mod tests {
    use crate::ast::*;
    use appy_ir::diag::SourceFile;

    fn desugared(body: &str) -> Vec<Stmt> {
        let src = format!("import appy\n\n@appy.jit\ndef f(a, n):\n{body}");
        let file = SourceFile::new("k.py", &src);
        let program = crate::parse_function(&file, "f").unwrap();
        crate::sema::desugar::desugar(&file, &program)
            .unwrap_or_else(|d| panic!("{}", d.render()))
            .function
            .body
    }

    fn flag_set(s: &Stmt) -> Option<(&str, bool)> {
        match &s.kind {
            StmtKind::Assign { targets, value } => match (&targets[..], &value.kind) {
                ([t], ExprKind::Bool(b)) => match &t.kind {
                    ExprKind::Name(n) => Some((n.as_str(), *b)),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }

    #[test]
    fn a_for_loop_with_break_stops_on_a_flag_set_before_it() {
        let b = desugared("    for i in range(n):\n        if a[i] < 0:\n            break\n        a[i] = 1.0\n");
        let (flag, false) = flag_set(&b[0]).expect("the flag, cleared") else {
            panic!("the flag starts false")
        };
        let StmtKind::For { stop, body, .. } = &b[1].kind else {
            panic!("the loop")
        };
        assert_eq!(stop.as_deref(), Some(flag));
        // `if a[i] < 0: flag = True`, then the rest under `if not flag`.
        let StmtKind::If { then, .. } = &body[0].kind else {
            panic!("the test")
        };
        assert_eq!(flag_set(&then[0]), Some((flag, true)));
        let StmtKind::If { cond, then, .. } = &body[1].kind else {
            panic!("the guard")
        };
        assert!(matches!(&cond.kind, ExprKind::Unary { op: UnaryOp::Not, .. }));
        assert!(matches!(then[0].kind, StmtKind::Assign { .. }));
    }

    #[test]
    fn a_while_loop_with_break_tests_the_flag_first() {
        let b = desugared("    k = 0\n    while k < n:\n        k += 1\n        if k > 5:\n            break\n");
        let StmtKind::While { cond, .. } = &b[2].kind else {
            panic!("the loop")
        };
        let ExprKind::BoolOp {
            op: BoolOpKind::And,
            values,
        } = &cond.kind
        else {
            panic!("`not flag and (k < n)`")
        };
        assert!(matches!(&values[0].kind, ExprKind::Unary { op: UnaryOp::Not, .. }));
        assert!(matches!(&values[1].kind, ExprKind::Compare { .. }));
    }

    #[test]
    fn an_early_return_in_a_loop_breaks_and_the_function_returns_at_its_end() {
        let b = desugared("    for i in range(n):\n        if a[i] > 0:\n            return i\n    return -1\n");
        let Some(StmtKind::Return(Some(r))) = b.last().map(|s| &s.kind) else {
            panic!("one return, last")
        };
        assert!(matches!(&r.kind, ExprKind::Name(n) if n.starts_with("_appy_rv")));
        assert!(b.iter().any(|s| matches!(&s.kind, StmtKind::For { stop: Some(_), .. })));
        fn returns(s: &[Stmt]) -> usize {
            s.iter()
                .map(|x| match &x.kind {
                    StmtKind::Return(_) => 1,
                    StmtKind::For { body, .. } | StmtKind::While { body, .. } => returns(body),
                    StmtKind::If { then, orelse, .. } => returns(then) + returns(orelse),
                    _ => 0,
                })
                .sum()
        }
        assert_eq!(returns(&b), 1);
    }
}
