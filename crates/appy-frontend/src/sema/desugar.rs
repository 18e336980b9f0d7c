//! Rewrites of the parsed function before lowering, each keeping its Python meaning:
//!
//! * calls to the file's other functions (jitted or not) are inlined: a function that
//!   only returns an expression is substituted into the call; any other body is copied
//!   in front of the statement that calls it, its names renamed apart
//!   (`_appy_<callee><k>_<name>`), its parameters bound to the arguments (arrays by
//!   reference, as in Python); a call of a function that is being inlined already (the
//!   jitted function itself, or a function on the chain of calls that led to it) is
//!   recursion, an error at that call;
//! * an early `return`, `break` and `continue` become flags and guards
//!   (`super::jumps`);
//! * a loop pragma that is not directly above a `for` loop is dropped with a warning:
//!   pragmas are comments, and the loop runs sequentially, which is its meaning;
//! * in `prange` loops, updates of array elements that several iterations may share
//!   become atomic (`super::prange`).

use super::jumps::{Jumps, contains_return, may_jump};
use super::names::expr_names;
use crate::ast::*;
use appy_ir::diag::{DResult, Diagnostic, SourceFile, Span};
use std::collections::{HashMap, HashSet};

/// Calls nested deeper than this (through distinct functions: recursion is found
/// before) are an error.
const MAX_DEPTH: usize = 64;

/// The rewritten function and the warnings found on the way.
pub(crate) struct Desugared {
    /// The function, with no calls to other functions and no `continue`.
    pub function: Function,
    /// Warnings (misplaced pragmas).
    pub warnings: Vec<Diagnostic>,
    /// The calls inlined, in the order met: see [`CallSite`].
    pub calls: Vec<CallSite>,
}

/// A call of one of the file's functions, inlined: the function's name, its extent (from
/// `def` to the end of its body) and the call.
#[derive(Clone, Debug)]
pub(crate) struct CallSite {
    name: String,
    extent: Span,
    call: Span,
}

/// `d` with a note naming the call through which it was reached, when its place is
/// inside an inlined function (`last`: the latest such call, else the first).
pub(crate) fn with_call_site(file: &SourceFile, mut d: Diagnostic, calls: &[CallSite], last: bool) -> Diagnostic {
    let Some(at) = d.span else { return d };
    let inside = |c: &&CallSite| c.extent.start <= at.start && at.end <= c.extent.end;
    let found = if last {
        calls.iter().rev().find(inside)
    } else {
        calls.iter().find(inside)
    };
    if let Some(c) = found {
        d.notes.push(call_note(file, &c.name, c.call));
    }
    d
}

fn call_note(file: &SourceFile, name: &str, call: Span) -> String {
    let (l, c) = file.line_col(call.start);
    format!("note: in `{name}`, called at line {l}, column {c}")
}

/// Applies the rewrites to `program`'s function.
pub(crate) fn desugar(file: &SourceFile, program: &Program) -> DResult<Desugared> {
    let imports = super::resolve::Imports::new(&program.imports);
    let mut cx = Cx {
        file,
        helpers: program.helpers.iter().map(|h| (h.name.clone(), h)).collect(),
        shadowed: HashSet::new(),
        imports: program
            .imports
            .iter()
            .flat_map(|i| match i {
                Import::Module { alias, .. } => vec![alias.clone()],
                Import::From { names, .. } => names.iter().map(|(_, a)| a.clone()).collect(),
            })
            .chain([super::prelude::ALIAS.to_string()])
            .collect(),
        counter: 0,
        warnings: vec![],
        stack: vec![program.function.name.name.clone()],
        calls: vec![],
        jumps: Jumps::new(file, &imports),
        resolver: &imports,
    };
    let f = &program.function;
    // A parameter or local variable with a helper's name hides the helper.
    cx.shadowed.extend(f.params.iter().map(|p| p.name.clone()));
    let mut assigned = vec![];
    super::names::ast_names_assigned(&f.body, &mut assigned);
    cx.shadowed.extend(assigned.into_iter().map(|(n, _)| n));
    let mut steps = || -> DResult<Vec<Stmt>> {
        let main = cx.jumps.returns(f.body.clone(), &f.name.name)?;
        // Individual mode marks the loops written in the function, not those of the
        // helpers inlined into it.
        let main = if super::shader::is_shader(f) {
            super::shader::parallel_loops(main, &imports)
        } else {
            main
        };
        let body = cx.block(&main, 0)?;
        let body = cx.pragmas(body);
        let body = super::constants::rewrite(file, body, &f.params)?;
        let body = cx.jumps.breaks(body, false)?;
        let body = cx.jumps.continues(body, false)?;
        super::prange::atomics(file, body, &imports)
    };
    let body = match steps() {
        Ok(b) => b,
        Err(e) => return Err(with_call_site(file, e, &cx.calls, true)),
    };
    Ok(Desugared {
        calls: cx.calls,
        function: Function { body, ..f.clone() },
        warnings: cx.warnings,
    })
}

struct Cx<'a> {
    file: &'a SourceFile,
    /// What the module's names refer to.
    resolver: &'a super::resolve::Imports,
    /// The rewriter of `return`, `break` and `continue`.
    jumps: Jumps<'a>,
    /// The calls inlined so far.
    calls: Vec<CallSite>,
    helpers: HashMap<String, &'a Helper>,
    shadowed: HashSet<String>,
    imports: HashSet<String>,
    counter: usize,
    warnings: Vec<Diagnostic>,
    /// The functions being inlined, outermost first: the jitted function, then each
    /// function called on the way to the code being inlined now.
    stack: Vec<String>,
}

impl<'a> Cx<'a> {
    fn err(&self, span: Span, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.file, span, msg)
    }

    // ----- inlining ---------------------------------------------------------------

    /// A call of a function on [`Cx::stack`] is recursion: an error at the call.
    fn check_recursion(&self, e: &Expr) -> DResult<()> {
        let ExprKind::Call { func, .. } = &e.kind else { return Ok(()) };
        let ExprKind::Name(n) = &func.kind else { return Ok(()) };
        if self.shadowed.contains(n) || self.imports.contains(n) {
            return Ok(());
        }
        let Some(k) = self.stack.iter().position(|s| s == n) else {
            return Ok(());
        };
        let caller = self.stack.last().expect("the jitted function");
        let msg = if caller == n {
            format!("recursion is not supported: `{n}` calls itself")
        } else {
            let chain: Vec<String> = self.stack[k..].iter().chain(std::iter::once(n)).map(|s| format!("`{s}`")).collect();
            format!("recursion is not supported: `{caller}` calls `{n}` ({})", chain.join(" → "))
        };
        Err(self.err(e.span, msg).with_note(
            "help: appy compiles a call by inlining the called function, which a recursive call would repeat without end; write the computation as a loop",
        ))
    }

    /// The helper a call refers to, if any: a function of the file, or a NumPy
    /// function written in Python (`super::prelude`).
    fn helper_of(&self, e: &Expr) -> Option<&'a Helper> {
        let ExprKind::Call { func, .. } = &e.kind else { return None };
        if let Some(h) = super::resolve::qualify(self.resolver, func).and_then(|q| super::prelude::helper(&q)) {
            return Some(h);
        }
        let ExprKind::Name(n) = &func.kind else { return None };
        if self.shadowed.contains(n) || self.imports.contains(n) {
            return None;
        }
        self.helpers.get(n).copied()
    }

    fn block(&mut self, stmts: &[Stmt], depth: usize) -> DResult<Vec<Stmt>> {
        let mut out = vec![];
        for s in stmts {
            self.stmt(s, depth, &mut out)?;
        }
        Ok(out)
    }

    /// Inlines the calls of one statement; pushes the statements that compute their
    /// values, then the statement.
    fn stmt(&mut self, s: &Stmt, depth: usize, out: &mut Vec<Stmt>) -> DResult<()> {
        let mut s = s.clone();
        // `t[...] = np.cumsum(a)` writes the running sums into `t`.
        if let StmtKind::Assign { targets, value } = &s.kind
            && let [
                t @ Expr {
                    kind: ExprKind::Subscript { .. },
                    ..
                },
            ] = targets.as_slice()
            && let ExprKind::Call { func, args, kwargs } = &value.kind
            && args.len() == 1
            && kwargs.is_empty()
            && super::resolve::qualify(self.resolver, func).as_deref() == Some("numpy.cumsum")
        {
            let call = Expr {
                kind: ExprKind::Call {
                    func: Box::new(Expr {
                        kind: ExprKind::Name(super::prelude::CUMSUM_INTO.into()),
                        span: func.span,
                    }),
                    args: vec![t.clone(), args[0].clone()],
                    kwargs: vec![],
                },
                span: value.span,
            };
            let call = Stmt {
                kind: StmtKind::Expr(call),
                ..s
            };
            return self.stmt(&call, depth, out);
        }
        // A call on a line of its own, or the whole value of an assignment, runs the
        // callee's body in place.
        match &mut s.kind {
            StmtKind::Expr(e) if self.helper_of(e).is_some() => {
                self.call_stmt(e, None, depth, out)?;
                return Ok(());
            }
            StmtKind::Assign { targets, value } if self.helper_of(value).is_some() && !is_simple(self.helper_of(value)) => {
                let r = self.call_stmt(value, Some(s.span), depth, out)?;
                *value = r.ok_or_else(|| self.err(value.span, "this function returns no value"))?;
                out.push(Stmt {
                    kind: StmtKind::Assign {
                        targets: targets.clone(),
                        value: value.clone(),
                    },
                    ..s
                });
                return Ok(());
            }
            _ => {}
        }
        match &mut s.kind {
            StmtKind::Assign { targets, value } => {
                for t in targets.iter_mut() {
                    self.expr(t, depth, out, false)?;
                }
                self.expr(value, depth, out, false)?;
            }
            StmtKind::AugAssign { target, value, .. } => {
                self.expr(target, depth, out, false)?;
                self.expr(value, depth, out, false)?;
            }
            StmtKind::For { iter, body, .. } => {
                self.expr(iter, depth, out, false)?;
                *body = self.block(body, depth)?;
            }
            StmtKind::While { cond, body } => {
                // The condition is evaluated before every iteration: a call with
                // statements runs before the loop and again at the end of its body
                // (`while c:` becomes `w = c` / `while w: ...; w = c`).
                let mut pre = vec![];
                let mut c = cond.clone();
                self.expr(&mut c, depth, &mut pre, false)?;
                *body = self.block(body, depth)?;
                if pre.is_empty() {
                    *cond = c;
                } else {
                    self.counter += 1;
                    let w = format!("_appy_while{}", self.counter);
                    let set = Stmt {
                        kind: StmtKind::Assign {
                            targets: vec![Expr {
                                kind: ExprKind::Name(w.clone()),
                                span: c.span,
                            }],
                            value: c.clone(),
                        },
                        span: c.span,
                        pragma: None,
                    };
                    out.extend(pre.iter().cloned());
                    out.push(set.clone());
                    // A `continue` in the body must not skip the re-evaluation.
                    if body.iter().any(may_jump) {
                        return Err(self
                            .err(cond.span, "a `while` condition that calls a function with statements cannot be combined with `continue` or `break` in the loop")
                            .with_note("help: compute the condition in a variable at the end of the body: `w = f(...)` before the loop and at the end of its body, then `while w:`"));
                    }
                    body.extend(pre);
                    body.push(set);
                    *cond = Expr {
                        kind: ExprKind::Name(w),
                        span: c.span,
                    };
                }
            }
            StmtKind::If { cond, then, orelse } => {
                self.expr(cond, depth, out, false)?;
                *then = self.block(then, depth)?;
                *orelse = self.block(orelse, depth)?;
            }
            StmtKind::Return(Some(e)) | StmtKind::Expr(e) => self.expr(e, depth, out, false)?,
            StmtKind::Return(None) | StmtKind::Pass | StmtKind::Continue | StmtKind::Break => {}
        }
        out.push(s);
        Ok(())
    }

    /// Inlines the calls inside `e` (innermost first). `cond` says whether `e` is only
    /// evaluated conditionally (a branch of `a if c else b`, an operand of `and`/`or`).
    fn expr(&mut self, e: &mut Expr, depth: usize, out: &mut Vec<Stmt>, cond: bool) -> DResult<()> {
        match &mut e.kind {
            ExprKind::IfExp { cond: c, then, orelse } => {
                self.expr(c, depth, out, cond)?;
                self.expr(then, depth, out, true)?;
                self.expr(orelse, depth, out, true)?;
            }
            ExprKind::BoolOp { values, .. } => {
                if let Some((first, rest)) = values.split_first_mut() {
                    self.expr(first, depth, out, cond)?;
                    for v in rest {
                        self.expr(v, depth, out, true)?;
                    }
                }
            }
            _ => {
                let mut r = Ok(());
                e.for_each_child_mut(&mut |c| {
                    if r.is_ok() {
                        r = self.expr(c, depth, out, cond);
                    }
                });
                r?;
            }
        }
        self.check_recursion(e)?;
        if let ExprKind::Call { func, .. } = &e.kind
            && super::resolve::qualify(self.resolver, func).as_deref() == Some("numpy.cumsum")
        {
            return Err(self
                .err(
                    e.span,
                    "`np.cumsum` is supported only as the whole value assigned to a row or slice",
                )
                .with_note("help: write the running sums into an existing array: `out[i, :] = np.cumsum(a[i, :])`"));
        }
        let Some(h) = self.helper_of(e) else { return Ok(()) };
        if is_simple(Some(h)) {
            *e = self.substitute(e, depth)?;
            return Ok(());
        }
        if cond {
            return Err(self
                .err(
                    e.span,
                    format!(
                        "`{}` is called inside a conditional expression, where its statements cannot be inlined",
                        h.name
                    ),
                )
                .with_note("help: call it on a line of its own and use the result: `t = f(...)`"));
        }
        let span = e.span;
        let r = self.call_stmt(e, Some(span), depth, out)?;
        *e = r.ok_or_else(|| self.err(span, "this function returns no value"))?;
        Ok(())
    }

    /// The callee of a call, parsed (its parse error if it does not parse); `depth`:
    /// how many calls are being inlined around it.
    fn callee(&mut self, e: &Expr, depth: usize) -> DResult<(Function, Vec<Expr>)> {
        self.check_recursion(e)?;
        let h = self.helper_of(e).expect("a call of a helper");
        if depth >= MAX_DEPTH {
            return Err(self
                .err(
                    e.span,
                    format!("calls nested more than {MAX_DEPTH} functions deep are not supported"),
                )
                .with_note("help: call some of the functions one after another instead of from each other"));
        }
        let ExprKind::Call { args, kwargs, .. } = &e.kind else {
            unreachable!("a call")
        };
        let mut f = h
            .function
            .as_ref()
            .map_err(|d| (**d).clone().with_note(call_note(self.file, &h.name, e.span)))?
            .clone();
        if super::prelude::is_prelude(h) {
            super::prelude::move_spans(&mut f.body, e.span);
        } else {
            self.calls.push(CallSite {
                name: h.name.clone(),
                extent: f.span,
                call: e.span,
            });
        }
        f.body = self.jumps.returns(std::mem::take(&mut f.body), &f.name.name)?;
        if let Some((k, _)) = kwargs.first() {
            return Err(self
                .err(k.span, format!("keyword arguments are not supported when calling `{}`", h.name))
                .with_note("help: pass the arguments by position"));
        }
        if args.len() != f.params.len() {
            return Err(self.err(
                e.span,
                format!("`{}` takes {} argument(s), {} given", h.name, f.params.len(), args.len()),
            ));
        }
        Ok((f, args.clone()))
    }

    /// `f(args)` for a function whose body is `return expr`: the expression with the
    /// parameters replaced by the arguments.
    fn substitute(&mut self, e: &Expr, depth: usize) -> DResult<Expr> {
        let (f, args) = self.callee(e, depth)?;
        let Some(StmtKind::Return(Some(r))) = body_without_docstring(&f.body).first().map(|s| &s.kind) else {
            unreachable!("a simple function")
        };
        let map: HashMap<String, Expr> = f.params.iter().map(|p| p.name.clone()).zip(args).collect();
        let mut names = vec![];
        expr_names(r, &mut names);
        for (n, sp) in &names {
            if !map.contains_key(n) && !self.imports.contains(n) && !self.helpers.contains_key(n) && !is_builtin(n) {
                return Err(self
                    .err(*sp, format!("`{n}` is neither a parameter of `{}` nor an import", f.name.name))
                    .with_note("help: pass the value as an argument"));
            }
        }
        let mut r = r.clone();
        replace_names(&mut r, &map);
        // The callee's own calls.
        let mut scratch = vec![];
        self.stack.push(f.name.name.clone());
        self.expr(&mut r, depth + 1, &mut scratch, false)?;
        self.stack.pop();
        if !scratch.is_empty() {
            return Err(self
                .err(e.span, "a function used inside an expression calls a function that has statements")
                .with_note("help: call it on a line of its own: `t = f(...)`"));
        }
        Ok(r)
    }

    /// Copies the body of the called function in front of the statement (pushed to
    /// `out`), renamed apart; returns the expression of its return value.
    fn call_stmt(&mut self, e: &Expr, _at: Option<Span>, depth: usize, out: &mut Vec<Stmt>) -> DResult<Option<Expr>> {
        let (f, mut args) = self.callee(e, depth)?;
        for a in &mut args {
            self.expr(a, depth, out, false)?;
        }
        self.stack.push(f.name.name.clone());
        let r = self.inline_body(&f, args, e.span, depth, out);
        self.stack.pop();
        r
    }

    /// [`Self::call_stmt`]'s copy of the body of `f`, called at `at` with `args`.
    fn inline_body(&mut self, f: &Function, args: Vec<Expr>, at: Span, depth: usize, out: &mut Vec<Stmt>) -> DResult<Option<Expr>> {
        self.counter += 1;
        let prefix = format!("_appy_{}{}_", f.name.name, self.counter);
        let mut locals: Vec<(String, Span)> = f.params.iter().map(|p| (p.name.clone(), p.span)).collect();
        super::names::ast_names_assigned(&f.body, &mut locals);
        let rename: HashMap<String, String> = locals.iter().map(|(n, _)| (n.clone(), format!("{prefix}{n}"))).collect();
        // Parameters are local variables bound to the arguments.
        for (p, a) in f.params.iter().zip(args) {
            out.push(Stmt {
                kind: StmtKind::Assign {
                    targets: vec![Expr {
                        kind: ExprKind::Name(rename[&p.name].clone()),
                        span: p.span,
                    }],
                    value: a,
                },
                span: at,
                pragma: None,
            });
        }
        let body = body_without_docstring(&f.body);
        let mut ret = None;
        let n = body.len();
        for (k, s) in body.iter().enumerate() {
            if let StmtKind::Return(v) = &s.kind {
                if k + 1 != n {
                    return Err(self
                        .err(s.span, "`return` is only supported as the last statement of a function")
                        .with_note("help: compute the result in a variable and return it at the end"));
                }
                ret = v.clone().map(|mut v| {
                    rename_expr(&mut v, &rename);
                    v
                });
                break;
            }
            if contains_return(s) {
                return Err(self.err(s.span, "`return` is only supported as the last statement of a function"));
            }
            let mut s = s.clone();
            rename_stmt(&mut s, &rename);
            self.stmt(&s, depth + 1, out)?;
        }
        match ret {
            Some(mut v) => {
                // The value is computed after the body, like the callee's return.
                let mut pre = vec![];
                self.expr(&mut v, depth + 1, &mut pre, false)?;
                out.extend(pre);
                Ok(Some(v))
            }
            None => Ok(None),
        }
    }

    // ----- pragmas ----------------------------------------------------------------

    /// Drops loop pragmas that do not annotate a loop, with a warning.
    fn pragmas(&mut self, stmts: Vec<Stmt>) -> Vec<Stmt> {
        stmts
            .into_iter()
            .map(|mut s| {
                if let Some(p) = &s.pragma
                    && matches!(
                        p.kind,
                        PragmaKind::ParallelFor { .. } | PragmaKind::Simd | PragmaKind::SequentialFor
                    )
                    && !matches!(s.kind, StmtKind::For { .. })
                {
                    self.warnings.push(
                        Diagnostic::warning(
                            self.file,
                            p.span,
                            format!("`#pragma {}` is not directly above a `for` loop; it is ignored", p.text),
                        )
                        .with_note("help: put the pragma on the line right above the loop it annotates"),
                    );
                    s.pragma = None;
                }
                match &mut s.kind {
                    StmtKind::For { body, .. } | StmtKind::While { body, .. } => *body = self.pragmas(std::mem::take(body)),
                    StmtKind::If { then, orelse, .. } => {
                        *then = self.pragmas(std::mem::take(then));
                        *orelse = self.pragmas(std::mem::take(orelse));
                    }
                    _ => {}
                }
                s
            })
            .collect()
    }
}

/// A function whose body (after a docstring) is only `return expr`.
fn is_simple(h: Option<&Helper>) -> bool {
    let Some(Ok(f)) = h.map(|h| &h.function) else { return false };
    let b = body_without_docstring(&f.body);
    b.len() == 1 && matches!(b[0].kind, StmtKind::Return(Some(_)))
}

fn body_without_docstring(body: &[Stmt]) -> &[Stmt] {
    match body.first().map(|s| &s.kind) {
        Some(StmtKind::Expr(Expr {
            kind: ExprKind::Str(_), ..
        })) => &body[1..],
        _ => body,
    }
}

fn is_builtin(n: &str) -> bool {
    matches!(
        n,
        "abs" | "min" | "max" | "sum" | "len" | "float" | "int" | "bool" | "range" | "round" | "print" | "True" | "False" | "None"
    )
}

/// Replaces names by expressions (a simple function's parameters by the arguments).
fn replace_names(e: &mut Expr, map: &HashMap<String, Expr>) {
    if let ExprKind::Name(n) = &e.kind
        && let Some(r) = map.get(n)
    {
        *e = r.clone();
        return;
    }
    if let ExprKind::Attribute { value, .. } = &mut e.kind {
        // `x.shape`: `x` may be a parameter; an attribute name is not a variable.
        replace_names(value, map);
        return;
    }
    e.for_each_child_mut(&mut |c| replace_names(c, map));
}

fn rename_expr(e: &mut Expr, map: &HashMap<String, String>) {
    if let ExprKind::Name(n) = &mut e.kind {
        if let Some(r) = map.get(n.as_str()) {
            *n = r.clone();
        }
        return;
    }
    if let ExprKind::Attribute { value, .. } = &mut e.kind {
        rename_expr(value, map);
        return;
    }
    e.for_each_child_mut(&mut |c| rename_expr(c, map));
}

/// Renames the variables of a statement (including loop variables and the names in
/// its pragma).
fn rename_stmt(s: &mut Stmt, map: &HashMap<String, String>) {
    if let Some(p) = &mut s.pragma {
        match &mut p.kind {
            PragmaKind::ParallelFor { shared, transforms, .. } => {
                let rename = |id: &mut Ident| {
                    if let Some(r) = map.get(&id.name) {
                        id.name = r.clone();
                    }
                };
                shared.iter_mut().for_each(rename);
                for t in transforms {
                    rename(&mut t.var);
                    if let crate::ast::TransformKind::Reorder(i) | crate::ast::TransformKind::Join(i) = &mut t.kind {
                        rename(i);
                    }
                }
            }
            PragmaKind::Tensor(dims) => {
                for d in dims {
                    for prop in &mut d.props {
                        if let TensorProp::Reduce { var, .. } = prop
                            && let Some(r) = map.get(&var.name)
                        {
                            var.name = r.clone();
                        }
                    }
                }
            }
            _ => {}
        }
    }
    match &mut s.kind {
        StmtKind::Assign { targets, value } => {
            targets.iter_mut().for_each(|t| rename_expr(t, map));
            rename_expr(value, map);
        }
        StmtKind::AugAssign { target, value, .. } => {
            rename_expr(target, map);
            rename_expr(value, map);
        }
        StmtKind::For { var, iter, body, stop } => {
            if let Some(r) = map.get(&var.name) {
                var.name = r.clone();
            }
            if let Some(r) = stop.as_ref().and_then(|f| map.get(f)) {
                *stop = Some(r.clone());
            }
            rename_expr(iter, map);
            body.iter_mut().for_each(|b| rename_stmt(b, map));
        }
        StmtKind::While { cond, body } => {
            rename_expr(cond, map);
            body.iter_mut().for_each(|b| rename_stmt(b, map));
        }
        StmtKind::If { cond, then, orelse } => {
            rename_expr(cond, map);
            then.iter_mut().chain(orelse.iter_mut()).for_each(|b| rename_stmt(b, map));
        }
        StmtKind::Return(Some(e)) | StmtKind::Expr(e) => rename_expr(e, map),
        StmtKind::Return(None) | StmtKind::Pass | StmtKind::Continue | StmtKind::Break => {}
    }
}
