//! Semantic analysis of a function specialised for its argument types, before any IR
//! is emitted: the type of every scalar variable and the plan of every loop.
//!
//! The analysis walks the function as lowering will, with the same scopes: the
//! function's, and one for the body of each parallel or simd loop, whose variables are
//! private to it. A *variable* is a name in the scope where it is first assigned; its
//! type is the join ([`appy_ir::types::promote`]) of the types of every value assigned
//! to it, as in Python with NumPy 2's promotion (`s = 0` followed by `s += a[i]` with
//! float32 `a` makes `s` a float32 from its first assignment on). Values assigned
//! through a reduction or a `shared` cell of a loop are assigned to the variable
//! outside it. Types only widen, so the walk is repeated until nothing changes.
//!
//! Each `for` loop gets its [`LoopPlan`] where the walk meets it, from the bindings
//! in force there ([`super::plan`]). Lowering reads both: a new slot takes the type of
//! its variable, a loop is emitted as its plan says.
//!
//! Where the analysis cannot tell a type (a construct lowering rejects, or one it does
//! not follow), the variable's type is unknown and lowering uses the type of the first
//! value assigned to it; nothing is rejected here.

use super::plan::{self, Context, LoopKind, LoopPlan};
use super::resolve::Imports;
use super::shape::{self, Kind, Names};
use super::types::{self, Env, Ty, type_of};
use crate::ast::*;
use appy_ir::diag::SourceFile;
use appy_ir::schedule::unique_iname;
use appy_ir::types::{ArgType, STy, promote};
use std::collections::{HashMap, HashSet};

/// The scope of the function's body.
pub(crate) const FUNCTION_SCOPE: usize = 0;

/// The scope of the body of the loop whose plan is `plans[k]`.
pub(crate) fn loop_scope(k: usize) -> usize {
    k + 1
}

/// A scope that holds no variables (the lanes of a vector statement).
pub(crate) const NO_SCOPE: usize = usize::MAX;

/// What the analysis found.
#[derive(Debug, Default)]
pub(crate) struct Analysis {
    /// The type of each variable whose type is known, by scope and name.
    slots: HashMap<(usize, String), STy>,
    /// One plan per `for` loop, numbered in source order, each named by its iname;
    /// lowering finds a loop's with [`Analysis::plan_of`], in whatever order it meets
    /// the loops.
    pub plans: Vec<LoopPlan>,
    /// The number of each loop's plan, by the loop statement's span (its identity in
    /// the source; spans shared by two plans are left out, so that neither is taken
    /// for the other).
    by_loop: HashMap<Span, usize>,
    /// The names that are never negative integers ([`types::nonneg_names`]), which
    /// decide the type of `x ** k`.
    pub nonneg: HashSet<String>,
}

impl Analysis {
    /// The type of the variable `name` of scope `scope`, when known.
    pub(crate) fn slot_type(&self, scope: usize, name: &str) -> Option<STy> {
        self.slots.get(&(scope, name.to_string())).copied()
    }

    /// The plan of the `for` loop whose statement spans `span`, and its number (the
    /// scope of the loop's body is [`loop_scope`] of it).
    pub(crate) fn plan_of(&self, span: Span) -> Option<(usize, &LoopPlan)> {
        self.by_loop.get(&span).map(|&k| (k, &self.plans[k]))
    }
}

/// [`Analysis::by_loop`] of `plans`.
fn by_loop(plans: &[LoopPlan]) -> HashMap<Span, usize> {
    let mut by: HashMap<Span, usize> = HashMap::new();
    let mut shared = HashSet::new();
    for (k, p) in plans.iter().enumerate() {
        if by.insert(p.span, k).is_some() {
            shared.insert(p.span);
        }
    }
    by.retain(|s, _| !shared.contains(s));
    by
}

/// Analyses `f` specialised for `args`.
pub(crate) fn analyze(file: &SourceFile, f: &Function, args: &[ArgType], imports: &Imports) -> Analysis {
    let nonneg = types::nonneg_names(&f.body, &f.params);
    let mut types: HashMap<Key, Slot> = HashMap::new();
    // Each walk widens types or changes nothing; the bound only guards the reasoning.
    for _ in 0..64 {
        let before = types.clone();
        let mut w = Walk {
            file,
            imports,
            scopes: vec![],
            types: &mut types,
            plans: vec![],
            counter: 0,
            nonneg: &nonneg,
            scheduled: vec![],
        };
        w.function(f, args);
        let plans = w.plans;
        if types == before {
            for p in &plans {
                let (line, col) = file.line_col(p.span.start);
                tracing::debug!(
                    line,
                    col,
                    var = p.var.as_str(),
                    iname = p.iname.as_str(),
                    kind = ?p.kind,
                    auto_simd = ?p.auto_simd,
                    reductions = ?p.reductions,
                    cells = ?p.cells,
                    "loop plan"
                );
            }
            let slots = types
                .into_iter()
                .filter_map(|(k, s)| match s {
                    Slot::Known(t) => Some((k, t)),
                    Slot::Unknown => None,
                })
                .collect();
            return Analysis {
                slots,
                by_loop: by_loop(&plans),
                plans,
                nonneg,
            };
        }
    }
    Analysis {
        nonneg,
        ..Analysis::default()
    }
}

/// A variable: its scope and name.
type Key = (usize, String);

/// What is known of a variable's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Known(STy),
    Unknown,
}

#[derive(Clone, Debug)]
enum Bind {
    /// A variable (lowering: a slot).
    Var(Key),
    /// An immutable value: a parameter, a loop variable, an array, ...
    Val(Ty),
    /// A variable private to a loop that has ended.
    Private,
}

/// What opened a scope (shared with the lowering's scopes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScopeKind {
    /// The function's body.
    Function,
    /// A parallel loop (`parallel for`, `prange`).
    Parallel,
    /// A simd loop, or a vector statement's lanes.
    Simd,
}

struct Scope {
    id: usize,
    kind: ScopeKind,
    vars: HashMap<String, Bind>,
}

struct Walk<'a> {
    file: &'a SourceFile,
    imports: &'a Imports,
    scopes: Vec<Scope>,
    types: &'a mut HashMap<Key, Slot>,
    plans: Vec<LoopPlan>,
    /// Numbers the accumulators of element reductions.
    counter: usize,
    /// [`Analysis::nonneg`].
    nonneg: &'a HashSet<String>,
    /// The loop variables that the `transform(...)` clauses of the enclosing loops
    /// address: their loops are scheduled by hand, not vectorised automatically.
    scheduled: Vec<String>,
}

impl Names for Walk<'_> {
    fn imports(&self) -> &Imports {
        self.imports
    }

    fn kind(&self, name: &str) -> Kind {
        match self.lookup(name) {
            None => Kind::Unbound,
            Some(Bind::Var(_)) => Kind::Scalar,
            Some(Bind::Val(t)) => t.kind(),
            Some(Bind::Private) => Kind::Private,
        }
    }
}

impl Env for Walk<'_> {
    fn value(&self, name: &str) -> Option<Ty> {
        match self.lookup(name)? {
            Bind::Var(k) => Some(Ty::S(match self.types.get(k) {
                Some(Slot::Known(t)) => Some(*t),
                _ => None,
            })),
            Bind::Val(t) => Some(t.clone()),
            Bind::Private => None,
        }
    }

    fn nonneg(&self, name: &str) -> bool {
        self.nonneg.contains(name)
    }
}

impl Walk<'_> {
    fn lookup(&self, name: &str) -> Option<&Bind> {
        self.scopes.iter().rev().find_map(|s| s.vars.get(name))
    }

    fn bind(&mut self, name: &str, b: Bind) {
        self.scopes.last_mut().expect("scope").vars.insert(name.to_string(), b);
    }

    fn push_scope(&mut self, id: usize, kind: ScopeKind) {
        self.scopes.push(Scope {
            id,
            kind,
            vars: HashMap::new(),
        });
    }

    /// Joins `t` into the type of variable `key`.
    fn join(&mut self, key: &Key, t: Option<STy>) {
        let new = match (self.types.get(key), t) {
            (_, None) | (Some(Slot::Unknown), _) => Slot::Unknown,
            (None, Some(t)) => Slot::Known(t),
            (Some(Slot::Known(a)), Some(b)) => Slot::Known(promote(*a, b)),
        };
        self.types.insert(key.clone(), new);
    }

    fn function(&mut self, f: &Function, args: &[ArgType]) {
        self.push_scope(FUNCTION_SCOPE, ScopeKind::Function);
        for (p, a) in f.params.iter().zip(args) {
            let t = match *a {
                ArgType::Array { dtype, rank } => Ty::Arr {
                    elem: Some(STy::strong(dtype)),
                    rank,
                    view: false,
                },
                ArgType::Scalar { dtype, weak } => Ty::S(Some(STy { dt: dtype, weak })),
            };
            self.bind(&p.name, Bind::Val(t));
        }
        // Parameters that are reassigned are variables.
        let mut assigned = vec![];
        super::names::ast_names_assigned(&f.body, &mut assigned);
        for (p, a) in f.params.iter().zip(args) {
            if let (ArgType::Scalar { dtype, weak }, true) = (a, assigned.iter().any(|(n, _)| *n == p.name)) {
                let key = (FUNCTION_SCOPE, p.name.clone());
                self.join(&key, Some(STy { dt: *dtype, weak: *weak }));
                self.bind(&p.name, Bind::Var(key));
            }
        }
        for s in &f.body {
            if !matches!(s.kind, StmtKind::Return(_)) {
                self.stmt(s);
            }
        }
    }

    fn block(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            if matches!(s.kind, StmtKind::Return(_)) {
                return;
            }
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        if shape::uses_vidx_stmt(self, s) {
            return self.vector_stmt(s);
        }
        if shape::is_array_stmt(self, s) {
            return self.array_stmt(s);
        }
        let atomic = matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic));
        match &s.kind {
            StmtKind::Assign { targets, value } if !atomic => {
                let v = self.value_of(value);
                for t in targets {
                    self.store_to(t, v.clone());
                }
            }
            StmtKind::AugAssign { target, op, value } if !atomic => {
                let t = self
                    .scalar(target)
                    .zip(self.scalar(value))
                    .map(|(a, b)| self.aug_type(*op, a, b, value));
                self.store_to(target, Ty::S(t));
            }
            StmtKind::If { then, orelse, .. } => {
                self.block(then);
                self.block(orelse);
            }
            StmtKind::For { .. } => self.for_loop(s),
            StmtKind::While { body, .. } => self.block(body),
            _ => {}
        }
    }

    fn scalar(&self, e: &Expr) -> Option<STy> {
        type_of(self, e).scalar()
    }

    /// The type of `t op= value` for `t` of type `a` and `value` of type `b`.
    fn aug_type(&self, op: BinOp, a: STy, b: STy, value: &Expr) -> STy {
        if op == BinOp::Pow {
            let sign = types::sign_of(value, &|n| self.nonneg.contains(n));
            return types::power_type(types::power(a, b, sign, false), a, b);
        }
        types::binary(op, a, b)
    }

    /// The value `e` binds to a name: a rank-0 array result is computed into a scalar,
    /// an array expression that is not a view into a new array.
    fn value_of(&self, e: &Expr) -> Ty {
        match type_of(self, e) {
            Ty::Arr { elem, rank: 0, .. } => Ty::S(elem),
            t @ Ty::Arr { .. } if matches!(e.kind, ExprKind::Name(_)) => t,
            Ty::Arr { elem, rank, .. } => Ty::Arr {
                elem: elem.map(|t| STy::strong(t.dt)),
                rank,
                view: shape::is_view_expr(self, e),
            },
            t => t,
        }
    }

    fn store_to(&mut self, t: &Expr, v: Ty) {
        match (&t.kind, v) {
            (ExprKind::Name(n), Ty::S(st)) => self.assign_scalar(n, st),
            (ExprKind::Name(n), Ty::Invalid) => self.assign_scalar(n, None),
            // (Rebinding a scalar variable to an array is lowering's error.)
            (ExprKind::Name(n), v) if !matches!(self.lookup(n), Some(Bind::Var(_))) => self.bind(n, Bind::Val(v)),
            (ExprKind::Tuple(ts), Ty::Tuple(vs)) if ts.len() == vs.len() => {
                for (t, v) in ts.iter().zip(vs) {
                    self.store_to(t, v);
                }
            }
            _ => {}
        }
    }

    /// Assigns a scalar of type `t` to `name`: to its variable, or to a new variable
    /// of the innermost scope.
    fn assign_scalar(&mut self, name: &str, t: Option<STy>) {
        let in_this_scope = self.scopes.last().is_some_and(|s| s.vars.contains_key(name));
        match self.lookup(name) {
            Some(Bind::Var(key)) => {
                let key = key.clone();
                self.join(&key, t);
            }
            // Errors for lowering: assigning a loop variable, rebinding an array.
            Some(Bind::Val(v)) if v.kind() == Kind::Scalar && in_this_scope => {}
            Some(Bind::Val(Ty::Arr { view: false, .. })) => {}
            _ => {
                let key = (self.scopes.last().expect("scope").id, name.to_string());
                self.join(&key, t);
                self.bind(name, Bind::Var(key));
            }
        }
    }

    /// A statement that computes with arrays: names bound to arrays or views, or a
    /// tensor statement (whose target may be a scalar: `s = np.sum(a)`).
    fn array_stmt(&mut self, s: &Stmt) {
        if let StmtKind::Assign { targets, value } = &s.kind
            && targets.iter().all(|t| matches!(t.kind, ExprKind::Name(_)))
            && matches!(shape::arank(self, value), Some(r) if r > 0 || targets.len() != 1)
        {
            let v = self.value_of(value);
            for t in targets {
                self.store_to(t, v.clone());
            }
            return;
        }
        let (target, aug, value) = match &s.kind {
            StmtKind::Assign { targets, value } if targets.len() == 1 => (&targets[0], None, value),
            StmtKind::AugAssign { target, op, value } => (target, Some(*op), value),
            _ => return,
        };
        let ExprKind::Name(n) = &target.kind else { return };
        if aug.is_some() && matches!(self.kind(n), Kind::Array(_) | Kind::Unbound) {
            return;
        }
        let mut t = type_of(self, value).scalar();
        if let Some(op) = aug {
            t = self.scalar(target).zip(t).map(|(a, b)| self.aug_type(op, a, b, value));
        }
        self.assign_scalar(n, t);
    }

    /// A statement over the lanes of vectors (`appy.vidx`): reductions of vectors are
    /// hoisted into scalars first, each typed with the vector names as lane indices.
    fn vector_stmt(&mut self, s: &Stmt) {
        let mut stmt = s.clone();
        let mut counter = 0;
        let mut hoisted = vec![];
        if let StmtKind::Assign { value, .. } | StmtKind::AugAssign { value, .. } = &mut stmt.kind {
            shape::hoist_vector_reductions(self, value, &mut counter, &mut hoisted);
        }
        let lanes: Vec<String> = self
            .scopes
            .iter()
            .flat_map(|s| s.vars.iter())
            .filter(|(_, b)| matches!(b, Bind::Val(Ty::Vidx)))
            .map(|(k, _)| k.clone())
            .collect();
        for (name, _, arg) in &hoisted {
            self.push_scope(NO_SCOPE, ScopeKind::Simd);
            for n in &lanes {
                self.bind(n, Bind::Val(Ty::S(Some(STy::INT))));
            }
            let t = self.scalar(arg);
            self.scopes.pop();
            self.bind(name, Bind::Val(Ty::S(t)));
        }
        // What is left of a statement that uses no vector after that is an ordinary
        // statement; a statement over lanes assigns no scalar variables.
        if !shape::uses_vidx_stmt(self, &stmt) {
            self.stmt(&stmt);
        }
    }

    fn for_loop(&mut self, s: &Stmt) {
        let StmtKind::For { var, body, .. } = &s.kind else { return };
        let cx = Context {
            in_parallel: self.scopes.iter().any(|sc| sc.kind == ScopeKind::Parallel),
            in_simd: self.scopes.iter().any(|sc| sc.kind == ScopeKind::Simd),
            scheduled: self.scheduled.contains(&var.name),
        };
        let mut counter = self.counter;
        let mut p = plan::plan(self.file, self, cx, s, &mut counter);
        self.counter = counter;
        p.iname = unique_iname(&p.var, |n| self.plans.iter().any(|q| q.iname == n));
        let k = self.plans.len();
        self.plans.push(p);
        let p = &self.plans[k];
        let (kind, failed, reds) = (p.kind, p.error.is_some(), p.element_reductions.clone());
        let planned = p.body.clone();
        if kind == LoopKind::Sequential {
            let prev = self.lookup(&var.name).cloned();
            if let Some(Bind::Var(_)) = prev {
                return;
            }
            self.bind(&var.name, Bind::Val(Ty::S(Some(STy::INT))));
            self.block(body);
            self.bind(&var.name, prev.unwrap_or(Bind::Private));
            return;
        }
        // The accumulators of element reductions are variables just outside the loop.
        for r in &reds {
            let t = match &r.target.kind {
                ExprKind::Subscript { value, .. } => type_of(self, value).element(),
                _ => None,
            };
            let key = (self.scopes.last().expect("scope").id, r.name.clone());
            self.join(&key, t);
            self.bind(&r.name, Bind::Var(key));
        }
        if failed {
            return;
        }
        let kind = if matches!(kind, LoopKind::Parallel { .. }) {
            ScopeKind::Parallel
        } else {
            ScopeKind::Simd
        };
        self.push_scope(loop_scope(k), kind);
        self.bind(&var.name, Bind::Val(Ty::S(Some(STy::INT))));
        let before = self.scheduled.len();
        if let Some(PragmaKind::ParallelFor { transforms, .. }) = s.pragma.as_ref().map(|p| &p.kind) {
            for t in transforms.iter().filter(|t| {
                !matches!(
                    t.kind,
                    crate::ast::TransformKind::Prefetch | crate::ast::TransformKind::Assume(_) | crate::ast::TransformKind::Privatize
                )
            }) {
                self.scheduled.push(t.var.name.clone());
                if let crate::ast::TransformKind::Reorder(inner) | crate::ast::TransformKind::Join(inner) = &t.kind {
                    self.scheduled.push(inner.name.clone());
                }
            }
        }
        self.block(planned.as_deref().map_or(body, |b| b.as_slice()));
        self.scheduled.truncate(before);
        self.scopes.pop();
        // Privates are not visible after the loop.
        let private: Vec<String> = self.plans[k].privates().cloned().collect();
        for n in private.iter().chain(std::iter::once(&var.name)) {
            if self.lookup(n).is_none() {
                self.bind(n, Bind::Private);
            }
        }
    }
}

#[cfg(test)]
#[path = "analysis_tests.rs"]
mod tests;
