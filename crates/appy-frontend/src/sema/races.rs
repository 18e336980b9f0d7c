//! Races a compiler can prove in parallel loops (`#pragma parallel for`, `prange`).
//!
//! The iterations of a parallel loop run in any order, at once on the GPU. Two kinds of
//! mistakes are visible in the source:
//!
//! - **A loop-carried dependence at a constant distance** on the parallel variable:
//!   `out[i] = out[i-1] + a[i]` reads in iteration `i` what iteration `i - 1` writes.
//!   A dependence test over affine subscripts (each index `c + a·i + Σ b·v`) finds the
//!   distance: two accesses of one array, at least one a write, whose subscripts agree in
//!   every dimension for iterations `i` and `i + d`, `d ≠ 0` a multiple of the step. An
//!   inner loop variable `v` may take different values in the two iterations: what the
//!   test knows of them comes from its `range` ([`characterise`]): a constant step `s`
//!   and a start that is, modulo `s`, affine in `i` (`1 + (i + c) % 2` is `1 + i + c`
//!   modulo 2) make its two values differ by `alpha·d + s·u` (`u` any integer, or
//!   `|u| < n` for a loop of a constant `n` iterations), and the equations of all
//!   dimensions are solved exactly over the integers (the GCD and parity tests:
//!   red-black relaxation's rows meet only at the other colour's columns). This is an
//!   error (the program means its sequential order, which a parallel loop does not
//!   keep), naming the distance and how the inner variables differ, with `#pragma
//!   sequential for` as the fix. When either access sits under an `if` the dependence
//!   may never happen, and it is a warning instead.
//! - **A non-atomic read-modify-write of an element whose index does not depend on the
//!   parallel variable** (`hist[idx[i]] += 1`, `s[0] += x`, `s[0] = s[0] + x`): several
//!   iterations may update one element at once and lose updates. A warning suggests
//!   `#pragma atomic` (unless the statement is atomic already, or is one `prange` makes
//!   atomic by itself).
//!
//! The analysis is syntactic and conservative: subscripts that are not affine, arrays
//! the loop rebinds, scalars the body assigns from something other than the loop
//! variable, and inner loop variables whose values it cannot characterise (a start of
//! unknown parity with a step of 2, a step that is not a constant, an iterable other
//! than a `range`, a loop whose length is neither a constant nor grows with a name)
//! make no claim. The existence of a dependence assumes the loop runs more iterations
//! than its distance (checked when its length is a constant), and an inner loop whose
//! length grows with a name (`range(1, N - 1)`) enough iterations for both values.

use std::collections::{BTreeMap, HashSet};

use appy_ir::affine::{gcd, smallest_nonzero, solve};
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
    /// The loops of the parallel loop's body around it, outermost first.
    scope: Vec<Loop<'e>>,
}

/// A loop inside a parallel loop's body.
#[derive(Clone, Copy, Debug)]
struct Loop<'e> {
    var: &'e str,
    iter: &'e Expr,
    body: &'e [Stmt],
}

impl Checker<'_> {
    fn stmts(&mut self, stmts: &[Stmt]) -> DResult<()> {
        for s in stmts {
            match &s.kind {
                StmtKind::For { var, iter, body, .. } => {
                    if let Some(kind) = self.parallel(s, iter) {
                        self.parallel_loop(kind, var, iter, body)?;
                    }
                    self.stmts(body)?;
                }
                StmtKind::While { body, .. } => self.stmts(body)?,
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
        let varying = varying_names(&var.name, body);
        let mut accesses = vec![];
        let mut stmt_no = 0;
        collect_stmts(body, kind, &varying, false, &mut stmt_no, &mut vec![], &mut accesses);
        let accesses: Vec<Access> = accesses.into_iter().filter(|a| !local.contains(a.array)).collect();
        let env = Env {
            var: &var.name,
            local: &local,
            imports: self.imports,
            step: range_step(iter),
            trips: range_trips(self.imports, iter),
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
                let Some(Witness { d, shifts }) = dependence(env, w, r) else {
                    continue;
                };
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
                // The inner loop variables that differ between the two iterations, as
                // seen from the later one.
                let when: Vec<String> = shifts
                    .iter()
                    .map(|(n, s)| {
                        let s = if d > 0 { *s } else { -s };
                        format!("`{n}` is {} {}", s.abs(), if s > 0 { "more" } else { "less" })
                    })
                    .collect();
                let when = if when.is_empty() {
                    String::new()
                } else {
                    format!(" when {} in iteration `{v} + {}`", when.join(" and "), d.abs())
                };
                let msg = format!(
                    "loop-carried dependence on `{}` in a parallel loop: {first}, and {second}, the same element{when}",
                    w.array
                );
                let at = if d > 0 { r.span } else { w.span };
                let (wl, wc) = self.file.line_col(w.span.start);
                let help = "help: the iterations of a parallel loop run in any order and at once; to keep their order, \
                            make the loop sequential: `#pragma sequential for` (for `prange`, loop over `range`)";
                if w.guarded || r.guarded {
                    let d = Diagnostic::warning(
                        self.file,
                        at,
                        format!("possible {msg} (provided the `if` around it holds for both)"),
                    )
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
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => self.updates(kind, var, varying, body),
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
/// `+=` and `-=` updates of such elements atomic by itself (`sema/prange.rs`, which
/// refuses `*=`), so those are left out.
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
    match &mut i {
        Index::Expr(e) => zero_spans(e),
        Index::Slice { lower, upper, step, span } => {
            *span = zero;
            [lower, upper, step].into_iter().flatten().for_each(|e| zero_spans(e));
        }
        Index::NewAxis(s) => *s = zero,
    }
    i
}

fn zero_spans(e: &mut Expr) {
    e.span = Span::new(0, 0);
    e.for_each_child_mut(&mut zero_spans);
}

/// `e` with every span zeroed (for structural comparison).
fn strip_expr(e: &Expr) -> Expr {
    let mut e = e.clone();
    zero_spans(&mut e);
    e
}

/// What the dependence test knows about the loop.
struct Env<'a> {
    var: &'a str,
    /// Names the body assigns (per-iteration values), inner loop variables included.
    local: &'a HashSet<&'a str>,
    imports: &'a Imports,
    /// The constant step of the parallel loop, if it has one.
    step: Option<i64>,
    /// The parallel loop's number of iterations, if it is a constant.
    trips: Option<i64>,
}

/// The constant step of `range(...)`/`prange(...)` (1 with fewer than 3 arguments).
fn range_step(iter: &Expr) -> Option<i64> {
    let ExprKind::Call { args, .. } = &iter.kind else { return None };
    constant_step(args.get(2))
}

/// A step: 1 if absent, else a non-zero constant.
fn constant_step(step: Option<&Expr>) -> Option<i64> {
    match step {
        None => Some(1),
        Some(s) => {
            let a = affine(s)?;
            a.terms.is_empty().then_some(a.c).filter(|c| *c != 0 && *c != i64::MIN)
        }
    }
}

/// `(start, stop, step)` of `range(...)` or `prange(...)`, `None` for a default.
fn range_args<'e>(imports: &Imports, iter: &'e Expr) -> Option<(Option<&'e Expr>, &'e Expr, Option<&'e Expr>)> {
    let ExprKind::Call { func, args, kwargs } = &iter.kind else {
        return None;
    };
    let q = qualify(imports, func)?;
    if !kwargs.is_empty() || !(q == "builtins.range" || q.ends_with(".prange")) {
        return None;
    }
    match args.as_slice() {
        [stop] => Some((None, stop, None)),
        [start, stop] => Some((Some(start), stop, None)),
        [start, stop, step] => Some((Some(start), stop, Some(step))),
        _ => None,
    }
}

/// `stop - start` of a range, each side as [`linear`].
fn range_width(start: Option<&Expr>, stop: &Expr) -> Option<Affine> {
    linear(stop).checked_add(&start.map_or_else(Affine::default, linear).scale(-1)?)
}

/// How many values `range(0, width, step)` has.
fn trip_count(width: i64, step: i64) -> i64 {
    let (w, g) = (i128::from(width) * i128::from(step.signum()), i128::from(step).abs());
    let n = if w <= 0 { 0 } else { (w - 1) / g + 1 };
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The number of iterations of a `range(...)` loop, if it is a constant.
fn range_trips(imports: &Imports, iter: &Expr) -> Option<i64> {
    let (start, stop, step) = range_args(imports, iter)?;
    let width = range_width(start, stop)?;
    if !width.terms.is_empty() {
        return None;
    }
    Some(trip_count(width.c, constant_step(step)?))
}

/// `c + Σ coeff·name` (the project's affine form over source names).
pub(crate) type Affine = appy_ir::affine::Affine<String>;

/// `e` as an affine function of the names in it, if it is one.
pub(crate) fn affine(e: &Expr) -> Option<Affine> {
    affine_mod(e, 0)
}

/// An affine function of the names in `e` congruent to `e` modulo `m` (equal to `e`
/// when `m` is 0): `x % k` counts as `x` when `m` divides the constant `k` (Python's
/// `x % k` differs from `x` by a multiple of `k`), so `1 + (i + c) % 2` is `1 + i + c`
/// modulo 2.
pub(crate) fn affine_mod(e: &Expr, m: i64) -> Option<Affine> {
    let f = |e| affine_mod(e, m);
    match &e.kind {
        ExprKind::Int(v) => Some(Affine::constant(*v)),
        ExprKind::Name(n) => Some(Affine::var(n.clone())),
        ExprKind::Unary { op: UnaryOp::Pos, operand } => f(operand),
        ExprKind::Unary { op: UnaryOp::Neg, operand } => f(operand)?.scale(-1),
        ExprKind::Binary { op: BinOp::Add, lhs, rhs } => f(lhs)?.checked_add(&f(rhs)?),
        ExprKind::Binary { op: BinOp::Sub, lhs, rhs } => f(lhs)?.checked_sub(&f(rhs)?),
        ExprKind::Binary { op: BinOp::Mul, lhs, rhs } => f(lhs)?.checked_mul(f(rhs)?),
        ExprKind::Binary { op: BinOp::Mod, lhs, rhs } if m != 0 => match rhs.kind {
            ExprKind::Int(k) if k != 0 && k % m == 0 => f(lhs),
            _ => None,
        },
        _ => None,
    }
}

/// `e` as `c + Σ coeff·term`, where a term is a name or, for a sub-expression that is
/// not affine, an atom named by its text: `%…` for `x % k` (`k` a constant: bounded),
/// `#…` for any other (a call, a subscript, `x // 2`).
fn linear(e: &Expr) -> Affine {
    let l = match &e.kind {
        ExprKind::Int(_) | ExprKind::Name(_) => affine(e),
        ExprKind::Unary { op: UnaryOp::Pos, operand } => Some(linear(operand)),
        ExprKind::Unary { op: UnaryOp::Neg, operand } => linear(operand).scale(-1),
        ExprKind::Binary { op: BinOp::Add, lhs, rhs } => linear(lhs).checked_add(&linear(rhs)),
        ExprKind::Binary { op: BinOp::Sub, lhs, rhs } => linear(lhs).checked_sub(&linear(rhs)),
        ExprKind::Binary { op: BinOp::Mul, lhs, rhs } => linear(lhs).checked_mul(linear(rhs)),
        _ => None,
    };
    l.unwrap_or_else(|| {
        let bounded = matches!(&e.kind, ExprKind::Binary { op: BinOp::Mod, rhs, .. } if matches!(rhs.kind, ExprKind::Int(k) if k != 0));
        Affine::var(format!("{}{:?}", if bounded { '%' } else { '#' }, strip_expr(e).kind))
    })
}

/// What the dependence test knows of the values an inner loop variable takes in an
/// iteration of the parallel loop: its value in iteration `i + d` differs from one in
/// iteration `i` by `alpha·d + step·u` for an integer `u`: any integer when `trips` is
/// `None` (the loop is taken to run enough iterations), `|u| < trips` when the loop
/// runs a constant number of times from a start that is affine in the parallel
/// variable (`alpha` its coefficient).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Values {
    alpha: i64,
    step: i64,
    trips: Option<i64>,
}

impl Values {
    /// Any value in either iteration.
    const ANY: Values = Values {
        alpha: 0,
        step: 1,
        trips: None,
    };
}

/// The values of the variable of `lp` if the compiler can tell them: `lp` is a
/// `range(start, stop, step)` loop with a constant step whose body does not assign the
/// variable, and either `stop - start` is a constant (a constant number of iterations)
/// and `start` an affine function of the parallel variable and names the body does not
/// assign, or `stop - start` grows with such a name (`N`, `i`) and `start` modulo the
/// step is such a function (`1 + (i + c) % 2` is `1 + i + c` modulo 2). Otherwise `None`:
/// no claim.
fn characterise(env: &Env, lp: &Loop) -> Option<Values> {
    let (start, stop, step) = range_args(env.imports, lp.iter)?;
    let mut assigned = vec![];
    ast_names_assigned(lp.body, &mut assigned);
    if assigned.iter().any(|(n, _)| n == lp.var) {
        return None;
    }
    let g = constant_step(step)?;
    let known_name = |n: &str| n == env.var || !env.local.contains(n);
    let known = |a: &Affine| a.terms.keys().all(|n| known_name(n));
    let width = range_width(start, stop)?;
    if width.terms.is_empty() {
        let trips = trip_count(width.c, g);
        let s = start.map_or(Some(Affine::default()), affine)?;
        return (trips > 0 && known(&s)).then_some(Values {
            alpha: s.coeff(env.var),
            step: g.abs(),
            trips: Some(trips),
        });
    }
    let grows = width
        .terms
        .iter()
        .any(|(n, k)| !n.starts_with(['%', '#']) && known_name(n) && k.signum() == g.signum());
    if !grows {
        return None;
    }
    if g.abs() == 1 {
        return Some(Values::ANY);
    }
    let s = start.map_or(Some(Affine::default()), |s| affine_mod(s, g.abs()))?;
    known(&s).then_some(Values {
        alpha: s.coeff(env.var).rem_euclid(g.abs()),
        step: g.abs(),
        trips: None,
    })
}

/// The innermost loop of `scope` over `n`.
fn loop_over<'s, 'e>(scope: &'s [Loop<'e>], n: &str) -> Option<&'s Loop<'e>> {
    scope.iter().rev().find(|l| l.var == n)
}

/// What a name other than the parallel variable in the subscripts of `w` and `r` is:
/// `Some(None)` for one the body does not assign (the same value in every iteration),
/// `Some(Some(values))` for the variable of loops around both accesses whose values are
/// known, and `None` (no claim) for any other.
fn inner_values(env: &Env, w: &Access, r: &Access, n: &str) -> Option<Option<Values>> {
    match (loop_over(&w.scope, n), loop_over(&r.scope, n)) {
        (None, None) => (!env.local.contains(n)).then_some(None),
        (Some(lw), Some(lr)) => {
            let (vw, vr) = (characterise(env, lw)?, characterise(env, lr)?);
            // One loop, loops over the same range (the same values in every iteration),
            // or loops whose variable may take any value.
            let same = std::ptr::eq(lw.iter, lr.iter) || strip_expr(lw.iter) == strip_expr(lr.iter);
            ((same || vw == Values::ANY) && vw == vr).then_some(Some(vw))
        }
        _ => None,
    }
}

/// A loop-carried dependence: access `w` in iteration `i` and access `r` in iteration
/// `i + d` touch the same element when each inner loop variable of `shifts` has, in
/// iteration `i + d`, its value in iteration `i` plus the shift (and the other inner
/// loop variables the same value).
struct Witness {
    d: i64,
    shifts: Vec<(String, i64)>,
}

/// Most values of a bounded inner variable's `u` tried (either side of 0), and of
/// combinations of them.
const BOUNDED_SHIFTS: i64 = 16;
const BOUNDED_COMBINATIONS: usize = 4096;

/// How a solution ranks among others (smaller first): `(|e|, e < 0, Σ|δ| of the
/// bounded variables)`.
type Rank = (i128, bool, i128);

/// The loop-carried dependence of `r` on `w` at the smallest distance, if one is proven.
///
/// Subscripts are affine, with the same coefficient of every name on both sides. In
/// iteration `i + d` (`d = p·e`, `p` the parallel loop's step, `e ≠ 0`), inner variable
/// `v` differs from its value in iteration `i` by `δ_v = alpha_v·d + step_v·u_v` (see
/// [`Values`]); dimension `k`, `c_w + a·i + Σ b_v·v = c_r + a·(i + d) + Σ b_v·(v + δ_v)`,
/// is the linear equation `(a + Σ b_v·alpha_v)·p·e + Σ b_v·step_v·u_v = c_w - c_r` over
/// the integers. The system of all dimensions is solved exactly (a Hermite reduction,
/// which holds the GCD and parity tests); a bounded `u_v` is tried at each of its values.
fn dependence(env: &Env, w: &Access, r: &Access) -> Option<Witness> {
    if w.indices.len() != r.indices.len() {
        return None;
    }
    // Per dimension: the coefficient of the parallel variable, those of inner loop
    // variables, and the write's constant minus the read's.
    let mut dims: Vec<(i64, BTreeMap<String, i64>, i64)> = vec![];
    let mut vars: BTreeMap<String, Values> = BTreeMap::new();
    for (x, y) in w.indices.iter().zip(&r.indices) {
        match (x, y) {
            (Index::Expr(x), Index::Expr(y)) => {
                let (x, y) = (affine(x)?, affine(y)?);
                if x.terms != y.terms {
                    return None;
                }
                let mut inner = BTreeMap::new();
                for (n, k) in x.terms.iter().filter(|(n, _)| *n != env.var) {
                    if let Some(v) = inner_values(env, w, r, n)? {
                        vars.insert(n.clone(), v);
                        inner.insert(n.clone(), *k);
                    }
                }
                dims.push((x.coeff(env.var), inner, x.c.checked_sub(y.c)?));
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
    // Accesses whose subscripts do not follow the parallel variable meet in any two
    // iterations or none: not a dependence at a distance (see `updates`).
    if dims.iter().all(|(a, _, _)| *a == 0) {
        return None;
    }
    let p = i128::from(env.step?);
    let vars: Vec<(String, Values)> = vars.into_iter().collect();
    let n = vars.len() + 1;
    // Unknowns: e, then u_v for each inner variable.
    let mut rows: Vec<(Vec<i128>, i128)> = dims
        .iter()
        .map(|(a, inner, c)| {
            let mut row = vec![0; n];
            let mut ae = i128::from(*a);
            for (j, (name, v)) in vars.iter().enumerate() {
                let b = i128::from(inner.get(name).copied().unwrap_or(0));
                ae += b * i128::from(v.alpha);
                row[j + 1] = b * i128::from(v.step);
            }
            row[0] = ae * p;
            (row, i128::from(*c))
        })
        .collect();
    let unit = |j: usize| (0..n).map(|c| i128::from(c == j)).collect::<Vec<i128>>();
    let shift = |j: usize, e: i128, u: i128| i128::from(vars[j].1.alpha) * p * e + i128::from(vars[j].1.step) * u;
    // Each combination of the bounded variables' `u`, smallest first.
    let bounded: Vec<usize> = (0..vars.len()).filter(|&j| vars[j].1.trips.is_some()).collect();
    let domains: Vec<Vec<i128>> = bounded
        .iter()
        .map(|&j| {
            let t = (vars[j].1.trips.unwrap_or(1) - 1).min(BOUNDED_SHIFTS);
            std::iter::once(0).chain((1..=t).flat_map(|k| [k, -k])).map(i128::from).collect()
        })
        .collect();
    if domains.iter().map(Vec::len).product::<usize>() > BOUNDED_COMBINATIONS {
        return None;
    }
    // The best solution so far: its rank, e, and the bounded variables' u.
    let mut best: Option<(Rank, i128, Vec<i128>)> = None;
    let mut at = vec![0; bounded.len()];
    loop {
        let combo: Vec<i128> = at.iter().zip(&domains).map(|(&k, d)| d[k]).collect();
        let mut sys = rows.clone();
        sys.extend(bounded.iter().zip(&combo).map(|(&j, &u)| (unit(j + 1), u)));
        if let Some((x, kernel)) = solve(&sys, n) {
            let h = kernel.iter().fold(0, |g, k| gcd(g, k[0]));
            let e = smallest_nonzero(x[0], h).filter(|e| env.trips.is_none_or(|t| e.abs() < i128::from(t)));
            if let Some(e) = e {
                let cost = bounded.iter().zip(&combo).map(|(&j, &u)| shift(j, e, u).abs()).sum::<i128>();
                let key = (e.abs(), e < 0, cost);
                if best.as_ref().is_none_or(|(k, _, _)| key < *k) {
                    best = Some((key, e, combo));
                }
            }
        }
        // The next combination.
        let Some(k) = (0..at.len()).find(|&k| at[k] + 1 < domains[k].len()) else {
            break;
        };
        at[k] += 1;
        at[..k].iter_mut().for_each(|a| *a = 0);
    }
    let (_, e, combo) = best?;
    // A witness: this distance, these bounded shifts, and as many other inner
    // variables as can be the same value in both iterations.
    rows.extend(bounded.iter().zip(&combo).map(|(&j, &u)| (unit(j + 1), u)));
    rows.push((unit(0), e));
    for j in (0..vars.len()).filter(|j| !bounded.contains(j)) {
        let mut row = vec![0; n];
        row[0] = i128::from(vars[j].1.alpha) * p;
        row[j + 1] = i128::from(vars[j].1.step);
        rows.push((row, 0));
        if solve(&rows, n).is_none() {
            rows.pop();
        }
    }
    let (x, _) = solve(&rows, n)?;
    let mut shifts = vec![];
    for (j, (name, _)) in vars.iter().enumerate() {
        let s = shift(j, e, x[j + 1]);
        if s != 0 {
            shifts.push((name.clone(), i64::try_from(s).ok()?));
        }
    }
    Some(Witness {
        d: i64::try_from(e * p).ok()?,
        shifts,
    })
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
    scope: &mut Vec<Loop<'e>>,
    out: &mut Vec<Access<'e>>,
) {
    for s in stmts {
        *n += 1;
        let stmt = *n;
        let here = scope.clone();
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
                scope: here.clone(),
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
                                scope: here.clone(),
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
            // A `while` body may run any number of times, as if guarded.
            StmtKind::While { cond, body } => {
                push_reads(cond, out);
                collect_stmts(body, kind, varying, true, n, scope, out);
            }
            StmtKind::For { var, iter, body, .. } => {
                push_reads(iter, out);
                scope.push(Loop {
                    var: &var.name,
                    iter,
                    body,
                });
                collect_stmts(body, kind, varying, guarded, n, scope, out);
                scope.pop();
            }
            StmtKind::If { cond, then, orelse } => {
                push_reads(cond, out);
                collect_stmts(then, kind, varying, true, n, scope, out);
                collect_stmts(orelse, kind, varying, true, n, scope, out);
            }
            StmtKind::Return(Some(e)) | StmtKind::Expr(e) => push_reads(e, out),
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
                StmtKind::For { var, iter, body, .. } => {
                    out.push((&var.name, iter));
                    defs_of(body, out);
                }
                StmtKind::While { body, .. } => defs_of(body, out),
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
