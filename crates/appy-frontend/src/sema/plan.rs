//! One plan per `for` loop: how it runs (parallel, simd or sequential, from its
//! pragma, `prange`, or automatic vectorisation of inner loops), and its data sharing
//! (seed 001 §3.3): the scalar reductions, the `shared` scalars it assigns, the names
//! private to it, the array-element reductions of a simd loop, the atomic updates of a
//! `prange` loop, and why an unannotated loop was or was not vectorised.
//!
//! Plans are made by [`super::analysis`], which knows what every name is bound to
//! where the loop starts; lowering emits each loop as its plan says.

use super::Reduction;
use super::names::*;
use super::reductions::*;
use super::resolve::*;
use super::shape::{Kind, Names, needs_scalar_loop};
use super::simd::{NotVectorizable, vectorizable};
use crate::ast::*;
use appy_ir::diag::{Diagnostic, SourceFile, Span};
use std::collections::HashSet;
use std::rc::Rc;

/// How a loop runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LoopKind {
    /// `scf.for`: one iteration after another.
    Sequential,
    /// Iterations on workers (`scf.parallel {appy.parallel}`), with `simd` also vectors.
    Parallel {
        /// `#pragma parallel for simd`.
        simd: bool,
    },
    /// Iterations on the lanes of a vector (`scf.parallel {appy.simd}`).
    Simd,
}

impl LoopKind {
    /// Whether the iterations run on workers and whether on lanes; `None` for a
    /// sequential loop.
    pub fn flags(self) -> Option<(bool, bool)> {
        match self {
            LoopKind::Sequential => None,
            LoopKind::Parallel { simd } => Some((true, simd)),
            LoopKind::Simd => Some((false, true)),
        }
    }
}

/// Why an unannotated loop was or was not vectorised automatically (seed 000's inner
/// loop vectorisation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AutoSimd {
    /// Not a question: the loop has a pragma, or is a `prange` loop.
    Declared,
    /// The loop runs as a simd loop.
    Applied,
    /// It is not inside a parallel loop.
    NotInParallel,
    /// It is inside a simd loop already.
    InsideSimd,
    /// A `transform(...)` clause addresses it: it is scheduled by hand.
    Scheduled,
    /// Its body holds a statement that only runs outside simd loops (an array or vector
    /// statement, a call on a line of its own), here.
    NeedsScalarLoop(Span),
    /// Its iterations are not independent, or it is not innermost.
    NotVectorizable(NotVectorizable),
}

/// An array-element reduction in a simd loop (`y[i] += a[j] * x[j]` with `i` not
/// depending on the loop): the loop accumulates into the scalar `name`, and the element
/// is updated once after it.
#[derive(Clone, Debug)]
pub(crate) struct ElementRed {
    /// The element (`y[i]`).
    pub target: Expr,
    /// Its operator (`-=` accumulates negated values: a sum).
    pub op: Reduction,
    /// The scalar that accumulates it (`_appy_acc<N>`).
    pub name: String,
}

/// The plan of one `for` loop.
#[derive(Clone, Debug)]
pub(crate) struct LoopPlan {
    /// The `for` statement.
    pub span: Span,
    /// The loop variable.
    pub var: String,
    /// The loop's name in the IR (`appy_ir::schedule::INAMES`): its variable, made
    /// unique in the function (`i`, then `i_1`, `i_2`, ... for later loops over `i`).
    pub iname: String,
    /// How the loop runs.
    pub kind: LoopKind,
    /// Whether it iterates over `prange(...)`.
    pub prange: bool,
    /// Why it was or was not vectorised automatically.
    pub auto_simd: AutoSimd,
    /// The body to lower, when the plan rewrites it: a simd loop's element reductions
    /// accumulate in scalars.
    pub body: Option<Rc<Vec<Stmt>>>,
    /// The element reductions of a simd loop.
    pub element_reductions: Vec<ElementRed>,
    /// Scalars defined outside the loop that it reduces (in order of first assignment).
    pub reductions: Vec<(String, Reduction)>,
    /// `shared` scalars the loop assigns without a reduction: the value after the loop
    /// is one iteration's (APPy's rule).
    pub cells: Vec<String>,
    /// Every name the body assigns (private to the loop unless a reduction or a cell).
    pub assigned: Vec<String>,
    /// The names of `assigned` that are scalars defined outside the loop.
    pub outside: Vec<String>,
    /// A data-sharing error: lowering reports it when it reaches the loop.
    pub error: Option<Diagnostic>,
}

impl LoopPlan {
    /// The body to lower: the plan's rewritten one, else the loop's own `body`.
    pub fn body_or<'a>(&'a self, body: &'a [Stmt]) -> &'a [Stmt] {
        self.body.as_deref().map_or(body, |b| b.as_slice())
    }

    /// The names private to the loop: those it assigns that are neither reductions nor
    /// shared cells.
    pub fn privates(&self) -> impl Iterator<Item = &String> {
        self.assigned
            .iter()
            .filter(|n| !self.reductions.iter().any(|(m, _)| m == *n) && !self.cells.contains(n))
    }
}

/// Where a loop is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Context {
    /// Inside a parallel loop.
    pub in_parallel: bool,
    /// Inside a simd loop.
    pub in_simd: bool,
    /// A `transform(...)` clause of an enclosing loop addresses this loop.
    pub scheduled: bool,
}

/// Plans the loop `s` (`for var in iter: body`), with `env` the bindings where it
/// starts; `counter` numbers the scalars of element reductions.
pub(crate) fn plan(file: &SourceFile, env: &dyn Names, cx: Context, s: &Stmt, counter: &mut usize) -> LoopPlan {
    let StmtKind::For { var, iter, body, .. } = &s.kind else {
        unreachable!("plans are made for loops")
    };
    let imports = env.imports();
    let scalar_outside = |n: &str| env.kind(n) == Kind::Scalar;
    let prange = matches!(&iter.kind, ExprKind::Call { func, .. } if qualify(imports, func).unwrap_or_default().ends_with(".prange"));
    let mut plan = LoopPlan {
        span: s.span,
        var: var.name.clone(),
        iname: var.name.clone(),
        kind: LoopKind::Sequential,
        prange,
        auto_simd: AutoSimd::Declared,
        body: None,
        element_reductions: vec![],
        reductions: vec![],
        cells: vec![],
        assigned: vec![],
        outside: vec![],
        error: None,
    };
    let shared = match s.pragma.as_ref().map(|p| &p.kind) {
        Some(PragmaKind::ParallelFor { simd, shared, .. }) => {
            plan.kind = LoopKind::Parallel { simd: *simd };
            shared.clone()
        }
        Some(PragmaKind::Simd) => {
            plan.kind = LoopKind::Simd;
            vec![]
        }
        None if prange => {
            // High-level interface (seed 000): reductions are detected, not declared.
            // A scalar defined outside and updated with one reduction operator is a
            // reduction; updates of array elements that several iterations may share
            // were made atomic before (`super::prange`).
            plan.kind = LoopKind::Parallel { simd: false };
            let mut assigned = vec![];
            ast_names_assigned(body, &mut assigned);
            let mut shared: Vec<Ident> = vec![];
            for (n, sp) in &assigned {
                if scalar_outside(n) && *n != var.name && !shared.iter().any(|x| x.name == *n) && reduction_op(n, body, imports).is_some() {
                    shared.push(Ident {
                        name: n.clone(),
                        span: *sp,
                    });
                }
            }
            shared
        }
        None => {
            // Inner loop vectorization (seed 000): an innermost loop of a parallel loop
            // whose iterations are independent runs as a simd loop.
            plan.auto_simd = if !cx.in_parallel {
                AutoSimd::NotInParallel
            } else if cx.in_simd {
                AutoSimd::InsideSimd
            } else if cx.scheduled {
                AutoSimd::Scheduled
            } else if let Some(sp) = needs_scalar_loop(env, body) {
                AutoSimd::NeedsScalarLoop(sp)
            } else {
                match vectorizable(body, var, &scalar_outside, imports) {
                    Ok(()) => AutoSimd::Applied,
                    Err(why) => AutoSimd::NotVectorizable(why),
                }
            };
            if plan.auto_simd == AutoSimd::Applied {
                plan.kind = LoopKind::Simd;
            }
            vec![]
        }
        Some(_) => vec![],
    };
    let Some((parallel, simd)) = plan.kind.flags() else { return plan };
    if parallel && cx.in_simd {
        plan.error = Some(Diagnostic::error(
            file,
            s.span,
            "a parallel loop cannot be nested inside a simd loop",
        ));
        return plan;
    }
    if simd && !parallel {
        let (rewritten, reds) = element_reductions(file, var, body, counter);
        if !reds.is_empty() {
            plan.body = Some(Rc::new(rewritten));
            plan.element_reductions = reds;
        }
    }
    sharing(file, &mut plan, var, body, &shared, env);
    plan
}

/// Data sharing (seed 001 §3.3): scalars assigned in the body are private unless they
/// are reductions or `shared` cells; a scalar defined outside and assigned inside
/// otherwise is an error.
fn sharing(file: &SourceFile, plan: &mut LoopPlan, var: &Ident, body: &[Stmt], shared: &[Ident], env: &dyn Names) {
    let imports = env.imports();
    let parallel = matches!(plan.kind, LoopKind::Parallel { .. });
    let body: &[Stmt] = match &plan.body {
        Some(b) => b,
        None => body,
    };
    let mut assigned = vec![];
    ast_names_assigned(body, &mut assigned);
    let mut seen = HashSet::new();
    for (n, sp) in &assigned {
        if !seen.insert(n.clone()) {
            continue;
        }
        plan.assigned.push(n.clone());
        if *n == var.name {
            continue;
        }
        // The accumulators of element reductions are defined just before the loop.
        let defined_outside = env.kind(n) == Kind::Scalar || plan.element_reductions.iter().any(|r| r.name == *n);
        if defined_outside {
            plan.outside.push(n.clone());
        }
        if plan.error.is_some() {
            continue;
        }
        let red = reduction_op(n, body, imports);
        if shared.iter().any(|x| x.name == *n) {
            match (red, defined_outside) {
                (Some(op), true) => plan.reductions.push((n.clone(), op)),
                // APPy's rule: a plain assignment to a shared scalar is visible after
                // the loop (if several iterations assign, one of the values wins).
                (None, true) => plan.cells.push(n.clone()),
                (_, false) => {
                    plan.error = Some(Diagnostic::error(
                        file,
                        *sp,
                        format!("shared variable `{n}` must be initialised before the loop"),
                    ));
                }
            }
            continue;
        }
        if defined_outside {
            if !parallel && let Some(op) = red {
                plan.reductions.push((n.clone(), op));
                continue;
            }
            let what = if parallel { "parallel" } else { "simd" };
            let d = Diagnostic::error(
                file,
                *sp,
                format!(
                    "scalar `{n}` is defined outside this {what} loop and assigned inside it; each worker would get its own copy and the value after the loop is undefined"
                ),
            );
            plan.error = Some(if parallel && red.is_some() {
                d.with_note(format!("help: this looks like a reduction: add `shared({n})` to the pragma"))
            } else {
                d.with_note("help: use a new name inside the loop, or make it an array of size 1 and update it with `#pragma atomic`")
            });
        }
    }
}

/// Finds `X[idx] op= e` updates in a simd loop body whose indices do not depend on
/// the loop (reductions into one element, seed 000's array rule), and rewrites them to
/// updates of fresh scalars `_appy_acc<N>`.
fn element_reductions(file: &SourceFile, var: &Ident, body: &[Stmt], counter: &mut usize) -> (Vec<Stmt>, Vec<ElementRed>) {
    let mut assigned = vec![];
    ast_names_assigned(body, &mut assigned);
    let varying: HashSet<String> = assigned
        .iter()
        .map(|(n, _)| n.clone())
        .chain(std::iter::once(var.name.clone()))
        .collect();
    let mut found: Vec<ElementRed> = vec![];
    let text = file.text();
    fn key(text: &str, e: &Expr) -> String {
        text.get(e.span.start..e.span.end).unwrap_or("").split_whitespace().collect()
    }
    // Candidates.
    fn scan(stmts: &[Stmt], varying: &HashSet<String>, out: &mut Vec<(Expr, BinOp)>) {
        for s in stmts {
            match &s.kind {
                StmtKind::AugAssign {
                    target,
                    op: op @ (BinOp::Add | BinOp::Sub | BinOp::Mul),
                    ..
                } if s.pragma.is_none() => {
                    if let ExprKind::Subscript { value, indices } = &target.kind
                        && matches!(value.kind, ExprKind::Name(_))
                    {
                        let mut names = vec![];
                        for i in indices {
                            if let Index::Expr(x) = i {
                                expr_names(x, &mut names);
                            }
                        }
                        if names.iter().all(|(n, _)| !varying.contains(n)) && indices.iter().all(|i| matches!(i, Index::Expr(_))) {
                            out.push((target.clone(), *op));
                        }
                    }
                }
                StmtKind::If { then, orelse, .. } => {
                    scan(then, varying, out);
                    scan(orelse, varying, out);
                }
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => scan(body, varying, out),
                _ => {}
            }
        }
    }
    let mut cands = vec![];
    scan(body, &varying, &mut cands);
    let mut names_used = vec![];
    ast_names_read(body, &mut names_used);
    for (t, op) in cands {
        let ExprKind::Subscript { value, .. } = &t.kind else { continue };
        let ExprKind::Name(arr) = &value.kind else { continue };
        let k = key(text, &t);
        if found.iter().any(|f| key(text, &f.target) == k) {
            continue;
        }
        // The array must not be accessed otherwise in the loop.
        let uses = names_used.iter().filter(|(n, _)| n == arr).count();
        let same = count_target_updates(body, &k, text);
        if uses != same {
            continue;
        }
        *counter += 1;
        found.push(ElementRed {
            target: t,
            op: if op == BinOp::Mul { Reduction::Prod } else { Reduction::Sum },
            name: format!("_appy_acc{counter}"),
        });
    }
    if found.is_empty() {
        return (vec![], found);
    }
    fn rewrite(stmts: &[Stmt], found: &[ElementRed], text: &str) -> Vec<Stmt> {
        stmts
            .iter()
            .map(|s| {
                let mut s = s.clone();
                match &mut s.kind {
                    StmtKind::AugAssign { target, op, value } => {
                        let k = key(text, target);
                        if let Some(r) = found.iter().find(|f| key(text, &f.target) == k) {
                            let sp = target.span;
                            *target = Expr {
                                kind: ExprKind::Name(r.name.clone()),
                                span: sp,
                            };
                            if *op == BinOp::Sub {
                                *op = BinOp::Add;
                                *value = Expr {
                                    kind: ExprKind::Unary {
                                        op: UnaryOp::Neg,
                                        operand: Box::new(value.clone()),
                                    },
                                    span: value.span,
                                };
                            }
                        }
                    }
                    StmtKind::If { then, orelse, .. } => {
                        *then = rewrite(then, found, text);
                        *orelse = rewrite(orelse, found, text);
                    }
                    StmtKind::For { body, .. } | StmtKind::While { body, .. } => *body = rewrite(body, found, text),
                    _ => {}
                }
                s
            })
            .collect()
    }
    (rewrite(body, &found, text), found)
}
