//! Races a compiler can prove in parallel loops (`#pragma parallel for`, `prange`).
//!
//! The iterations of a parallel loop run in any order, at once on the GPU. Two kinds of
//! mistakes are visible in the source:
//!
//! - **A loop-carried dependence at a constant distance** on the parallel variable:
//!   `out[i] = out[i-1] + a[i]` reads in iteration `i` what iteration `i - 1` writes.
//!   A dependence test over affine subscripts (each index `c + a·i + Σ b·v`) finds the
//!   distance: two accesses of one array, at least one a write, whose subscripts agree in
//!   every dimension for iterations `i` and `i + d`, `d ≠ 0` a multiple of the step. This
//!   is an error (the program means its sequential order, which a parallel loop does not
//!   keep), with `#pragma sequential for` as the fix. When either access sits under an
//!   `if` the dependence may never happen, and it is a warning instead.
//! - **A non-atomic read-modify-write of an element whose index does not depend on the
//!   parallel variable** (`hist[idx[i]] += 1`, `s[0] += x`, `s[0] = s[0] + x`): several
//!   iterations may update one element at once and lose updates. A warning suggests
//!   `#pragma atomic` (unless the statement is atomic already, or is one `prange` makes
//!   atomic by itself).
//!
//! The analysis is syntactic and conservative: subscripts that are not affine, arrays
//! the loop rebinds, and scalars the body assigns from something other than the loop
//! variable make no claim. The existence of a dependence assumes the loop runs more
//! iterations than its distance.

use std::collections::{BTreeMap, HashSet};

use appy_ir::diag::{DResult, Diagnostic, SourceFile, Span};

use super::names::ast_names_assigned;
use super::resolve::{Imports, qualify};
use crate::ast::*;

/// Checks every parallel loop of `body`: `Err` for a proven loop-carried dependence,
/// else the warnings (possible dependences under `if`, non-atomic updates).
pub(crate) fn check(file: &SourceFile, body: &[Stmt], imports: &Imports) -> DResult<Vec<Diagnostic>> {
    let mut cx = Checker {
        file,
        imports,
        warnings: vec![],
    };
    cx.stmts(body)?;
    Ok(cx.warnings)
}

struct Checker<'a> {
    file: &'a SourceFile,
    imports: &'a Imports,
    warnings: Vec<Diagnostic>,
}

/// How a loop is parallel.
#[derive(Clone, Copy, PartialEq)]
enum Parallel {
    /// `#pragma parallel for`.
    Pragma,
    /// `for i in appy.prange(...)` without a pragma (updates of elements whose index
    /// does not use the variable become atomic by themselves).
    Prange,
}

/// One access of an array element in a parallel loop body.
#[derive(Clone, Debug)]
struct Access<'e> {
    array: &'e str,
    indices: Vec<&'e Index>,
    /// The subscript expression (for messages).
    span: Span,
    write: bool,
    /// In a `#pragma atomic` statement (or one `prange` makes atomic).
    atomic: bool,
    /// Under an `if` inside the loop body.
    guarded: bool,
    /// The statement it belongs to.
    stmt: usize,
}

impl Checker<'_> {
    fn stmts(&mut self, stmts: &[Stmt]) -> DResult<()> {
        for s in stmts {
            match &s.kind {
                StmtKind::For { var, iter, body } => {
                    if let Some(kind) = self.parallel(s, iter) {
                        self.parallel_loop(kind, var, iter, body)?;
                    }
                    self.stmts(body)?;
                }
                StmtKind::If { then, orelse, .. } => {
                    self.stmts(then)?;
                    self.stmts(orelse)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn parallel(&self, s: &Stmt, iter: &Expr) -> Option<Parallel> {
        match s.pragma.as_ref().map(|p| &p.kind) {
            Some(PragmaKind::ParallelFor { .. }) => Some(Parallel::Pragma),
            None => match &iter.kind {
                ExprKind::Call { func, .. } if qualify(self.imports, func).is_some_and(|q| q.ends_with(".prange")) => {
                    Some(Parallel::Prange)
                }
                _ => None,
            },
            _ => None,
        }
    }

    fn text(&self, span: Span) -> String {
        self.file
            .text()
            .get(span.start..span.end)
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn parallel_loop(&mut self, kind: Parallel, var: &Ident, iter: &Expr, body: &[Stmt]) -> DResult<()> {
        let mut assigned = vec![];
        ast_names_assigned(body, &mut assigned);
        let local: HashSet<&str> = assigned.iter().map(|(n, _)| n.as_str()).collect();
        if local.contains(var.name.as_str()) {
            // The body rebinds the loop variable: subscripts no longer follow it.
            return Ok(());
        }
        let mut inner = HashSet::new();
        inner_loop_vars(body, &mut inner);
        let varying = varying_names(&var.name, body);
        let mut accesses = vec![];
        let mut stmt_no = 0;
        collect_stmts(body, kind, &varying, false, &mut stmt_no, &mut accesses);
        let accesses: Vec<Access> = accesses.into_iter().filter(|a| !local.contains(a.array)).collect();
        let env = Env {
            var: &var.name,
            local: &local,
            inner: &inner,
            step: range_step(iter),
        };
        self.dependences(&env, &accesses)?;
        self.updates(kind, var, &varying, body);
        Ok(())
    }

    /// The loop-carried dependences at constant distance among `accesses`.
    fn dependences(&mut self, env: &Env, accesses: &[Access]) -> DResult<()> {
        let mut reported = HashSet::new();
        for w in accesses.iter().filter(|a| a.write) {
            for r in accesses {
                if (r.write && r.span.start <= w.span.start && r.span != w.span) || r.array != w.array || (w.atomic && r.atomic) {
                    continue;
                }
                let Some(d) = distance(env, w, r) else { continue };
                if !reported.insert((w.array, w.stmt.min(r.stmt), w.stmt.max(r.stmt))) {
                    continue;
                }
                let (wt, rt) = (self.text(w.span), self.text(r.span));
                let v = env.var;
                let (first, second) = if d > 0 {
                    (
                        format!("iteration `{v}` writes `{wt}`"),
                        format!("iteration `{v} + {d}` {} `{rt}`", verb(r)),
                    )
                } else {
                    (
                        format!("iteration `{v}` {} `{rt}`", verb(r)),
                        format!("iteration `{v} + {}` writes `{wt}`", -d),
                    )
                };
                let msg = format!(
                    "loop-carried dependence on `{}` in a parallel loop: {first}, and {second}, the same element",
                    w.array
                );
                let at = if d > 0 { r.span } else { w.span };
                let (wl, wc) = self.file.line_col(w.span.start);
                let help = "help: the iterations of a parallel loop run in any order and at once; to keep their order, \
                            make the loop sequential: `#pragma sequential for` (for `prange`, loop over `range`)";
                if w.guarded || r.guarded {
                    let d = Diagnostic::warning(self.file, at, format!("possible {msg} (when the `if` around it holds for both)"))
                        .with_note(format!("note: the write is at line {wl}, column {wc}"))
                        .with_note(help);
                    self.warnings.push(d);
                } else {
                    return Err(Diagnostic::error(self.file, at, msg)
                        .with_note(format!("note: the write is at line {wl}, column {wc}"))
                        .with_note(help));
                }
            }
        }
        Ok(())
    }

    /// Warns about non-atomic read-modify-writes of elements whose index does not
    /// depend on the parallel variable.
    fn updates(&mut self, kind: Parallel, var: &Ident, varying: &HashSet<String>, body: &[Stmt]) {
        for s in body {
            match &s.kind {
                StmtKind::For { body, .. } => self.updates(kind, var, varying, body),
                StmtKind::If { cond, then, orelse } => {
                    // `if i == 0: s[0] += x` runs in one iteration: no claim under a
                    // condition on the loop variable.
                    if !direct_uses(cond, varying) {
                        self.updates(kind, var, varying, then);
                        self.updates(kind, var, varying, orelse);
                    }
                }
                _ => {
                    let atomic = matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic));
                    let Some((target, form)) = read_modify_write(s, kind) else {
                        continue;
                    };
                    let ExprKind::Subscript { indices, .. } = &target.kind else {
                        continue;
                    };
                    if atomic || indices.iter().any(|i| index_direct_uses(i, varying)) {
                        continue;
                    }
                    let t = self.text(target.span);
                    let help = match form {
                        Form::Aug => "help: write `#pragma atomic` on the line above to make the update atomic".to_string(),
                        Form::Assign => format!(
                            "help: write it as an augmented assignment (`{t} += ...`) or `{t} = max({t}, ...)` with `#pragma atomic` on the line above"
                        ),
                    };
                    self.warnings.push(
                        Diagnostic::warning(
                            self.file,
                            s.span,
                            format!(
                                "`{t}` is updated without synchronisation in a parallel loop: its index does not depend on `{}`, so several iterations may update the same element at once and lose updates",
                                var.name
                            ),
                        )
                        .with_note(help),
                    );
                }
            }
        }
    }
}

fn verb(a: &Access) -> &'static str {
    if a.write { "writes" } else { "reads" }
}

/// How a statement updates its target.
enum Form {
    /// `t op= v`.
    Aug,
    /// `t = f(t, ...)`.
    Assign,
}

/// The target of `s` if it reads and writes the same array element; `prange` makes
/// `+=`, `-=`, `*=` updates of such elements atomic by itself, so those are left out.
fn read_modify_write(s: &Stmt, kind: Parallel) -> Option<(&Expr, Form)> {
    match &s.kind {
        StmtKind::AugAssign { target, op, .. } => {
            let auto = kind == Parallel::Prange && matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul);
            (!auto && flat_subscript(target).is_some()).then_some((target, Form::Aug))
        }
        StmtKind::Assign { targets, value } if targets.len() == 1 => {
            let t = &targets[0];
            let (arr, idx) = flat_subscript(t)?;
            let mut found = false;
            walk_subscripts(value, &mut |e| {
                if let Some((a, i)) = flat_subscript(e) {
                    found |= a == arr && same_indices(&i, &idx);
                }
            });
            found.then_some((t, Form::Assign))
        }
        _ => None,
    }
}

/// Structural equality of index lists (spans ignored).
fn same_indices(a: &[&Index], b: &[&Index]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| strip(x) == strip(y))
}

/// An index with every span zeroed (for structural comparison).
fn strip(i: &Index) -> Index {
    let mut i = i.clone();
    let zero = Span::new(0, 0);
    fn expr(e: &mut Expr) {
        e.span = Span::new(0, 0);
        e.for_each_child_mut(&mut expr);
    }
    match &mut i {
        Index::Expr(e) => expr(e),
        Index::Slice { lower, upper, step, span } => {
            *span = zero;
            [lower, upper, step].into_iter().flatten().for_each(|e| expr(e));
        }
        Index::NewAxis(s) => *s = zero,
    }
    i
}

/// What the dependence test knows about the loop.
struct Env<'a> {
    var: &'a str,
    /// Names the body assigns (per-iteration values).
    local: &'a HashSet<&'a str>,
    /// Loop variables of inner loops (free in each iteration).
    inner: &'a HashSet<String>,
    /// The constant step of the parallel loop, if it has one.
    step: Option<i64>,
}

/// The constant step of `range(...)`/`prange(...)` (1 with fewer than 3 arguments).
fn range_step(iter: &Expr) -> Option<i64> {
    let ExprKind::Call { args, .. } = &iter.kind else { return None };
    match args.get(2) {
        None => Some(1),
        Some(s) => {
            let a = affine(s)?;
            a.terms.is_empty().then_some(a.c).filter(|c| *c != 0)
        }
    }
}

/// `c + Σ coeff·name`.
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct Affine {
    pub(crate) terms: BTreeMap<String, i64>,
    pub(crate) c: i64,
}

impl Affine {
    fn scale(mut self, k: i64) -> Option<Affine> {
        self.c = self.c.checked_mul(k)?;
        for v in self.terms.values_mut() {
            *v = v.checked_mul(k)?;
        }
        self.terms.retain(|_, v| *v != 0);
        Some(self)
    }

    fn add(mut self, o: Affine) -> Option<Affine> {
        self.c = self.c.checked_add(o.c)?;
        for (n, k) in o.terms {
            let e = self.terms.entry(n).or_insert(0);
            *e = e.checked_add(k)?;
        }
        self.terms.retain(|_, v| *v != 0);
        Some(self)
    }

    fn coeff(&self, n: &str) -> i64 {
        self.terms.get(n).copied().unwrap_or(0)
    }
}

/// `e` as an affine function of the names in it, if it is one.
pub(crate) fn affine(e: &Expr) -> Option<Affine> {
    match &e.kind {
        ExprKind::Int(v) => Some(Affine {
            c: *v,
            ..Default::default()
        }),
        ExprKind::Name(n) => Some(Affine {
            terms: BTreeMap::from([(n.clone(), 1)]),
            c: 0,
        }),
        ExprKind::Unary { op: UnaryOp::Pos, operand } => affine(operand),
        ExprKind::Unary { op: UnaryOp::Neg, operand } => affine(operand)?.scale(-1),
        ExprKind::Binary { op: BinOp::Add, lhs, rhs } => affine(lhs)?.add(affine(rhs)?),
        ExprKind::Binary { op: BinOp::Sub, lhs, rhs } => affine(lhs)?.add(affine(rhs)?.scale(-1)?),
        ExprKind::Binary { op: BinOp::Mul, lhs, rhs } => {
            let (l, r) = (affine(lhs)?, affine(rhs)?);
            match (l.terms.is_empty(), r.terms.is_empty()) {
                (true, _) => r.scale(l.c),
                (_, true) => l.scale(r.c),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The dependence distance `d ≠ 0` (in units of the loop variable) such that access
/// `w` in iteration `i` and access `r` in iteration `i + d` touch the same element.
fn distance(env: &Env, w: &Access, r: &Access) -> Option<i64> {
    if w.indices.len() != r.indices.len() {
        return None;
    }
    let mut dist: Option<i64> = None;
    for (x, y) in w.indices.iter().zip(&r.indices) {
        match (x, y) {
            (Index::Expr(x), Index::Expr(y)) => {
                let (x, y) = (affine(x)?, affine(y)?);
                let a = x.coeff(env.var);
                if a != y.coeff(env.var) {
                    return None;
                }
                // Every other name: the same coefficient on both sides, and either
                // invariant in the loop or an inner loop variable (which may take the
                // same value in both iterations).
                let names: HashSet<&String> = x.terms.keys().chain(y.terms.keys()).filter(|n| *n != env.var).collect();
                for n in names {
                    if x.coeff(n) != y.coeff(n) || (env.local.contains(n.as_str()) && !env.inner.contains(n)) {
                        return None;
                    }
                }
                if a == 0 {
                    if x.c != y.c {
                        return None;
                    }
                    continue;
                }
                // a·i + x.c = a·(i + d) + y.c
                let diff = x.c.checked_sub(y.c)?;
                if diff % a != 0 {
                    return None;
                }
                let d = diff / a;
                if dist.is_some_and(|p| p != d) {
                    return None;
                }
                dist = Some(d);
            }
            (Index::Slice { .. }, Index::Slice { .. }) => {
                let mut names = vec![];
                if let Index::Slice { lower, upper, step, .. } = x {
                    for e in [lower, upper, step].into_iter().flatten() {
                        super::names::expr_names(e, &mut names);
                    }
                }
                if strip(x) != strip(y) || names.iter().any(|(n, _)| n == env.var || env.local.contains(n.as_str())) {
                    return None;
                }
            }
            (Index::NewAxis(_), Index::NewAxis(_)) => {}
            _ => return None,
        }
    }
    let d = dist.filter(|d| *d != 0)?;
    let step = env.step?;
    (d % step == 0).then_some(d)
}

/// `a[i][j]` and `a[i, j]` as (`a`, [i, j]).
fn flat_subscript(e: &Expr) -> Option<(&str, Vec<&Index>)> {
    match &e.kind {
        ExprKind::Subscript { value, indices } => {
            let (name, mut idx) = match &value.kind {
                ExprKind::Name(n) => (n.as_str(), vec![]),
                _ => flat_subscript(value)?,
            };
            idx.extend(indices.iter());
            Some((name, idx))
        }
        _ => None,
    }
}

/// Calls `f` on every sub-expression of `e`, `e` included, without recursion.
fn walk_subscripts<'e>(e: &'e Expr, f: &mut impl FnMut(&'e Expr)) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        f(e);
        e.for_each_child(&mut |c| stack.push(c));
    }
}

/// Every element access of `e` (reads), the outermost subscript of a chain only.
fn reads<'e>(e: &'e Expr, out: &mut Vec<(&'e str, Vec<&'e Index>, Span)>) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        if let Some((a, idx)) = flat_subscript(e) {
            out.push((a, idx.clone(), e.span));
            for i in idx {
                index_children(i, &mut |c| stack.push(c));
            }
            continue;
        }
        e.for_each_child(&mut |c| stack.push(c));
    }
}

fn index_children<'e>(i: &'e Index, f: &mut impl FnMut(&'e Expr)) {
    match i {
        Index::Expr(x) => f(x),
        Index::Slice { lower, upper, step, .. } => [lower, upper, step].into_iter().flatten().for_each(|x| f(x)),
        Index::NewAxis(_) => {}
    }
}

/// The accesses of `stmts` (numbered from `*n`).
fn collect_stmts<'e>(
    stmts: &'e [Stmt],
    kind: Parallel,
    varying: &HashSet<String>,
    guarded: bool,
    n: &mut usize,
    out: &mut Vec<Access<'e>>,
) {
    for s in stmts {
        *n += 1;
        let stmt = *n;
        let atomic = matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic))
            || (kind == Parallel::Prange
                && matches!(&s.kind, StmtKind::AugAssign { target, op: BinOp::Add | BinOp::Sub | BinOp::Mul, .. }
                    if flat_subscript(target).is_some_and(|(_, idx)| !idx.iter().any(|i| index_direct_uses(i, varying)))));
        let push_reads = |e: &'e Expr, out: &mut Vec<Access<'e>>| {
            let mut rs = vec![];
            reads(e, &mut rs);
            out.extend(rs.into_iter().map(|(array, indices, span)| Access {
                array,
                indices,
                span,
                write: false,
                atomic,
                guarded,
                stmt,
            }));
        };
        let target = |t: &'e Expr, read_too: bool, out: &mut Vec<Access<'e>>| {
            let mut targets = vec![t];
            while let Some(t) = targets.pop() {
                match &t.kind {
                    ExprKind::Tuple(items) => targets.extend(items),
                    _ => {
                        if let Some((array, indices)) = flat_subscript(t) {
                            for i in &indices {
                                index_children(i, &mut |c| push_reads(c, out));
                            }
                            let a = Access {
                                array,
                                indices,
                                span: t.span,
                                write: true,
                                atomic,
                                guarded,
                                stmt,
                            };
                            if read_too {
                                out.push(Access { write: false, ..a.clone() });
                            }
                            out.push(a);
                        }
                    }
                }
            }
        };
        match &s.kind {
            StmtKind::Assign { targets, value } => {
                push_reads(value, out);
                targets.iter().for_each(|t| target(t, false, out));
            }
            StmtKind::AugAssign { target: t, value, .. } => {
                push_reads(value, out);
                target(t, true, out);
            }
            StmtKind::For { iter, body, .. } => {
                push_reads(iter, out);
                collect_stmts(body, kind, varying, guarded, n, out);
            }
            StmtKind::If { cond, then, orelse } => {
                push_reads(cond, out);
                collect_stmts(then, kind, varying, true, n, out);
                collect_stmts(orelse, kind, varying, true, n, out);
            }
            StmtKind::Return(Some(e)) | StmtKind::Expr(e) => push_reads(e, out),
            _ => {}
        }
    }
}

fn inner_loop_vars(stmts: &[Stmt], out: &mut HashSet<String>) {
    for s in stmts {
        match &s.kind {
            StmtKind::For { var, body, .. } => {
                out.insert(var.name.clone());
                inner_loop_vars(body, out);
            }
            StmtKind::If { then, orelse, .. } => {
                inner_loop_vars(then, out);
                inner_loop_vars(orelse, out);
            }
            _ => {}
        }
    }
}

/// Whether `e` uses one of `names` other than inside a subscript's indices (`idx[i]`
/// does not count: its value is data, not a function of `i` the compiler can see).
fn direct_uses(e: &Expr, names: &HashSet<String>) -> bool {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match &e.kind {
            ExprKind::Name(n) if names.contains(n) => return true,
            ExprKind::Subscript { value, .. } => stack.push(value),
            // `x.shape` names an attribute, not a variable.
            _ => e.for_each_child(&mut |c| stack.push(c)),
        }
    }
    false
}

fn index_direct_uses(i: &Index, names: &HashSet<String>) -> bool {
    let mut found = false;
    index_children(i, &mut |c| found |= direct_uses(c, names));
    found
}

/// The parallel variable and the names whose value follows it: inner loop variables
/// whose range uses one, scalars assigned from one (to a fixed point).
fn varying_names(var: &str, body: &[Stmt]) -> HashSet<String> {
    let mut defs: Vec<(&str, &Expr)> = vec![];
    fn defs_of<'e>(stmts: &'e [Stmt], out: &mut Vec<(&'e str, &'e Expr)>) {
        for s in stmts {
            match &s.kind {
                StmtKind::Assign { targets, value } => {
                    for t in targets {
                        if let ExprKind::Name(n) = &t.kind {
                            out.push((n, value));
                        } else if let ExprKind::Tuple(items) = &t.kind {
                            // `a, b = x, y`: each name depends on the whole value.
                            items
                                .iter()
                                .filter_map(|x| if let ExprKind::Name(n) = &x.kind { Some(n) } else { None })
                                .for_each(|n| out.push((n, value)));
                        }
                    }
                }
                StmtKind::AugAssign { target, value, .. } => {
                    if let ExprKind::Name(n) = &target.kind {
                        out.push((n, value));
                    }
                }
                StmtKind::For { var, iter, body } => {
                    out.push((&var.name, iter));
                    defs_of(body, out);
                }
                StmtKind::If { then, orelse, .. } => {
                    defs_of(then, out);
                    defs_of(orelse, out);
                }
                _ => {}
            }
        }
    }
    defs_of(body, &mut defs);
    let mut v: HashSet<String> = HashSet::from([var.to_string()]);
    loop {
        let before = v.len();
        for (n, e) in &defs {
            if !v.contains(*n) && direct_uses(e, &v) {
                v.insert(n.to_string());
            }
        }
        if v.len() == before {
            return v;
        }
    }
}

#[cfg(test)]
#[path = "races_tests.rs"]
mod tests;
