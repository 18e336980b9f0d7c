//! AST → `appy` level IR.
//!
//! The `appy` level is upstream MLIR (`func`, `scf`, `arith`, `math`, `memref`) plus
//! appy's loop annotations:
//!
//! * `#pragma parallel for` → `scf.parallel {appy.parallel}`; a `shared(s)` reduction
//!   becomes an `scf.parallel` reduction (`scf.reduce`) whose result is stored back.
//! * `#pragma simd` → `scf.parallel {appy.simd}` nested in the worker, with reductions
//!   detected from the source (every update of the scalar uses one reduction operator).
//! * `#pragma parallel for simd` → `scf.parallel {appy.parallel, appy.simd}`.
//! * sequential loops → `scf.for` (`{appy.sequential}` when annotated).
//! * `#pragma atomic` → `memref.atomic_rmw`.
//! * Python scalar variables live in `memref.alloca` slots of the scope that owns them
//!   (the function, or the body of a parallel/simd loop, which makes them private);
//!   LLVM promotes them to registers.
//! * statements using an `appy.vidx` vector run as a lane loop (`scf.parallel
//!   {appy.simd}`), with `sum/max/min` of a vector as a reduction over the lanes.
//!
//! The function is specialised for concrete argument types ([`ArgType`]).

use crate::ast::*;
use appy_ir::build::{Builder, FPred, IPred};
use appy_ir::diag::{DResult, Diagnostic, SourceFile, Span};
use appy_ir::ir::{Block, Op, Region, Value};
use appy_ir::types::{ArgType, DType, STy, memref_type, promote};
use std::collections::{HashMap, HashSet};

mod tensor;

/// Options that affect the `appy` level (part of the specialisation key). `appy.MVL` is
/// not one of them: it stays symbolic (`appy.mvl`) until strip-mining.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LowerOptions {}

/// The result of lowering one function.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The module, holding one `func.func`.
    pub module: appy_ir::ir::Module,
    /// The function's symbol name.
    pub name: String,
    /// Parameter names, in order.
    pub params: Vec<String>,
    /// The types of the returned values (a tuple return gives several).
    pub results: Vec<ArgType>,
}

/// Lowers `program`'s function, specialised for `args`, to the `appy` level.
pub fn lower(file: &SourceFile, program: &Program, args: &[ArgType], _opts: &LowerOptions) -> DResult<Lowered> {
    let f = &program.function;
    if f.params.len() != args.len() {
        return Err(Diagnostic::error(
            file,
            f.name.span,
            format!(
                "`{}` takes {} argument{} but {} {} given",
                f.name.name,
                f.params.len(),
                if f.params.len() == 1 { "" } else { "s" },
                args.len(),
                if args.len() == 1 { "was" } else { "were" }
            ),
        ));
    }
    // A variable's type is the join of the types assigned to it (`s = 0` followed by
    // `s += a[i]` makes `s` a float, as in Python): when an assignment widens a
    // variable, lowering restarts with the wider type for it from the first assignment.
    let mut hints: HashMap<String, STy> = HashMap::new();
    let l = loop {
        let mut l = Lower {
            file,
            b: Builder::new(),
            scopes: vec![],
            imports: Imports::new(&program.imports),
            results: None,
            counter: 0,
            hints: hints.clone(),
            widen: None,
            auto_simd: f
                .options
                .iter()
                .any(|(k, v)| k.name == "auto_simd" && matches!(v.kind, ExprKind::Bool(true))),
            seq_worker: 0,
        };
        match l.function(f, args) {
            Ok(()) => break l,
            Err(e) => match l.widen.take() {
                Some((name, t)) if hints.len() < 64 && hints.get(&name) != Some(&t) => {
                    hints.insert(name, t);
                }
                _ => return Err(e),
            },
        }
    };
    let results = l.results.clone().unwrap_or_default();
    Ok(Lowered {
        module: l.b.m,
        name: f.name.name.clone(),
        params: f.params.iter().map(|p| p.name.clone()).collect(),
        results,
    })
}

/// What module-level names refer to.
struct Imports {
    /// alias → module path (`np` → `numpy`).
    modules: HashMap<String, String>,
    /// alias → `module.name` (`prange` → `appy.prange`).
    names: HashMap<String, String>,
}

impl Imports {
    fn new(imports: &[Import]) -> Self {
        let mut modules = HashMap::new();
        let mut names = HashMap::new();
        for i in imports {
            match i {
                Import::Module { module, alias, .. } => {
                    modules.insert(alias.clone(), module.clone());
                }
                Import::From { module, names: ns, .. } => {
                    for (n, a) in ns {
                        names.insert(a.clone(), format!("{module}.{n}"));
                    }
                }
            }
        }
        Imports { modules, names }
    }
}

/// Canonical name of a callee or attribute path (`np.exp` → `numpy.exp`).
fn qualify(imports: &Imports, e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Name(n) => {
            if let Some(q) = imports.names.get(n) {
                Some(q.clone())
            } else if let Some(m) = imports.modules.get(n) {
                Some(m.clone())
            } else {
                Some(format!("builtins.{n}"))
            }
        }
        ExprKind::Attribute { value, attr } => Some(format!("{}.{}", qualify(imports, value)?, attr.name)),
        _ => None,
    }
}

/// An array-element reduction in a simd loop: the target, its operator, the scalar
/// that accumulates it.
type ElementRed = (Expr, BinOp, String);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RedOp {
    Add,
    Mul,
    Max,
    Min,
}

#[derive(Clone, Debug)]
enum V {
    /// A scalar SSA value.
    S(Value, STy),
    /// An array (memref).
    Arr(Value, DType, usize),
    /// A tuple (shapes, multiple values).
    Tuple(Vec<V>),
    /// `appy.vidx(start, len, bound)`.
    Vidx { start: Value, len: Value, bound: Value },
}

#[derive(Clone, Debug)]
enum Binding {
    /// A mutable scalar in a `memref<T>` slot.
    Slot(Value, STy),
    /// An immutable value (loop variables, snapshots, arrays).
    Val(V),
    /// A variable private to a loop that has ended.
    Private(Span),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScopeKind {
    Function,
    Parallel,
    Simd,
}

struct Scope {
    kind: ScopeKind,
    vars: HashMap<String, Binding>,
    /// Slots to place at the start of the scope's region.
    allocas: Vec<Op>,
    /// Names assigned in this scope's loop body (private unless reductions).
    privates: HashSet<String>,
}

struct Lower<'a> {
    file: &'a SourceFile,
    b: Builder,
    scopes: Vec<Scope>,
    imports: Imports,
    results: Option<Vec<ArgType>>,
    counter: usize,
    /// Types of variables widened by a previous attempt.
    hints: HashMap<String, STy>,
    /// Set when an assignment needs a wider variable type (lowering restarts).
    widen: Option<(String, STy)>,
    /// `@appy.jit(auto_simd=True)`: tensor statements get `simd` on their last dimension.
    auto_simd: bool,
    /// Depth of `sequential for` loops (their bodies run on one worker).
    seq_worker: usize,
}

fn ast_names_assigned(stmts: &[Stmt], out: &mut Vec<(String, Span)>) {
    fn target(e: &Expr, out: &mut Vec<(String, Span)>) {
        match &e.kind {
            ExprKind::Name(n) => out.push((n.clone(), e.span)),
            ExprKind::Tuple(es) => es.iter().for_each(|x| target(x, out)),
            _ => {}
        }
    }
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { targets, .. } => targets.iter().for_each(|t| target(t, out)),
            StmtKind::AugAssign { target: t, .. } => target(t, out),
            StmtKind::For { var, body, .. } => {
                out.push((var.name.clone(), var.span));
                ast_names_assigned(body, out);
            }
            StmtKind::If { then, orelse, .. } => {
                ast_names_assigned(then, out);
                ast_names_assigned(orelse, out);
            }
            _ => {}
        }
    }
}

fn expr_names(e: &Expr, out: &mut Vec<(String, Span)>) {
    match &e.kind {
        ExprKind::Name(n) => out.push((n.clone(), e.span)),
        _ => e.for_each_child(&mut |c| expr_names(c, out)),
    }
}

/// Names read in statements (targets of plain assignment to a name excluded).
fn ast_names_read(stmts: &[Stmt], out: &mut Vec<(String, Span)>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { targets, value } => {
                for t in targets {
                    if !matches!(t.kind, ExprKind::Name(_) | ExprKind::Tuple(_)) {
                        expr_names(t, out);
                    }
                }
                expr_names(value, out);
            }
            StmtKind::AugAssign { target, value, .. } => {
                expr_names(target, out);
                expr_names(value, out);
            }
            StmtKind::For { iter, body, .. } => {
                expr_names(iter, out);
                ast_names_read(body, out);
            }
            StmtKind::If { cond, then, orelse } => {
                expr_names(cond, out);
                ast_names_read(then, out);
                ast_names_read(orelse, out);
            }
            StmtKind::Return(Some(e)) | StmtKind::Expr(e) => expr_names(e, out),
            _ => {}
        }
    }
}

fn is_name(e: &Expr, n: &str) -> bool {
    matches!(&e.kind, ExprKind::Name(x) if x == n)
}

impl<'a> Lower<'a> {
    fn err(&self, span: Span, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.file, span, msg)
    }

    fn set_loc(&mut self, span: Span) {
        let (l, c) = self.file.line_col(span.start);
        let name = self.file.name().replace('\\', "\\\\").replace('"', "\\\"");
        self.b.loc = Some(format!("\"{name}\":{l}:{c}"));
    }

    // ----- scopes and variables -------------------------------------------------

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().find_map(|s| s.vars.get(name))
    }

    fn bind(&mut self, name: &str, b: Binding) {
        self.scopes.last_mut().expect("scope").vars.insert(name.to_string(), b);
    }

    fn new_slot(&mut self, ty: STy) -> Value {
        let (op, v) = self.b.alloca_op(ty.mlir());
        self.scopes.last_mut().expect("scope").allocas.push(op);
        v
    }

    fn push_scope(&mut self, kind: ScopeKind) {
        self.scopes.push(Scope {
            kind,
            vars: HashMap::new(),
            allocas: vec![],
            privates: HashSet::new(),
        });
    }

    /// Closes a scope, placing its slots at the start of `ops`.
    fn pop_scope(&mut self, ops: &mut Vec<Op>) -> Scope {
        let mut s = self.scopes.pop().expect("scope");
        let mut all = std::mem::take(&mut s.allocas);
        all.append(ops);
        *ops = all;
        s
    }

    /// Assigns a scalar to a variable, creating its slot on first assignment.
    fn assign_scalar(&mut self, name: &str, v: Value, t: STy, span: Span) -> DResult<()> {
        match self.lookup(name).cloned() {
            Some(Binding::Slot(slot, st)) => {
                if !st.is_float() && t.is_float() {
                    self.widen = Some((name.to_string(), promote(st, t)));
                    return Err(self
                        .err(
                            span,
                            format!(
                                "`{name}` holds {} values but is assigned a {} here; appy needs one type per variable",
                                tyname(st),
                                tyname(t)
                            ),
                        )
                        .with_note(format!(
                            "help: initialise `{name}` with a value of the wider type, e.g. `{name} = 0.0`"
                        )));
                }
                let c = self.b.cast(v, t, st);
                self.b.store(c, slot, &[]);
                Ok(())
            }
            Some(Binding::Val(V::S(..))) if self.scopes.last().map(|s| s.vars.contains_key(name)) == Some(true) => {
                Err(self.err(span, format!("cannot assign to the loop variable `{name}`")))
            }
            Some(Binding::Val(V::Arr(..))) => Err(self.err(span, format!("`{name}` is an array; it cannot be rebound to a scalar"))),
            _ => {
                let ty = self.var_type(name).unwrap_or(t);
                let slot = self.new_slot(ty);
                let c = self.b.cast(v, t, ty);
                self.b.store(c, slot, &[]);
                self.bind(name, Binding::Slot(slot, ty));
                Ok(())
            }
        }
    }

    /// The type a scalar variable will hold: the join of the types of every value
    /// assigned to it in the function (so `s = 0` followed by `s += a[i]` is a float).
    fn var_type(&mut self, name: &str) -> Option<STy> {
        self.hints.get(name).copied()
    }

    // ----- function --------------------------------------------------------------

    fn function(&mut self, f: &Function, args: &[ArgType]) -> DResult<()> {
        self.set_loc(f.name.span);
        self.push_scope(ScopeKind::Function);
        let mut params = vec![];
        for (p, a) in f.params.iter().zip(args) {
            let v = self.b.m.value(a.mlir());
            params.push(v);
            let bind = match *a {
                ArgType::Array { dtype, rank } => {
                    if dtype == DType::Bool {
                        return Err(self.err(p.span, "boolean arrays are not supported; pass an integer array"));
                    }
                    Binding::Val(V::Arr(v, dtype, rank))
                }
                ArgType::Scalar { dtype, weak } => Binding::Val(V::S(v, STy { dt: dtype, weak })),
            };
            self.bind(&p.name, bind);
        }
        // Parameters that are reassigned become mutable slots.
        let mut assigned = vec![];
        ast_names_assigned(&f.body, &mut assigned);
        for (p, a) in f.params.iter().zip(args) {
            if let (ArgType::Scalar { dtype, weak }, true) = (a, assigned.iter().any(|(n, _)| *n == p.name)) {
                let t = STy { dt: *dtype, weak: *weak };
                let Some(Binding::Val(V::S(v, _))) = self.lookup(&p.name).cloned() else {
                    continue;
                };
                let slot = self.new_slot(t);
                self.b.store(v, slot, &[]);
                self.bind(&p.name, Binding::Slot(slot, t));
            }
        }
        for opt in &f.options {
            if opt.0.name != "auto_simd" && opt.0.name != "dump_code" && opt.0.name != "backend" && opt.0.name != "dry_run" {
                return Err(self
                    .err(opt.0.span, format!("unknown option `{}` for appy.jit", opt.0.name))
                    .with_note("help: known options: auto_simd"));
            }
        }
        let n = f.body.len();
        let mut ret: Vec<Value> = vec![];
        for (i, s) in f.body.iter().enumerate() {
            if let StmtKind::Return(val) = &s.kind {
                if i + 1 != n {
                    return Err(self.err(s.span, "`return` is only supported as the last statement of the function"));
                }
                self.set_loc(s.span);
                ret = self.return_values(val.as_ref())?;
            } else {
                self.stmt(s)?;
            }
        }
        self.set_loc(f.name.span);
        self.b.op0("func.return", &ret, &[]);
        let mut ops = self.b.end();
        self.pop_scope(&mut ops);
        let ftype = format!(
            "({}) -> ({})",
            args.iter().map(|a| a.mlir()).collect::<Vec<_>>().join(", "),
            ret.iter().map(|v| self.b.m.ty(*v).to_string()).collect::<Vec<_>>().join(", ")
        );
        let func = Op::new("func.func")
            .with_attr("function_type", ftype)
            .with_attr("sym_name", format!("\"{}\"", f.name.name))
            .with_attr("llvm.emit_c_interface", "unit")
            .with_region(Region::single(Block { args: params, ops }))
            .with_loc(self.b.loc.clone());
        self.b.m.body_mut().push(func);
        Ok(())
    }

    fn return_values(&mut self, e: Option<&Expr>) -> DResult<Vec<Value>> {
        let Some(e) = e else {
            self.results = Some(vec![]);
            return Ok(vec![]);
        };
        let v = self.expr(e)?;
        let vals = match v {
            V::Tuple(vs) => vs,
            v => vec![v],
        };
        let mut out = vec![];
        let mut tys = vec![];
        for v in vals {
            match v {
                V::S(x, t) => {
                    out.push(x);
                    tys.push(ArgType::Scalar { dtype: t.dt, weak: t.weak });
                }
                V::Arr(x, d, r) => {
                    out.push(x);
                    tys.push(ArgType::Array { dtype: d, rank: r });
                }
                _ => return Err(self.err(e.span, "only scalars and arrays can be returned")),
            }
        }
        self.results = Some(tys);
        Ok(out)
    }

    // ----- statements ------------------------------------------------------------

    fn block(&mut self, stmts: &[Stmt]) -> DResult<()> {
        for s in stmts {
            if let StmtKind::Return(_) = s.kind {
                return Err(self.err(s.span, "`return` is only supported as the last statement of the function"));
            }
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> DResult<()> {
        self.set_loc(s.span);
        if let Some(p) = &s.pragma {
            let ok = matches!(
                (&p.kind, &s.kind),
                (
                    PragmaKind::ParallelFor { .. } | PragmaKind::Simd | PragmaKind::SequentialFor,
                    StmtKind::For { .. }
                ) | (PragmaKind::Atomic, StmtKind::AugAssign { .. } | StmtKind::Assign { .. })
            );
            if let PragmaKind::Tensor(_) = p.kind
                && !tensor::is_tensor_stmt(s)
            {
                return Err(self
                    .err(p.span, "a tensor pragma must annotate a statement in sliced index notation")
                    .with_note("help: e.g. `#pragma :M=>parallel :N=>simd` above `C[:M, :N] = A[:M, :N] + B[:M, :N]`"));
            }
            if !ok && !matches!(p.kind, PragmaKind::Tensor(_)) {
                return Err(self
                    .err(p.span, format!("`#pragma {}` cannot annotate this statement", p.text))
                    .with_note("help: loop pragmas go right above a `for` loop, `#pragma atomic` above an update like `a[i] += x`"));
            }
        }
        if tensor::is_tensor_stmt(s) {
            return self.tensor_stmt(s);
        }
        if self.uses_vidx_stmt(s) {
            return self.vector_stmt(s);
        }
        match &s.kind {
            StmtKind::Pass => Ok(()),
            StmtKind::Expr(e) => {
                if let ExprKind::Str(_) = e.kind {
                    return Ok(());
                }
                if let ExprKind::Call { func, args, .. } = &e.kind
                    && let Some(q) = qualify(&self.imports, func)
                    && let Some(op) = q.strip_prefix("appy.atomic_")
                {
                    return self.atomic_call(op, args, e.span);
                }
                Err(self.err(
                    e.span,
                    "expression statements have no effect in appy (only calls like `appy.atomic_add(...)`)",
                ))
            }
            StmtKind::Return(_) => Err(self.err(s.span, "`return` is only supported as the last statement of the function")),
            StmtKind::Assign { targets, value } => self.assign(targets, value, s),
            StmtKind::AugAssign { target, op, value } => self.aug_assign(target, *op, value, s),
            StmtKind::If { cond, then, orelse } => {
                let c = self.expr(cond)?;
                let c = self.as_bool(c, cond.span)?;
                self.b.begin();
                self.block(then)?;
                self.b.push(Builder::yield_op(&[]));
                let t = self.b.end();
                let e = if orelse.is_empty() {
                    None
                } else {
                    self.b.begin();
                    self.block(orelse)?;
                    self.b.push(Builder::yield_op(&[]));
                    Some(self.b.end())
                };
                self.set_loc(s.span);
                self.b.if_op(c, t, e);
                Ok(())
            }
            StmtKind::For { var, iter, body } => self.for_loop(var, iter, body, s),
        }
    }

    fn assign(&mut self, targets: &[Expr], value: &Expr, s: &Stmt) -> DResult<()> {
        let atomic = matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic));
        // `a[i] = max(a[i], v)` under `#pragma atomic`.
        if atomic {
            let [t] = targets else {
                return Err(self.err(s.span, "`#pragma atomic` needs a single target"));
            };
            if let ExprKind::Call { func, args, .. } = &value.kind
                && let (Some(q), [x, y]) = (qualify(&self.imports, func), args.as_slice())
            {
                let op = match q.as_str() {
                    "builtins.max" | "numpy.maximum" => Some(RedOp::Max),
                    "builtins.min" | "numpy.minimum" => Some(RedOp::Min),
                    _ => None,
                };
                if let Some(op) = op {
                    let other = if x == t {
                        y
                    } else if y == t {
                        x
                    } else {
                        return Err(self.err(value.span, "`#pragma atomic` max/min must have the form `a[i] = max(a[i], v)`"));
                    };
                    return self.atomic_update(t, op, other, false);
                }
            }
            return Err(self.err(
                s.span,
                "`#pragma atomic` supports `a[i] += v`, `a[i] -= v`, `a[i] *= v`, and `a[i] = max(a[i], v)` / `min`",
            ));
        }
        if let ExprKind::Call { func, args, kwargs } = &value.kind
            && let Some(q) = qualify(&self.imports, func)
            && matches!(
                q.as_str(),
                "numpy.empty" | "numpy.zeros" | "numpy.ones" | "numpy.empty_like" | "numpy.zeros_like" | "numpy.ones_like" | "numpy.full"
            )
        {
            let [t] = targets else {
                return Err(self.err(s.span, "array allocation needs a single name target"));
            };
            let ExprKind::Name(n) = &t.kind else {
                return Err(self.err(t.span, "assign the new array to a name"));
            };
            if self.scopes.len() != 1 || self.b.depth() != 1 {
                return Err(self.err(
                    s.span,
                    "arrays can only be allocated at the top level of the function, outside loops and conditionals",
                ));
            }
            let arr = self.alloc_array(&q, args, kwargs, value.span)?;
            self.bind(n, Binding::Val(arr));
            return Ok(());
        }
        let v = self.expr(value)?;
        for t in targets {
            self.store_to(t, v.clone(), value.span)?;
        }
        Ok(())
    }

    fn store_to(&mut self, t: &Expr, v: V, vspan: Span) -> DResult<()> {
        match &t.kind {
            ExprKind::Name(n) => match v {
                V::S(x, ty) => self.assign_scalar(n, x, ty, t.span),
                V::Arr(..) | V::Tuple(_) | V::Vidx { .. } => {
                    if self.scopes.len() != 1 && !matches!(v, V::Vidx { .. }) {
                        return Err(self.err(t.span, "arrays and tuples can only be bound at the top level of the function"));
                    }
                    if let Some(Binding::Slot(..)) = self.lookup(n) {
                        return Err(self.err(t.span, format!("`{n}` is a scalar; it cannot be rebound to an array or vector")));
                    }
                    self.bind(n, Binding::Val(v));
                    Ok(())
                }
            },
            ExprKind::Tuple(ts) => {
                let V::Tuple(vs) = v else {
                    return Err(self.err(vspan, "cannot unpack a non-tuple value"));
                };
                if vs.len() != ts.len() {
                    return Err(self.err(vspan, format!("cannot unpack a tuple of {} into {} targets", vs.len(), ts.len())));
                }
                for (t, v) in ts.iter().zip(vs) {
                    self.store_to(t, v, vspan)?;
                }
                Ok(())
            }
            ExprKind::Subscript { value, indices } => {
                let (m, dt, idx) = self.element_ref(value, indices, t.span)?;
                let V::S(x, ty) = v else {
                    return Err(self.err(vspan, "only scalar values can be stored into an array element"));
                };
                let c = self.b.cast(x, ty, STy::strong(dt));
                self.set_loc(t.span);
                self.b.store(c, m, &idx);
                Ok(())
            }
            _ => Err(self.err(t.span, "cannot assign to this expression")),
        }
    }

    fn aug_assign(&mut self, target: &Expr, op: BinOp, value: &Expr, s: &Stmt) -> DResult<()> {
        let atomic = matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic));
        if atomic {
            let (rop, neg) = match op {
                BinOp::Add => (RedOp::Add, false),
                BinOp::Sub => (RedOp::Add, true),
                BinOp::Mul => (RedOp::Mul, false),
                _ => return Err(self.err(s.span, "`#pragma atomic` supports `+=`, `-=`, `*=` and max/min updates")),
            };
            return self.atomic_update(target, rop, value, neg);
        }
        let synthetic = Expr {
            kind: ExprKind::Binary {
                op,
                lhs: Box::new(target.clone()),
                rhs: Box::new(value.clone()),
            },
            span: target.span.to(value.span),
        };
        let v = self.expr(&synthetic)?;
        self.store_to(target, v, value.span)
    }

    fn atomic_call(&mut self, op: &str, args: &[Expr], span: Span) -> DResult<()> {
        let usage = format!("`appy.atomic_{op}(a, index, value)` updates `a[index]` atomically (index: an integer or a tuple)");
        let [arr, idx, v] = args else { return Err(self.err(span, usage)) };
        let rop = match op {
            "add" => RedOp::Add,
            "max" => RedOp::Max,
            "min" => RedOp::Min,
            _ => {
                return Err(self.err(
                    span,
                    format!("unknown atomic operation `appy.atomic_{op}`; use atomic_add, atomic_max or atomic_min"),
                ));
            }
        };
        let indices = match &idx.kind {
            ExprKind::Tuple(es) => es.iter().cloned().map(Index::Expr).collect(),
            _ => vec![Index::Expr(idx.clone())],
        };
        let target = Expr {
            kind: ExprKind::Subscript {
                value: Box::new(arr.clone()),
                indices,
            },
            span: arr.span.to(idx.span),
        };
        self.atomic_update(&target, rop, v, false)
    }

    fn atomic_update(&mut self, target: &Expr, op: RedOp, value: &Expr, neg: bool) -> DResult<()> {
        let ExprKind::Subscript { value: arr, indices } = &target.kind else {
            return Err(self.err(target.span, "atomic updates need an array element target like `s[0]`"));
        };
        let (m, dt, idx) = self.element_ref(arr, indices, target.span)?;
        let v = self.expr(value)?;
        let V::S(x, t) = v else {
            return Err(self.err(value.span, "atomic update value must be a scalar"));
        };
        let mut x = self.b.cast(x, t, STy::strong(dt));
        if neg {
            x = self.negate(x, dt);
        }
        let kind = atomic_kind(op, dt);
        let mut ops = vec![x, m];
        ops.extend(idx);
        self.set_loc(target.span);
        self.b
            .op1("memref.atomic_rmw", &ops, dt.mlir(), &[("kind", format!("{kind} : i64"))]);
        Ok(())
    }

    /// The integer value of `v` if the builder created it as a constant.
    fn const_of(&self, v: Value) -> Option<i64> {
        self.b.const_int_of(v)
    }

    fn negate(&mut self, x: Value, dt: DType) -> Value {
        if dt.is_float() {
            let ty = dt.mlir().to_string();
            self.b.op1("arith.negf", &[x], &ty, &[])
        } else {
            let z = self.b.int(0, dt.mlir());
            self.b.bin("arith.subi", z, x)
        }
    }

    fn alloc_array(&mut self, q: &str, args: &[Expr], kwargs: &[(Ident, Expr)], span: Span) -> DResult<V> {
        let mut dtype = DType::F64;
        let mut dims: Vec<Value> = vec![];
        let like = q.ends_with("_like");
        if like {
            let Some(a) = args.first() else {
                return Err(self.err(span, format!("`{q}` needs an array argument")));
            };
            let V::Arr(m, d, r) = self.expr(a)? else {
                return Err(self.err(a.span, "expected an array"));
            };
            dtype = d;
            for i in 0..r {
                let c = self.b.index(i as i64);
                dims.push(self.b.op1("memref.dim", &[m, c], "index", &[]));
            }
        } else {
            let Some(shape) = args.first() else {
                return Err(self.err(span, format!("`{q}` needs a shape")));
            };
            let sv = self.expr(shape)?;
            let items = match sv {
                V::Tuple(vs) => vs,
                v => vec![v],
            };
            for it in items {
                let V::S(x, t) = it else {
                    return Err(self.err(shape.span, "shape entries must be integers"));
                };
                if !t.dt.is_int() {
                    return Err(self.err(shape.span, "shape entries must be integers"));
                }
                let x = self.b.cast(x, t, STy::INT);
                dims.push(self.b.to_index(x));
            }
        }
        let mut fill: Option<f64> = match q {
            "numpy.zeros" | "numpy.zeros_like" => Some(0.0),
            "numpy.ones" | "numpy.ones_like" => Some(1.0),
            _ => None,
        };
        let mut fill_val: Option<(Value, STy)> = None;
        if q == "numpy.full" {
            let Some(v) = args.get(1) else {
                return Err(self.err(span, "np.full needs a fill value"));
            };
            let V::S(x, t) = self.expr(v)? else {
                return Err(self.err(v.span, "fill value must be a scalar"));
            };
            fill_val = Some((x, t));
            fill = None;
        }
        for (k, v) in kwargs {
            if k.name == "dtype" {
                dtype = self.dtype_of(v)?;
            } else {
                return Err(self.err(k.span, format!("unsupported keyword `{}` for `{q}`", k.name)));
            }
        }
        if let Some(t) = args.get(if q == "numpy.full" { 2 } else { 1 }) {
            dtype = self.dtype_of(t)?;
        }
        if dtype == DType::Bool {
            return Err(self.err(span, "boolean arrays are not supported"));
        }
        let rank = dims.len();
        let ty = memref_type(dtype, rank);
        let n = dims.len() as i32;
        let m = self.b.op1(
            "memref.alloc",
            &dims,
            &ty,
            &[("operandSegmentSizes", format!("array<i32: {n}, 0>"))],
        );
        let fv = match (fill, fill_val) {
            (Some(f), _) => Some(self.b.scalar(f, STy::strong(dtype))),
            (_, Some((x, t))) => Some(self.b.cast(x, t, STy::strong(dtype))),
            _ => None,
        };
        if let Some(fv) = fv {
            // A parallel fill: a perfect nest of 1-D parallel loops (one grid on the
            // GPU, a loop nest on the CPU).
            let c0 = self.b.index(0);
            let c1 = self.b.index(1);
            let ivs: Vec<Value> = (0..rank).map(|_| self.b.m.value("index")).collect();
            if rank == 0 {
                self.b.store(fv, m, &[]);
            } else {
                let mut inner = vec![
                    Op::new("memref.store")
                        .with_operands([fv, m].into_iter().chain(ivs.iter().copied()))
                        .with_loc(self.b.loc.clone()),
                ];
                for d in (0..rank).rev() {
                    inner.push(Op::new("scf.reduce").with_loc(self.b.loc.clone()));
                    let op = Op::new("scf.parallel")
                        .with_operands([c0, dims[d], c1])
                        .with_attr("operandSegmentSizes", "array<i32: 1, 1, 1, 0>")
                        .with_attr("appy.parallel", "unit")
                        .with_region(Builder::region(vec![ivs[d]], std::mem::take(&mut inner)))
                        .with_loc(self.b.loc.clone());
                    inner = vec![op];
                }
                for op in inner {
                    self.b.push(op);
                }
            }
        }
        Ok(V::Arr(m, dtype, rank))
    }

    fn dtype_of(&mut self, e: &Expr) -> DResult<DType> {
        let q = qualify(&self.imports, e).unwrap_or_default();
        Ok(match q.as_str() {
            "numpy.float32" => DType::F32,
            "numpy.float64" | "builtins.float" => DType::F64,
            "numpy.int32" => DType::I32,
            "numpy.int64" | "builtins.int" => DType::I64,
            "numpy.bool_" | "builtins.bool" => DType::Bool,
            _ => {
                if let ExprKind::Str(s) = &e.kind {
                    match s.as_str() {
                        "float32" => return Ok(DType::F32),
                        "float64" => return Ok(DType::F64),
                        "int32" => return Ok(DType::I32),
                        "int64" => return Ok(DType::I64),
                        _ => {}
                    }
                }
                return Err(self.err(e.span, "unsupported dtype; use np.float32, np.float64, np.int32 or np.int64"));
            }
        })
    }

    // ----- loops -------------------------------------------------------------------

    fn range_args(&mut self, iter: &Expr) -> DResult<(Value, Value, Value, Option<i64>, bool)> {
        let ExprKind::Call { func, args, kwargs } = &iter.kind else {
            return Err(self.err(iter.span, "only `for x in range(...)` loops are supported"));
        };
        let q = qualify(&self.imports, func).unwrap_or_default();
        let is_prange = q.ends_with(".prange");
        if q != "builtins.range" && !is_prange {
            return Err(self
                .err(iter.span, "only `for x in range(...)` loops are supported")
                .with_note("help: iterate over indices: `for i in range(a.shape[0]):`"));
        }
        if !kwargs.is_empty() || args.is_empty() || args.len() > 3 {
            return Err(self.err(iter.span, "range() takes 1 to 3 positional integer arguments"));
        }
        let mut vals = vec![];
        let mut const_step = None;
        for (i, a) in args.iter().enumerate() {
            let v = self.expr(a)?;
            let V::S(x, t) = v else {
                return Err(self.err(a.span, "range() arguments must be integers"));
            };
            if !t.dt.is_int() && t.dt != DType::Bool {
                return Err(self.err(a.span, format!("range() arguments must be integers, not {}", tyname(t))));
            }
            vals.push(self.b.cast(x, t, STy::INT));
            if i == 2 {
                const_step = const_int(a);
            }
        }
        let (lb, ub, step) = match vals.len() {
            1 => (self.b.int(0, "i64"), vals[0], self.b.int(1, "i64")),
            2 => (vals[0], vals[1], self.b.int(1, "i64")),
            _ => (vals[0], vals[1], vals[2]),
        };
        if vals.len() < 3 {
            const_step = Some(1);
        }
        if const_step == Some(0) {
            return Err(self.err(args[2].span, "range() step must not be zero"));
        }
        Ok((lb, ub, step, const_step, is_prange))
    }

    /// Bounds for an index-typed loop over `k in [0, n)` with `i = lb + k*step`, or
    /// directly over `i` when the step is a positive constant.
    fn loop_bounds(&mut self, lb: Value, ub: Value, step: Value, cstep: Option<i64>) -> (Value, Value, Value, bool) {
        if let Some(s) = cstep.filter(|s| *s > 0) {
            let l = self.b.to_index(lb);
            let u = self.b.to_index(ub);
            let st = self.b.index(s);
            return (l, u, st, true);
        }
        // n = max(0, ceil((ub - lb) / step)) for either sign of step.
        let diff = self.b.bin("arith.subi", ub, lb);
        let zero = self.b.int(0, "i64");
        let one = self.b.int(1, "i64");
        let pos = self.b.cmpi(IPred::Sgt, step, zero);
        let sm1 = self.b.bin("arith.subi", step, one);
        let sp1 = self.b.bin("arith.addi", step, one);
        let adj = self.b.select(pos, sm1, sp1);
        let num = self.b.bin("arith.addi", diff, adj);
        let q = self.b.bin("arith.divsi", num, step);
        let n = self.b.bin("arith.maxsi", q, zero);
        let c0 = self.b.index(0);
        let n = self.b.to_index(n);
        let c1 = self.b.index(1);
        (c0, n, c1, false)
    }

    fn iv_value(&mut self, iv: Value, lb: Value, step: Value, direct: bool) -> Value {
        let k = self.b.to_i64(iv);
        if direct {
            return k;
        }
        let ks = self.b.bin("arith.muli", k, step);
        self.b.bin("arith.addi", lb, ks)
    }

    fn for_loop(&mut self, var: &Ident, iter: &Expr, body: &[Stmt], s: &Stmt) -> DResult<()> {
        let (lb, ub, step, cstep, is_prange) = self.range_args(iter)?;
        let in_parallel = self.scopes.iter().any(|sc| sc.kind == ScopeKind::Parallel);
        let in_simd = self.scopes.iter().any(|sc| sc.kind == ScopeKind::Simd);
        let mut auto_simd = false;
        let mut prange_body;
        let mut body = body;
        let kind = match s.pragma.as_ref().map(|p| &p.kind) {
            Some(PragmaKind::ParallelFor { simd, shared }) => Some((true, *simd, shared.clone())),
            Some(PragmaKind::Simd) => Some((false, true, vec![])),
            None if is_prange => {
                // High-level interface (seed 000): reductions are detected, not declared.
                // A scalar defined outside and updated with one reduction operator is a
                // reduction; an array update whose indices do not use the loop variable is
                // a reduction across iterations and becomes an atomic update.
                let mut assigned = vec![];
                ast_names_assigned(body, &mut assigned);
                let mut shared: Vec<Ident> = vec![];
                for (n, sp) in &assigned {
                    let outside = matches!(self.lookup(n), Some(Binding::Slot(..)) | Some(Binding::Val(V::S(..))));
                    if outside && *n != var.name && !shared.iter().any(|x| x.name == *n) && reduction_op(n, body, &self.imports).is_some() {
                        shared.push(Ident {
                            name: n.clone(),
                            span: *sp,
                        });
                    }
                }
                prange_body = body.to_vec();
                mark_atomic_reductions(&mut prange_body, &var.name);
                body = &prange_body;
                Some((true, false, shared))
            }
            None if in_parallel
                && !in_simd
                && vectorizable(
                    body,
                    var,
                    &|n| {
                        self.lookup(n)
                            .is_some_and(|b| matches!(b, Binding::Slot(..) | Binding::Val(V::S(..))))
                    },
                    &self.imports,
                ) =>
            {
                // Inner loop vectorization (seed 000): an innermost loop of a parallel loop
                // whose iterations are independent runs as a simd loop.
                auto_simd = true;
                Some((false, true, vec![]))
            }
            _ => None,
        };
        let Some((parallel, simd, shared)) = kind else {
            return self.seq_loop(var, lb, ub, step, cstep, body, s);
        };
        if parallel && self.scopes.iter().any(|sc| sc.kind == ScopeKind::Simd) {
            return Err(self.err(s.span, "a parallel loop cannot be nested inside a simd loop"));
        }
        // Array-element reductions in a simd loop (`y[i] += a[j] * x[j]` with `i` not
        // depending on the loop): accumulate in a scalar, update the element once after.
        let mut element_reds: Vec<(Expr, BinOp, String)> = vec![];
        let rewritten;
        let body: &[Stmt] = if simd && !parallel {
            let (b2, reds) = self.element_reductions(var, body)?;
            for (target, op, name) in &reds {
                let ExprKind::Subscript { value, .. } = &target.kind else {
                    return Err(self.err(target.span, "expected an array element"));
                };
                let V::Arr(_, dt, _) = self.expr(value)? else {
                    return Err(self.err(value.span, "only arrays can be subscripted"));
                };
                let t = STy::strong(dt);
                let slot = self.new_slot(t);
                let rop = if matches!(op, BinOp::Mul) { RedOp::Mul } else { RedOp::Add };
                let id = identity(&mut self.b, rop, t);
                self.b.store(id, slot, &[]);
                self.bind(name, Binding::Slot(slot, t));
            }
            element_reds = reds;
            rewritten = b2;
            &rewritten
        } else {
            body
        };
        // Data sharing (seed 001 §3.3): scalars assigned in the body are private unless
        // they are reductions.
        let mut assigned = vec![];
        ast_names_assigned(body, &mut assigned);
        let mut reductions: Vec<(String, RedOp)> = vec![];
        let mut seen = HashSet::new();
        for (n, sp) in &assigned {
            if !seen.insert(n.clone()) || *n == var.name {
                continue;
            }
            let outer = self.lookup(n).cloned();
            let defined_outside = matches!(outer, Some(Binding::Slot(..)) | Some(Binding::Val(V::S(..))));
            let red = reduction_op(n, body, &self.imports);
            let listed = shared.iter().any(|x| x.name == *n);
            if listed {
                match (&red, defined_outside) {
                    (Some(op), true) => reductions.push((n.clone(), *op)),
                    (None, _) => {
                        return Err(self.err(*sp, format!("`{n}` is listed in shared(...) but is not updated by a single reduction operator (+, *, max, min) in this loop")));
                    }
                    (_, false) => {
                        return Err(self.err(*sp, format!("shared reduction variable `{n}` must be initialised before the loop")));
                    }
                }
                continue;
            }
            if defined_outside {
                if !parallel && let Some(op) = red {
                    reductions.push((n.clone(), op));
                    continue;
                }
                let what = if parallel { "parallel" } else { "simd" };
                let mut d = self.err(
                    *sp,
                    format!(
                        "scalar `{n}` is defined outside this {what} loop and assigned inside it; each worker would get its own copy and the value after the loop is undefined"
                    ),
                );
                if parallel && red.is_some() {
                    d = d.with_note(format!("help: this looks like a reduction: add `shared({n})` to the pragma"));
                } else {
                    d = d.with_note(
                        "help: use a new name inside the loop, or make it an array of size 1 and update it with `#pragma atomic`",
                    );
                }
                return Err(d);
            }
        }
        for sh in &shared {
            if !assigned.iter().any(|(n, _)| *n == sh.name) {
                return Err(self.err(
                    sh.span,
                    format!("`{}` is listed in shared(...) but is not assigned in the loop", sh.name),
                ));
            }
        }
        // Snapshot scalars that the body only reads.
        let mut reads = vec![];
        ast_names_read(body, &mut reads);
        let assigned_set: HashSet<String> = assigned.iter().map(|(n, _)| n.clone()).collect();
        let mut snap: Vec<(String, V)> = vec![];
        let mut snapped = HashSet::new();
        for (n, _) in &reads {
            if assigned_set.contains(n) || !snapped.insert(n.clone()) {
                continue;
            }
            if let Some(Binding::Slot(slot, t)) = self.lookup(n).cloned() {
                let v = self.b.load(slot, &[]);
                snap.push((n.clone(), V::S(v, t)));
            }
        }
        let (l, u, st, direct) = self.loop_bounds(lb, ub, step, cstep);
        // Initial values of the reductions.
        let mut inits = vec![];
        let mut red_tys = vec![];
        for (n, _) in &reductions {
            let (v, t) = match self.lookup(n).cloned() {
                Some(Binding::Slot(slot, t)) => (self.b.load(slot, &[]), t),
                Some(Binding::Val(V::S(v, t))) => (v, t),
                _ => unreachable!("checked above"),
            };
            inits.push(v);
            red_tys.push(t);
        }
        let iv = self.b.m.value("index");
        self.b.begin();
        self.push_scope(if parallel { ScopeKind::Parallel } else { ScopeKind::Simd });
        for (n, v) in snap {
            self.bind(&n, Binding::Val(v));
        }
        let mut accs = vec![];
        for ((n, op), t) in reductions.iter().zip(&red_tys) {
            let acc = self.new_slot(*t);
            let id = identity(&mut self.b, *op, *t);
            self.b.store(id, acc, &[]);
            self.bind(n, Binding::Slot(acc, *t));
            accs.push(acc);
        }
        self.scopes.last_mut().expect("scope").privates = assigned_set.clone();
        let i = self.iv_value(iv, lb, step, direct);
        self.bind(&var.name, Binding::Val(V::S(i, STy::INT)));
        self.block(body)?;
        self.set_loc(s.span);
        let mut partials = vec![];
        for a in &accs {
            partials.push(self.b.load(*a, &[]));
        }
        let mut reduce = Op::new("scf.reduce").with_operands(partials.iter().copied());
        for ((_, op), t) in reductions.iter().zip(&red_tys) {
            reduce.regions.push(combiner(&mut self.b, *op, *t));
        }
        reduce.loc = self.b.loc.clone();
        self.b.push(reduce);
        let mut ops = self.b.end();
        self.pop_scope(&mut ops);
        let results: Vec<Value> = red_tys.iter().map(|t| self.b.m.value(t.mlir())).collect();
        let k = inits.len();
        let mut op = Op::new("scf.parallel")
            .with_operands([l, u, st].into_iter().chain(inits))
            .with_results(results.clone())
            .with_attr("operandSegmentSizes", format!("array<i32: 1, 1, 1, {k}>"))
            .with_region(Builder::region(vec![iv], ops));
        if parallel {
            op.set_attr("appy.parallel", "unit");
        }
        if simd {
            op.set_attr("appy.simd", "unit");
        }
        if auto_simd {
            op.set_attr("appy.auto_simd", "unit");
        }
        if is_prange {
            op.set_attr("appy.prange", "unit");
        }
        self.b.push(op);
        for ((n, _), r) in reductions.iter().zip(results) {
            let t = red_tys[reductions.iter().position(|(m, _)| m == n).expect("present")];
            self.assign_scalar(n, r, t, s.span)?;
        }
        for (target, op, name) in &element_reds {
            let op = if matches!(op, BinOp::Sub) { BinOp::Add } else { *op };
            let value = Expr {
                kind: ExprKind::Name(name.clone()),
                span: target.span,
            };
            let stmt = Stmt {
                kind: StmtKind::AugAssign {
                    target: target.clone(),
                    op,
                    value: value.clone(),
                },
                span: target.span,
                pragma: None,
            };
            self.aug_assign(target, op, &value, &stmt)?;
        }
        // Privates are not visible after the loop.
        for n in assigned_set {
            if !reductions.iter().any(|(m, _)| *m == n) && self.lookup(&n).is_none() {
                self.bind(&n, Binding::Private(s.span));
            }
        }
        if self.lookup(&var.name).is_none() {
            self.bind(&var.name, Binding::Private(s.span));
        }
        Ok(())
    }

    /// Finds `X[idx] op= e` updates in a simd loop body whose indices do not depend on
    /// the loop (reductions into one element, seed 000's array rule), and rewrites them to
    /// updates of fresh scalars `_appy_redN`.
    fn element_reductions(&mut self, var: &Ident, body: &[Stmt]) -> DResult<(Vec<Stmt>, Vec<ElementRed>)> {
        let mut assigned = vec![];
        ast_names_assigned(body, &mut assigned);
        let varying: HashSet<String> = assigned
            .iter()
            .map(|(n, _)| n.clone())
            .chain(std::iter::once(var.name.clone()))
            .collect();
        let mut found: Vec<(Expr, BinOp, String)> = vec![];
        let text = self.file.text();
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
                    StmtKind::For { body, .. } => scan(body, varying, out),
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
            if found.iter().any(|(f, _, _)| key(text, f) == k) {
                continue;
            }
            // The array must not be accessed otherwise in the loop.
            let uses = names_used.iter().filter(|(n, _)| n == arr).count();
            let same = count_target_updates(body, &k, text);
            if uses != same {
                continue;
            }
            let name = format!("_appy_red{}", self.fresh());
            found.push((t, if op == BinOp::Mul { BinOp::Mul } else { BinOp::Add }, name));
        }
        if found.is_empty() {
            return Ok((body.to_vec(), found));
        }
        fn rewrite(stmts: &[Stmt], found: &[(Expr, BinOp, String)], text: &str) -> Vec<Stmt> {
            stmts
                .iter()
                .map(|s| {
                    let mut s = s.clone();
                    match &mut s.kind {
                        StmtKind::AugAssign { target, op, value } => {
                            let k = key(text, target);
                            if let Some((_, _, n)) = found.iter().find(|(f, _, _)| key(text, f) == k) {
                                let sp = target.span;
                                *target = Expr {
                                    kind: ExprKind::Name(n.clone()),
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
                        StmtKind::For { body, .. } => *body = rewrite(body, found, text),
                        _ => {}
                    }
                    s
                })
                .collect()
        }
        Ok((rewrite(body, &found, text), found))
    }

    fn fresh(&mut self) -> usize {
        self.counter += 1;
        self.counter
    }

    #[allow(clippy::too_many_arguments)]
    fn seq_loop(&mut self, var: &Ident, lb: Value, ub: Value, step: Value, cstep: Option<i64>, body: &[Stmt], s: &Stmt) -> DResult<()> {
        let (l, u, st, direct) = self.loop_bounds(lb, ub, step, cstep);
        let iv = self.b.m.value("index");
        self.b.begin();
        let i = self.iv_value(iv, lb, step, direct);
        let prev = self.lookup(&var.name).cloned();
        if let Some(Binding::Slot(..)) = prev {
            return Err(self.err(
                var.span,
                format!("loop variable `{}` is also used as an ordinary variable", var.name),
            ));
        }
        self.bind(&var.name, Binding::Val(V::S(i, STy::INT)));
        // A `sequential for` outside parallel loops runs on one worker (seed 001
        // §3.1): tensor statements inside use its lanes, not a grid.
        let one_worker = matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::SequentialFor));
        self.seq_worker += one_worker as usize;
        let r = self.block(body);
        self.seq_worker -= one_worker as usize;
        r?;
        self.b.push(Builder::yield_op(&[]));
        let ops = self.b.end();
        self.set_loc(s.span);
        let mut op = Op::new("scf.for")
            .with_operands([l, u, st])
            .with_region(Builder::region(vec![iv], ops));
        if matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::SequentialFor)) {
            op.set_attr("appy.sequential", "unit");
        }
        self.b.push(op);
        match prev {
            Some(p) => self.bind(&var.name, p),
            None => self.bind(&var.name, Binding::Private(s.span)),
        }
        Ok(())
    }

    // ----- vector statements (appy.vidx) ----------------------------------------------

    fn vidx_of(&self, e: &Expr) -> Option<(Value, Value, Value)> {
        let mut names = vec![];
        expr_names(e, &mut names);
        names.iter().find_map(|(n, _)| match self.lookup(n) {
            Some(Binding::Val(V::Vidx { start, len, bound })) => Some((*start, *len, *bound)),
            _ => None,
        })
    }

    /// Sliced index notation in one dimension (seed 001 §4.1, Listing 6 right): a statement
    /// whose array accesses use a slice `lo:hi` is a vector statement over
    /// `hi - lo` lanes; each slice becomes `lo + lane`. Reductions of such vectors
    /// (`sum(np.exp(a[i, :N] - m))`) become lane reductions.
    fn uses_vidx_stmt(&self, s: &Stmt) -> bool {
        match &s.kind {
            StmtKind::Assign { targets, value } => {
                if matches!(&value.kind, ExprKind::Call { func, .. } if qualify(&self.imports, func).as_deref() == Some("appy.vidx")) {
                    return false;
                }
                targets.iter().any(|t| self.vidx_of(t).is_some()) || self.vidx_of(value).is_some()
            }
            StmtKind::AugAssign { target, value, .. } => self.vidx_of(target).is_some() || self.vidx_of(value).is_some(),
            _ => false,
        }
    }

    /// Runs a statement over the lanes of the vector(s) it uses. Reductions of vectors
    /// (`sum(a[vi])`) are computed first, each by a lane loop with a reduction.
    fn vector_stmt(&mut self, s: &Stmt) -> DResult<()> {
        let mut stmt = s.clone();
        stmt.pragma = s.pragma.clone();
        // Hoist vector reductions into scalars bound to fresh names.
        let mut counter = 0;
        let mut hoisted: Vec<(String, RedOp, Expr)> = vec![];
        let mut rewrite = |e: &mut Expr, this: &Self| {
            rewrite_reductions(e, this, &mut counter, &mut hoisted);
        };
        match &mut stmt.kind {
            StmtKind::Assign { value, .. } => rewrite(value, self),
            StmtKind::AugAssign { value, .. } => rewrite(value, self),
            _ => {}
        }
        for (name, op, arg) in &hoisted {
            let (start, len, bound) = self.vidx_of(arg).expect("vector reduction");
            let r = self.lane_loop(start, len, bound, Some((*op, arg)), None)?;
            let (v, t) = r.expect("reduction result");
            self.bind(name, Binding::Val(V::S(v, t)));
        }
        let uses = match &stmt.kind {
            StmtKind::Assign { targets, value } => targets.iter().any(|t| self.vidx_of(t).is_some()) || self.vidx_of(value).is_some(),
            StmtKind::AugAssign { target, value, .. } => self.vidx_of(target).is_some() || self.vidx_of(value).is_some(),
            _ => false,
        };
        if !uses {
            return self.stmt(&stmt);
        }
        let probe = match &stmt.kind {
            StmtKind::Assign { targets, value } => targets.iter().find_map(|t| self.vidx_of(t)).or_else(|| self.vidx_of(value)),
            StmtKind::AugAssign { target, value, .. } => self.vidx_of(target).or_else(|| self.vidx_of(value)),
            _ => None,
        };
        let (start, len, bound) = probe.expect("vector statement");
        for t in targets_of(&stmt.kind) {
            if let ExprKind::Name(n) = &t.kind {
                return Err(self.err(
                    t.span,
                    format!("cannot assign a vector to the scalar `{n}`; reduce it with sum/max/min or store it into an array"),
                ));
            }
        }
        self.lane_loop(start, len, bound, None, Some(&stmt))?;
        Ok(())
    }

    /// A lane loop `for l in [0, min(len, bound - start))` with every vidx name bound
    /// to `start + l`; either reduces `red` or runs `stmt` per lane.
    fn lane_loop(
        &mut self,
        start: Value,
        len: Value,
        bound: Value,
        red: Option<(RedOp, &Expr)>,
        stmt: Option<&Stmt>,
    ) -> DResult<Option<(Value, STy)>> {
        let rem = self.b.bin("arith.subi", bound, start);
        let n = self.b.bin("arith.minsi", len, rem);
        let zero = self.b.int(0, "i64");
        let n = self.b.bin("arith.maxsi", n, zero);
        let c0 = self.b.index(0);
        let c1 = self.b.index(1);
        let ni = self.b.to_index(n);
        let iv = self.b.m.value("index");
        // Names bound to vidx objects with this start become lane indices.
        let vnames: Vec<String> = self
            .scopes
            .iter()
            .flat_map(|s| s.vars.iter())
            .filter_map(|(k, b)| match b {
                Binding::Val(V::Vidx { start: s0, .. }) if *s0 == start => Some(k.clone()),
                _ => None,
            })
            .collect();
        // Infer the reduction's type by evaluating once in a throwaway region.
        self.b.begin();
        self.push_scope(ScopeKind::Simd);
        let k = self.b.to_i64(iv);
        let lane = self.b.bin("arith.addi", start, k);
        for n in &vnames {
            self.bind(n, Binding::Val(V::S(lane, STy::INT)));
        }
        let mut out = None;
        let mut red_ty = None;
        if let Some((op, e)) = red {
            let V::S(x, t) = self.expr(e)? else {
                return Err(self.err(e.span, "cannot reduce this expression"));
            };
            red_ty = Some((op, t));
            let mut reduce = Op::new("scf.reduce").with_operands([x]);
            reduce.regions.push(combiner(&mut self.b, op, t));
            self.b.push(reduce);
        } else if let Some(s) = stmt {
            let mut s2 = s.clone();
            if !matches!(s2.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic)) {
                s2.pragma = None;
            }
            match &s2.kind {
                StmtKind::Assign { targets, value } => self.assign(targets, value, &s2)?,
                StmtKind::AugAssign { target, op, value } => self.aug_assign(target, *op, value, &s2)?,
                _ => unreachable!("vector statements are assignments"),
            }
            self.b.op0("scf.reduce", &[], &[]);
        }
        let mut ops = self.b.end();
        self.pop_scope(&mut ops);
        let mut op = Op::new("scf.parallel")
            .with_attr("appy.simd", "unit")
            .with_region(Builder::region(vec![iv], ops));
        if let Some((rop, t)) = red_ty {
            let init = identity(&mut self.b, rop, t);
            let r = self.b.m.value(t.mlir());
            op.operands = vec![c0, ni, c1, init];
            op.results = vec![r];
            op.set_attr("operandSegmentSizes", "array<i32: 1, 1, 1, 1>");
            out = Some((r, t));
        } else {
            op.operands = vec![c0, ni, c1];
            op.set_attr("operandSegmentSizes", "array<i32: 1, 1, 1, 0>");
        }
        op.loc = self.b.loc.clone();
        self.b.push(op);
        Ok(out)
    }

    // ----- expressions ---------------------------------------------------------------

    fn as_bool(&mut self, v: V, span: Span) -> DResult<Value> {
        match v {
            V::S(x, t) => Ok(self.b.cast(x, t, STy::BOOL)),
            _ => Err(self.err(span, "expected a scalar condition")),
        }
    }

    fn scalar(&mut self, e: &Expr) -> DResult<(Value, STy)> {
        match self.expr(e)? {
            V::S(x, t) => Ok((x, t)),
            V::Arr(..) => Err(self
                .err(e.span, "expected a scalar, found an array")
                .with_note("help: index the array, e.g. `a[i]`; whole-array expressions are not supported yet")),
            V::Tuple(_) => Err(self.err(e.span, "expected a scalar, found a tuple")),
            V::Vidx { .. } => Err(self.err(e.span, "expected a scalar, found a vector index")),
        }
    }

    fn expr(&mut self, e: &Expr) -> DResult<V> {
        match &e.kind {
            ExprKind::Int(i) => Ok(V::S(self.b.int(*i, "i64"), STy::INT)),
            ExprKind::Float(f) => Ok(V::S(self.b.float(*f, "f64"), STy::FLOAT)),
            ExprKind::Bool(b) => Ok(V::S(self.b.int(*b as i64, "i1"), STy::BOOL)),
            ExprKind::None => Err(self.err(e.span, "`None` is only allowed as an index (a new axis)")),
            ExprKind::Str(_) => Err(self.err(e.span, "strings are not supported here")),
            ExprKind::Name(n) => match self.lookup(n).cloned() {
                Some(Binding::Slot(slot, t)) => Ok(V::S(self.b.load(slot, &[]), t)),
                Some(Binding::Val(v)) => Ok(v),
                Some(Binding::Private(sp)) => {
                    let (l, c) = self.file.line_col(sp.start);
                    Err(self
                        .err(
                            e.span,
                            format!("`{n}` is private to the loop at line {l}, column {c}; its value is not available after the loop"),
                        )
                        .with_note(format!(
                            "help: to get a value out of a parallel loop, make `{n}` an array or a `shared({n})` reduction"
                        )))
                }
                None => {
                    if let Some(q) = qualify(&self.imports, e)
                        && q == "appy.MVL"
                    {
                        return Ok(V::S(self.b.op1("appy.mvl", &[], "i64", &[]), STy::INT));
                    }
                    Err(self.err(e.span, format!("undefined name `{n}`")))
                }
            },
            ExprKind::Attribute { value, attr } => {
                let q = qualify(&self.imports, e).unwrap_or_default();
                if q == "appy.MVL" {
                    return Ok(V::S(self.b.op1("appy.mvl", &[], "i64", &[]), STy::INT));
                }
                if q == "numpy.inf" || q == "math.inf" {
                    return Ok(V::S(self.b.float(f64::INFINITY, "f64"), STy::FLOAT));
                }
                if q == "numpy.pi" || q == "math.pi" {
                    return Ok(V::S(self.b.float(std::f64::consts::PI, "f64"), STy::FLOAT));
                }
                if q == "numpy.e" || q == "math.e" {
                    return Ok(V::S(self.b.float(std::f64::consts::E, "f64"), STy::FLOAT));
                }
                if attr.name == "shape" || attr.name == "size" || attr.name == "ndim" {
                    if let V::Arr(m, _, r) = self.expr(value)? {
                        let mut dims = vec![];
                        for i in 0..r {
                            let c = self.b.index(i as i64);
                            let d = self.b.op1("memref.dim", &[m, c], "index", &[]);
                            dims.push(self.b.to_i64(d));
                        }
                        return Ok(match attr.name.as_str() {
                            "shape" => V::Tuple(dims.into_iter().map(|d| V::S(d, STy::INT)).collect()),
                            "ndim" => V::S(self.b.int(r as i64, "i64"), STy::INT),
                            _ => {
                                let mut p = self.b.int(1, "i64");
                                for d in dims {
                                    p = self.b.bin("arith.muli", p, d);
                                }
                                V::S(p, STy::INT)
                            }
                        });
                    }
                    return Err(self.err(value.span, format!("`.{}` needs an array", attr.name)));
                }
                Err(self.err(e.span, format!("unsupported attribute `{}`", q.trim_start_matches("builtins."))))
            }
            ExprKind::Subscript { value, indices } => {
                // Tuples (shapes) index with constants.
                if let V::Tuple(vs) = self.expr(value)? {
                    if let [Index::Expr(ix)] = indices.as_slice()
                        && let Some(k) = const_int(ix)
                    {
                        let n = vs.len() as i64;
                        let k = if k < 0 { k + n } else { k };
                        if (0..n).contains(&k) {
                            return Ok(vs[k as usize].clone());
                        }
                        return Err(self.err(ix.span, format!("index {k} is out of range for a tuple of {n}")));
                    }
                    return Err(self.err(e.span, "tuples can only be indexed with an integer constant"));
                }
                let (m, dt, idx) = self.element_ref(value, indices, e.span)?;
                self.set_loc(e.span);
                Ok(V::S(self.b.load(m, &idx), STy::strong(dt)))
            }
            ExprKind::Tuple(es) => {
                let mut vs = vec![];
                for x in es {
                    vs.push(self.expr(x)?);
                }
                Ok(V::Tuple(vs))
            }
            ExprKind::Unary { op, operand } => {
                let (x, t) = self.scalar(operand)?;
                Ok(match op {
                    UnaryOp::Pos => V::S(x, t),
                    UnaryOp::Neg => {
                        if t.dt == DType::Bool {
                            let t2 = STy::INT;
                            let y = self.b.cast(x, t, t2);
                            V::S(self.negate(y, t2.dt), t2)
                        } else {
                            V::S(self.negate(x, t.dt), t)
                        }
                    }
                    UnaryOp::Not => {
                        let c = self.b.cast(x, t, STy::BOOL);
                        let one = self.b.int(1, "i1");
                        V::S(self.b.bin("arith.xori", c, one), STy::BOOL)
                    }
                    UnaryOp::Invert => {
                        if t.is_float() {
                            return Err(self.err(e.span, "`~` needs an integer or boolean operand"));
                        }
                        let ones = self.b.int(-1, t.mlir());
                        let ones = if t.dt == DType::Bool { self.b.int(1, "i1") } else { ones };
                        V::S(self.b.bin("arith.xori", x, ones), t)
                    }
                })
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.scalar(lhs)?;
                let b = self.scalar(rhs)?;
                self.set_loc(e.span);
                self.binary(*op, a, b, e.span)
            }
            ExprKind::Compare { first, rest } => {
                let mut acc: Option<Value> = None;
                let mut left = self.scalar(first)?;
                for (op, r) in rest {
                    let right = self.scalar(r)?;
                    let c = self.compare(*op, left, right);
                    acc = Some(match acc {
                        None => c,
                        Some(p) => self.b.bin("arith.andi", p, c),
                    });
                    left = right;
                }
                Ok(V::S(acc.expect("at least one comparison"), STy::BOOL))
            }
            ExprKind::BoolOp { op, values } => {
                // Short-circuit evaluation through scf.if, so `i < n and a[i] > 0` never
                // reads out of bounds.
                let (first, rest) = values.split_first().expect("two operands");
                let v = self.expr(first)?;
                let mut acc = self.as_bool(v, first.span)?;
                for r in rest {
                    self.b.begin();
                    let v = self.expr(r)?;
                    let rv = self.as_bool(v, r.span)?;
                    self.b.push(Builder::yield_op(&[rv]));
                    let then = self.b.end();
                    let res = self.b.m.value("i1");
                    let short = self.b.int((*op == BoolOpKind::Or) as i64, "i1");
                    let (t_ops, e_ops) = if *op == BoolOpKind::And {
                        (then, vec![Builder::yield_op(&[short])])
                    } else {
                        (vec![Builder::yield_op(&[short])], then)
                    };
                    let ifop = Op::new("scf.if")
                        .with_operands([acc])
                        .with_results([res])
                        .with_region(Builder::region(vec![], t_ops))
                        .with_region(Builder::region(vec![], e_ops));
                    self.b.push(ifop);
                    acc = res;
                }
                Ok(V::S(acc, STy::BOOL))
            }
            ExprKind::IfExp { cond, then, orelse } => {
                let c = self.expr(cond)?;
                let c = self.as_bool(c, cond.span)?;
                self.b.begin();
                let (tv, tt) = self.scalar(then)?;
                let t_ops_marker = self.b.end();
                self.b.begin();
                let (ev, et) = self.scalar(orelse)?;
                let e_ops_marker = self.b.end();
                let rt = promote(tt, et);
                let mut t_ops = t_ops_marker;
                let mut e_ops = e_ops_marker;
                self.b.begin();
                let tc = self.b.cast(tv, tt, rt);
                t_ops.extend(self.b.end());
                t_ops.push(Builder::yield_op(&[tc]));
                self.b.begin();
                let ec = self.b.cast(ev, et, rt);
                e_ops.extend(self.b.end());
                e_ops.push(Builder::yield_op(&[ec]));
                let res = self.b.m.value(rt.mlir());
                let ifop = Op::new("scf.if")
                    .with_operands([c])
                    .with_results([res])
                    .with_region(Builder::region(vec![], t_ops))
                    .with_region(Builder::region(vec![], e_ops));
                self.b.push(ifop);
                Ok(V::S(res, rt))
            }
            ExprKind::Call { func, args, kwargs } => self.call(func, args, kwargs, e),
        }
    }

    fn element_ref(&mut self, arr: &Expr, indices: &[Index], span: Span) -> DResult<(Value, DType, Vec<Value>)> {
        let v = self.expr(arr)?;
        let V::Arr(m, dt, rank) = v else {
            return Err(self.err(arr.span, "only arrays can be subscripted"));
        };
        if indices.len() != rank {
            let has_slice = indices.iter().any(|i| !matches!(i, Index::Expr(_)));
            if !has_slice {
                return Err(self.err(
                    span,
                    format!(
                        "array has {rank} dimension(s) but {} index(es) were given; appy needs one index per dimension",
                        indices.len()
                    ),
                ));
            }
        }
        let mut idx = vec![];
        for (d, i) in indices.iter().enumerate() {
            match i {
                Index::Expr(x) => {
                    let (v, t) = self.scalar(x)?;
                    if t.is_float() {
                        return Err(self.err(x.span, "array indices must be integers"));
                    }
                    let mut v = self.b.cast(v, t, STy::INT);
                    // Python's negative indices count from the end; literal ones are exact.
                    if const_int(x).is_some_and(|k| k < 0) {
                        let c = self.b.index(d as i64);
                        let dim = self.b.op1("memref.dim", &[m, c], "index", &[]);
                        let dim = self.b.to_i64(dim);
                        v = self.b.bin("arith.addi", dim, v);
                    }
                    idx.push(self.b.to_index(v));
                }
                Index::Slice { span, .. } => {
                    return Err(self
                        .err(*span, "slices (sliced index notation) are not supported yet in this context")
                        .with_note("help: write an explicit `#pragma simd` loop over the elements"));
                }
                Index::NewAxis(sp) => {
                    return Err(self.err(
                        *sp,
                        "`None` (new axis) is only supported in tensor expressions, which are not supported yet",
                    ));
                }
            }
        }
        Ok((m, dt, idx))
    }

    fn binary(&mut self, op: BinOp, (a, ta): (Value, STy), (b, tb): (Value, STy), span: Span) -> DResult<V> {
        let mut t = promote(ta, tb);
        if matches!(op, BinOp::Div) {
            t = t.to_float();
        }
        if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::FloorDiv | BinOp::Mod | BinOp::Pow) && t.dt == DType::Bool {
            t = if ta.weak && tb.weak { STy::INT } else { STy::strong(DType::I64) };
        }
        if matches!(op, BinOp::Pow) && t.dt.is_int() {
            // int ** int by repeated multiplication (a negative exponent gives 0).
            let x = self.b.cast(a, ta, t);
            let y = self.b.cast(b, tb, STy::INT);
            let zero = self.b.int(0, "i64");
            let y = self.b.bin("arith.maxsi", y, zero);
            let n = self.b.to_index(y);
            let c0 = self.b.index(0);
            let c1 = self.b.index(1);
            let one = self.b.int(1, t.mlir());
            let iv = self.b.m.value("index");
            let acc = self.b.m.value(t.mlir());
            let r = self.b.m.value(t.mlir());
            self.b.begin();
            let next = self.b.bin("arith.muli", acc, x);
            self.b.push(Builder::yield_op(&[next]));
            let body = self.b.end();
            self.b.push(
                Op::new("scf.for")
                    .with_operands([c0, n, c1, one])
                    .with_results([r])
                    .with_region(Builder::region(vec![iv, acc], body)),
            );
            return Ok(V::S(r, t));
        }
        if matches!(op, BinOp::Pow) && !tb.is_float() {
            let x = self.b.cast(a, ta, t);
            if let Some(k @ 1..=4) = self.const_of(b) {
                // Small integer powers are exact products, as in NumPy.
                let mut r = x;
                for _ in 1..k {
                    r = self.b.bin("arith.mulf", r, x);
                }
                return Ok(V::S(r, t));
            }
            let y = self.b.cast(b, tb, t);
            return Ok(V::S(self.b.bin("math.powf", x, y), t));
        }
        let x = self.b.cast(a, ta, t);
        let y = self.b.cast(b, tb, t);
        let f = t.is_float();
        let name = match op {
            BinOp::Add => {
                if f {
                    "arith.addf"
                } else {
                    "arith.addi"
                }
            }
            BinOp::Sub => {
                if f {
                    "arith.subf"
                } else {
                    "arith.subi"
                }
            }
            BinOp::Mul => {
                if f {
                    "arith.mulf"
                } else {
                    "arith.muli"
                }
            }
            BinOp::Div => "arith.divf",
            BinOp::Pow => "math.powf",
            BinOp::FloorDiv => {
                if f {
                    let q = self.b.bin("arith.divf", x, y);
                    return Ok(V::S(self.b.op1("math.floor", &[q], t.mlir(), &[]), t));
                }
                "arith.floordivsi"
            }
            BinOp::Mod => {
                // Python modulo: the result takes the sign of the divisor.
                let r = self.b.bin(if f { "arith.remf" } else { "arith.remsi" }, x, y);
                let zero = self.b.scalar(0.0, t);
                let (rnz, rneg, yneg) = if f {
                    (
                        self.b.cmpf(FPred::Une, r, zero),
                        self.b.cmpf(FPred::Olt, r, zero),
                        self.b.cmpf(FPred::Olt, y, zero),
                    )
                } else {
                    (
                        self.b.cmpi(IPred::Ne, r, zero),
                        self.b.cmpi(IPred::Slt, r, zero),
                        self.b.cmpi(IPred::Slt, y, zero),
                    )
                };
                let diff = self.b.bin("arith.xori", rneg, yneg);
                let fix = self.b.bin("arith.andi", rnz, diff);
                let ry = self.b.bin(if f { "arith.addf" } else { "arith.addi" }, r, y);
                return Ok(V::S(self.b.select(fix, ry, r), t));
            }
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::LShift | BinOp::RShift => {
                if f {
                    return Err(self.err(span, "bitwise operators need integer or boolean operands"));
                }
                match op {
                    BinOp::BitAnd => "arith.andi",
                    BinOp::BitOr => "arith.ori",
                    BinOp::BitXor => "arith.xori",
                    BinOp::LShift => "arith.shli",
                    _ => "arith.shrsi",
                }
            }
            BinOp::MatMul => {
                return Err(self
                    .err(span, "`@` needs matrices or vectors in sliced index notation, not scalars")
                    .with_note("help: e.g. `C[:M, :N] = A[:M, :K] @ B[:K, :N]`"));
            }
        };
        Ok(V::S(self.b.bin(name, x, y), t))
    }

    fn compare(&mut self, op: CmpOp, (a, ta): (Value, STy), (b, tb): (Value, STy)) -> Value {
        let t = promote(ta, tb);
        let t = if t.dt == DType::Bool { STy::INT } else { t };
        let x = self.b.cast(a, ta, t);
        let y = self.b.cast(b, tb, t);
        if t.is_float() {
            let p = match op {
                CmpOp::Lt => FPred::Olt,
                CmpOp::Le => FPred::Ole,
                CmpOp::Gt => FPred::Ogt,
                CmpOp::Ge => FPred::Oge,
                CmpOp::Eq => FPred::Oeq,
                CmpOp::Ne => FPred::Une,
            };
            self.b.cmpf(p, x, y)
        } else {
            let p = match op {
                CmpOp::Lt => IPred::Slt,
                CmpOp::Le => IPred::Sle,
                CmpOp::Gt => IPred::Sgt,
                CmpOp::Ge => IPred::Sge,
                CmpOp::Eq => IPred::Eq,
                CmpOp::Ne => IPred::Ne,
            };
            self.b.cmpi(p, x, y)
        }
    }

    fn call(&mut self, func: &Expr, args: &[Expr], kwargs: &[(Ident, Expr)], e: &Expr) -> DResult<V> {
        let Some(q) = qualify(&self.imports, func) else {
            return Err(self.err(func.span, "unsupported call"));
        };
        let short = q.trim_start_matches("builtins.").to_string();
        if !kwargs.is_empty() && q != "appy.vidx" {
            return Err(self.err(kwargs[0].0.span, format!("keyword arguments are not supported for `{short}`")));
        }
        let nargs = |n: usize, this: &Self| -> DResult<()> {
            if args.len() != n {
                Err(this.err(e.span, format!("`{short}` takes {n} argument(s), {} given", args.len())))
            } else {
                Ok(())
            }
        };
        let unary_math = |name: &str| -> Option<&'static str> {
            Some(match name {
                "exp" => "math.exp",
                "log" => "math.log",
                "sqrt" => "math.sqrt",
                "tanh" => "math.tanh",
                "sin" => "math.sin",
                "cos" => "math.cos",
                "tan" => "math.tan",
                "floor" => "math.floor",
                "ceil" => "math.ceil",
                "log2" => "math.log2",
                "log10" => "math.log10",
                "exp2" => "math.exp2",
                "arctan" | "atan" => "math.atan",
                "erf" => "math.erf",
                _ => return None,
            })
        };
        let (module, fname) = q.rsplit_once('.').unwrap_or(("", q.as_str()));
        let is_mathmod = module == "numpy" || module == "math";
        match (module, fname) {
            ("builtins", "float") if args.len() == 1 => {
                if let ExprKind::Str(s) = &args[0].kind {
                    let v = match s.trim().to_ascii_lowercase().as_str() {
                        "inf" | "+inf" | "infinity" => f64::INFINITY,
                        "-inf" | "-infinity" => f64::NEG_INFINITY,
                        "nan" => f64::NAN,
                        other => other.parse::<f64>().map_err(|_| self.err(args[0].span, format!("could not convert string to float: '{s}'")))?,
                    };
                    return Ok(V::S(self.b.float(v, "f64"), STy::FLOAT));
                }
                let (x, t) = self.scalar(&args[0])?;
                Ok(V::S(self.b.cast(x, t, STy::FLOAT), STy::FLOAT))
            }
            ("builtins", "int") => {
                nargs(1, self)?;
                let (x, t) = self.scalar(&args[0])?;
                Ok(V::S(self.b.cast(x, t, STy::INT), STy::INT))
            }
            ("builtins", "bool") => {
                nargs(1, self)?;
                let (x, t) = self.scalar(&args[0])?;
                Ok(V::S(self.b.cast(x, t, STy::BOOL), STy::BOOL))
            }
            ("numpy", "float32" | "float64" | "int32" | "int64") => {
                nargs(1, self)?;
                let dt = self.dtype_of(func)?;
                let (x, t) = self.scalar(&args[0])?;
                Ok(V::S(self.b.cast(x, t, STy::strong(dt)), STy::strong(dt)))
            }
            ("builtins", "abs") | ("numpy", "abs" | "absolute" | "fabs") | ("math", "fabs") => {
                nargs(1, self)?;
                let (x, t) = self.scalar(&args[0])?;
                if t.is_float() {
                    Ok(V::S(self.b.op1("math.absf", &[x], t.mlir(), &[]), t))
                } else {
                    let t0 = t;
                    let t = if t.dt == DType::Bool { STy::INT } else { t };
                    let x = self.b.cast(x, t0, t);
                    Ok(V::S(self.b.op1("math.absi", &[x], t.mlir(), &[]), t))
                }
            }
            ("builtins", "max" | "min") | ("numpy", "maximum" | "minimum" | "fmax" | "fmin") => {
                let is_max = matches!(fname, "max" | "maximum" | "fmax");
                if args.len() == 1 {
                    return Err(self.err(e.span, format!("`{short}` of a single value needs a vector argument (`{short}(a[vi])` with `vi = appy.vidx(...)`)")));
                }
                if args.len() < 2 || (module == "numpy" && args.len() != 2) {
                    return Err(self.err(e.span, format!("`{short}` takes two arguments here")));
                }
                let mut acc = self.scalar(&args[0])?;
                for a in &args[1..] {
                    let b = self.scalar(a)?;
                    let t = promote(acc.1, b.1);
                    let x = self.b.cast(acc.0, acc.1, t);
                    let y = self.b.cast(b.0, b.1, t);
                    let name = match (t.is_float(), is_max) {
                        (true, true) => "arith.maximumf",
                        (true, false) => "arith.minimumf",
                        (false, true) => "arith.maxsi",
                        (false, false) => "arith.minsi",
                    };
                    acc = (self.b.bin(name, x, y), t);
                }
                Ok(V::S(acc.0, acc.1))
            }
            (_, "power") | ("math", "pow") if is_mathmod => {
                nargs(2, self)?;
                let a = self.scalar(&args[0])?;
                let b = self.scalar(&args[1])?;
                self.binary(BinOp::Pow, a, b, e.span)
            }
            (_, "arctan2" | "atan2") if is_mathmod => {
                nargs(2, self)?;
                let a = self.scalar(&args[0])?;
                let b = self.scalar(&args[1])?;
                let t = promote(a.1, b.1).to_float();
                let x = self.b.cast(a.0, a.1, t);
                let y = self.b.cast(b.0, b.1, t);
                Ok(V::S(self.b.bin("math.atan2", x, y), t))
            }
            (_, name) if is_mathmod && unary_math(name).is_some() => {
                nargs(1, self)?;
                let (x, t) = self.scalar(&args[0])?;
                let ft = if module == "math" { STy::FLOAT } else { t.to_float() };
                let x = self.b.cast(x, t, ft);
                let op = unary_math(name).expect("checked");
                let r = self.b.op1(op, &[x], ft.mlir(), &[]);
                if module == "math" && matches!(name, "floor" | "ceil") {
                    return Ok(V::S(self.b.cast(r, ft, STy::INT), STy::INT));
                }
                Ok(V::S(r, ft))
            }
            ("appy", "where") | ("numpy", "where") => {
                nargs(3, self)?;
                let c = self.expr(&args[0])?;
                let c = self.as_bool(c, args[0].span)?;
                let a = self.scalar(&args[1])?;
                let b = self.scalar(&args[2])?;
                let t = promote(a.1, b.1);
                let x = self.b.cast(a.0, a.1, t);
                let y = self.b.cast(b.0, b.1, t);
                Ok(V::S(self.b.select(c, x, y), t))
            }
            ("appy", "vidx") => {
                if args.len() < 2 || args.len() > 3 {
                    return Err(self.err(e.span, "appy.vidx(start, length, bound=N) takes a start, a length and a bound"));
                }
                let (s, ts) = self.scalar(&args[0])?;
                let (l, tl) = self.scalar(&args[1])?;
                let bound_e = args.get(2).or_else(|| kwargs.iter().find(|(k, _)| k.name == "bound").map(|(_, v)| v));
                let Some(be) = bound_e else { return Err(self.err(e.span, "appy.vidx needs a bound: appy.vidx(i, appy.MVL, bound=N)")) };
                let (bv, tb) = self.scalar(be)?;
                let start = self.b.cast(s, ts, STy::INT);
                let len = self.b.cast(l, tl, STy::INT);
                let bound = self.b.cast(bv, tb, STy::INT);
                Ok(V::Vidx { start, len, bound })
            }
            ("builtins", "sum") | ("numpy", "sum" | "max" | "min" | "amax" | "amin") => {
                Err(self.err(e.span, format!("`{short}` needs a vector argument (`{short}(a[vi])` with `vi = appy.vidx(...)`); whole-array reductions are not supported yet")))
            }
            ("builtins", "range") | (_, "prange") => Err(self.err(e.span, "range() can only be used as the iterable of a `for` loop")),
            _ => Err(self.err(func.span, format!("unsupported function `{short}`"))
                .with_note("help: supported: np.exp/log/sqrt/tanh/sin/cos/abs/maximum/minimum/floor/ceil/power, max/min/abs/float/int, appy.vidx/where/atomic_add/atomic_max/atomic_min")),
        }
    }
}

fn targets_of(k: &StmtKind) -> Vec<&Expr> {
    match k {
        StmtKind::Assign { targets, .. } => targets.iter().collect(),
        StmtKind::AugAssign { target, .. } => vec![target],
        _ => vec![],
    }
}

/// Replaces `sum(E)` / `max(E)` / `min(E)` of a vector `E` by a fresh name, recording it.
fn rewrite_reductions(e: &mut Expr, this: &Lower<'_>, counter: &mut usize, out: &mut Vec<(String, RedOp, Expr)>) {
    if let ExprKind::Call { func, args, kwargs } = &e.kind
        && args.len() == 1
        && kwargs.is_empty()
        && this.vidx_of(&args[0]).is_some()
    {
        let op = match qualify(&this.imports, func).as_deref() {
            Some("builtins.sum" | "numpy.sum") => Some(RedOp::Add),
            Some("builtins.max" | "numpy.max" | "numpy.amax") => Some(RedOp::Max),
            Some("builtins.min" | "numpy.min" | "numpy.amin") => Some(RedOp::Min),
            _ => None,
        };
        if let Some(op) = op {
            let name = format!("_appy_red{}", *counter);
            *counter += 1;
            out.push((name.clone(), op, args[0].clone()));
            e.kind = ExprKind::Name(name);
            return;
        }
    }
    match &mut e.kind {
        ExprKind::Unary { operand, .. } => rewrite_reductions(operand, this, counter, out),
        ExprKind::Binary { lhs, rhs, .. } => {
            rewrite_reductions(lhs, this, counter, out);
            rewrite_reductions(rhs, this, counter, out);
        }
        ExprKind::Call { args, .. } => args.iter_mut().for_each(|a| rewrite_reductions(a, this, counter, out)),
        ExprKind::IfExp { cond, then, orelse } => {
            rewrite_reductions(cond, this, counter, out);
            rewrite_reductions(then, this, counter, out);
            rewrite_reductions(orelse, this, counter, out);
        }
        ExprKind::Compare { first, rest } => {
            rewrite_reductions(first, this, counter, out);
            rest.iter_mut().for_each(|(_, x)| rewrite_reductions(x, this, counter, out));
        }
        _ => {}
    }
}

fn tyname(t: STy) -> String {
    if t.weak {
        match t.dt {
            DType::Bool => "bool".into(),
            DType::I64 => "int".into(),
            _ => "float".into(),
        }
    } else {
        t.dt.numpy().to_string()
    }
}

fn const_int(e: &Expr) -> Option<i64> {
    match &e.kind {
        ExprKind::Int(i) => Some(*i),
        ExprKind::Unary { op: UnaryOp::Neg, operand } => const_int(operand).map(|v| -v),
        _ => None,
    }
}

fn atomic_kind(op: RedOp, dt: DType) -> i64 {
    match (op, dt.is_float()) {
        (RedOp::Add, true) => 0,
        (RedOp::Add, false) => 1,
        (RedOp::Max, true) => 4,
        (RedOp::Max, false) => 6,
        (RedOp::Min, true) => 8,
        (RedOp::Min, false) => 10,
        (RedOp::Mul, true) => 12,
        (RedOp::Mul, false) => 13,
    }
}

fn identity(b: &mut Builder, op: RedOp, t: STy) -> Value {
    match (op, t.is_float()) {
        (RedOp::Add, _) => b.scalar(0.0, t),
        (RedOp::Mul, _) => b.scalar(1.0, t),
        (RedOp::Max, true) => b.float(f64::NEG_INFINITY, t.mlir()),
        (RedOp::Min, true) => b.float(f64::INFINITY, t.mlir()),
        (RedOp::Max, false) => b.int(if t.dt == DType::I32 { i32::MIN as i64 } else { i64::MIN }, t.mlir()),
        (RedOp::Min, false) => b.int(if t.dt == DType::I32 { i32::MAX as i64 } else { i64::MAX }, t.mlir()),
    }
}

fn combiner(b: &mut Builder, op: RedOp, t: STy) -> Region {
    let x = b.m.value(t.mlir());
    let y = b.m.value(t.mlir());
    let f = t.is_float();
    let name = match (op, f) {
        (RedOp::Add, true) => "arith.addf",
        (RedOp::Add, false) => "arith.addi",
        (RedOp::Mul, true) => "arith.mulf",
        (RedOp::Mul, false) => "arith.muli",
        (RedOp::Max, true) => "arith.maximumf",
        (RedOp::Max, false) => "arith.maxsi",
        (RedOp::Min, true) => "arith.minimumf",
        (RedOp::Min, false) => "arith.minsi",
    };
    let r = b.m.value(t.mlir());
    let ops = vec![
        Op::new(name).with_operands([x, y]).with_results([r]).with_loc(b.loc.clone()),
        Op::new("scf.reduce.return").with_operands([r]).with_loc(b.loc.clone()),
    ];
    Builder::region(vec![x, y], ops)
}

/// If every assignment to `name` in `body` is a reduction with one operator and `name`
/// is not otherwise read, returns that operator.
fn reduction_op(name: &str, body: &[Stmt], imports: &Imports) -> Option<RedOp> {
    let mut ops: Vec<RedOp> = vec![];
    let mut reads_in_forms = 0usize;
    let mut ok = true;
    fn walk(name: &str, stmts: &[Stmt], imports: &Imports, ops: &mut Vec<RedOp>, rf: &mut usize, ok: &mut bool) {
        for s in stmts {
            match &s.kind {
                StmtKind::AugAssign { target, op, .. } if is_name(target, name) => match op {
                    BinOp::Add | BinOp::Sub => ops.push(RedOp::Add),
                    BinOp::Mul => ops.push(RedOp::Mul),
                    _ => *ok = false,
                },
                StmtKind::Assign { targets, value } if targets.iter().any(|t| is_name(t, name)) => {
                    if targets.len() != 1 {
                        *ok = false;
                        continue;
                    }
                    match &value.kind {
                        ExprKind::Binary { op, lhs, rhs } => {
                            let l = is_name(lhs, name);
                            let r = is_name(rhs, name);
                            match op {
                                BinOp::Add | BinOp::Mul if l || r => {
                                    ops.push(if *op == BinOp::Add { RedOp::Add } else { RedOp::Mul });
                                    *rf += 1;
                                }
                                BinOp::Sub if l => {
                                    ops.push(RedOp::Add);
                                    *rf += 1;
                                }
                                _ => *ok = false,
                            }
                        }
                        ExprKind::Call { func, args, .. } if args.len() == 2 && (is_name(&args[0], name) || is_name(&args[1], name)) => {
                            match qualify(imports, func).as_deref() {
                                Some("builtins.max" | "numpy.maximum" | "numpy.fmax") => ops.push(RedOp::Max),
                                Some("builtins.min" | "numpy.minimum" | "numpy.fmin") => ops.push(RedOp::Min),
                                _ => *ok = false,
                            }
                            *rf += 1;
                        }
                        _ => *ok = false,
                    }
                }
                StmtKind::For { body, .. } => walk(name, body, imports, ops, rf, ok),
                StmtKind::If { then, orelse, .. } => {
                    walk(name, then, imports, ops, rf, ok);
                    walk(name, orelse, imports, ops, rf, ok);
                }
                _ => {}
            }
        }
    }
    walk(name, body, imports, &mut ops, &mut reads_in_forms, &mut ok);
    if !ok || ops.is_empty() || ops.iter().any(|o| *o != ops[0]) {
        return None;
    }
    let mut reads = vec![];
    ast_names_read(body, &mut reads);
    // AugAssign targets count as reads in ast_names_read; so do the forms' operands.
    let aug = count_aug(name, body);
    let total = reads.iter().filter(|(n, _)| n == name).count();
    if total != reads_in_forms + aug {
        return None;
    }
    Some(ops[0])
}

fn count_aug(name: &str, stmts: &[Stmt]) -> usize {
    stmts
        .iter()
        .map(|s| match &s.kind {
            StmtKind::AugAssign { target, .. } if is_name(target, name) => 1,
            StmtKind::For { body, .. } => count_aug(name, body),
            StmtKind::If { then, orelse, .. } => count_aug(name, then) + count_aug(name, orelse),
            _ => 0,
        })
        .sum()
}

/// How many `target op= ...` updates (by source text of the target) `stmts` contain.
fn count_target_updates(stmts: &[Stmt], key: &str, text: &str) -> usize {
    stmts
        .iter()
        .map(|s| match &s.kind {
            StmtKind::AugAssign { target, .. } => {
                let k: String = text
                    .get(target.span.start..target.span.end)
                    .unwrap_or("")
                    .split_whitespace()
                    .collect();
                usize::from(k == key)
            }
            StmtKind::If { then, orelse, .. } => count_target_updates(then, key, text) + count_target_updates(orelse, key, text),
            StmtKind::For { body, .. } => count_target_updates(body, key, text),
            _ => 0,
        })
        .sum()
}

/// Marks `a[idx] op= e` updates whose indices do not use `var` as atomic (they are
/// reductions across the iterations of the parallel loop over `var`; seed 000's array
/// rule). Updates whose indices use `var` are element-wise and stay as they are.
fn mark_atomic_reductions(stmts: &mut [Stmt], var: &str) {
    for s in stmts {
        match &mut s.kind {
            StmtKind::AugAssign {
                target,
                op: BinOp::Add | BinOp::Sub | BinOp::Mul,
                ..
            } if s.pragma.is_none() => {
                if let ExprKind::Subscript { indices, .. } = &target.kind {
                    let mut names = vec![];
                    for i in indices {
                        if let Index::Expr(x) = i {
                            expr_names(x, &mut names);
                        }
                    }
                    if !names.iter().any(|(n, _)| n == var) {
                        s.pragma = Some(Pragma {
                            kind: PragmaKind::Atomic,
                            text: "atomic".into(),
                            span: s.span,
                        });
                    }
                }
            }
            StmtKind::For { body, .. } => mark_atomic_reductions(body, var),
            StmtKind::If { then, orelse, .. } => {
                mark_atomic_reductions(then, var);
                mark_atomic_reductions(orelse, var);
            }
            _ => {}
        }
    }
}

/// Whether an unannotated loop over `var` may run as a simd loop: it is innermost, its
/// scalars are private or reductions, and no array element it writes is read at another
/// index (no loop-carried dependence through memory).
fn vectorizable(body: &[Stmt], var: &Ident, defined_outside: &dyn Fn(&str) -> bool, imports: &Imports) -> bool {
    fn simple(stmts: &[Stmt]) -> bool {
        stmts.iter().all(|s| match &s.kind {
            StmtKind::Assign { .. } | StmtKind::AugAssign { .. } | StmtKind::Pass => {
                s.pragma.is_none() || matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic))
            }
            StmtKind::If { then, orelse, .. } => simple(then) && simple(orelse),
            _ => false,
        })
    }
    if !simple(body) {
        return false;
    }
    let mut assigned = vec![];
    ast_names_assigned(body, &mut assigned);
    for (n, _) in &assigned {
        if defined_outside(n) && reduction_op(n, body, imports).is_none() {
            return false;
        }
    }
    // Stores and loads per array, by index text.
    /// The indices as text, without spans (equal indices give equal keys).
    fn index_key(indices: &[Index]) -> String {
        let ix: Vec<Index> = indices
            .iter()
            .map(|i| match i {
                Index::Expr(x) => Index::Expr(spanless(x)),
                o => o.clone(),
            })
            .collect();
        format!("{ix:?}").replace(|c: char| c.is_whitespace(), "")
    }
    fn spanless(e: &Expr) -> Expr {
        let mut e = e.clone();
        strip_spans(&mut e);
        e
    }
    fn collect(stmts: &[Stmt], stores: &mut Vec<(String, String, bool, bool)>, loads: &mut Vec<(String, String)>) {
        fn loads_in(e: &Expr, loads: &mut Vec<(String, String)>) {
            match &e.kind {
                ExprKind::Subscript { value, indices } => {
                    if let ExprKind::Name(n) = &value.kind {
                        loads.push((n.clone(), index_key(indices)));
                    }
                    for i in indices {
                        if let Index::Expr(x) = i {
                            loads_in(x, loads);
                        }
                    }
                }
                _ => e.for_each_child(&mut |c| loads_in(c, loads)),
            }
        }
        for s in stmts {
            match &s.kind {
                StmtKind::Assign { targets, value } => {
                    for t in targets {
                        if let ExprKind::Subscript { value: v, indices } = &t.kind
                            && let ExprKind::Name(n) = &v.kind
                        {
                            stores.push((n.clone(), index_key(indices), false, false));
                        }
                    }
                    loads_in(value, loads);
                }
                StmtKind::AugAssign { target, value, op } => {
                    if let ExprKind::Subscript { value: v, indices } = &target.kind
                        && let ExprKind::Name(n) = &v.kind
                    {
                        let atomic = matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic));
                        let red = matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul);
                        stores.push((n.clone(), index_key(indices), atomic, red));
                    }
                    loads_in(value, loads);
                }
                StmtKind::If { cond, then, orelse } => {
                    loads_in(cond, loads);
                    collect(then, stores, loads);
                    collect(orelse, stores, loads);
                }
                _ => {}
            }
        }
    }
    let mut stores = vec![];
    let mut loads = vec![];
    collect(body, &mut stores, &mut loads);
    let varying: Vec<String> = assigned
        .iter()
        .map(|(n, _)| format!("Name(\"{n}\")"))
        .chain([format!("Name(\"{}\")", var.name)])
        .collect();
    for (arr, key, atomic, red) in &stores {
        // The store is element-wise in the loop variable, an atomic update, or a
        // reduction into one element (an update with indices invariant in the loop, to an
        // array the loop does not otherwise read).
        let uses_var = key.contains(&format!("Name(\"{}\")", var.name));
        let invariant = !varying.iter().any(|v| key.contains(v.as_str()));
        let element_reduction = *red && invariant && !loads.iter().any(|(a, _)| a == arr);
        if !(uses_var || *atomic || element_reduction) {
            return false;
        }
        // Every other access to the array must be to the same element.
        if stores.iter().any(|(a, k, _, _)| a == arr && k != key) || loads.iter().any(|(a, k)| a == arr && k != key) {
            return false;
        }
    }
    true
}

fn strip_spans(e: &mut Expr) {
    e.span = Span::default();
    match &mut e.kind {
        ExprKind::Unary { operand, .. } => strip_spans(operand),
        ExprKind::Binary { lhs, rhs, .. } => {
            strip_spans(lhs);
            strip_spans(rhs);
        }
        ExprKind::Compare { first, rest } => {
            strip_spans(first);
            rest.iter_mut().for_each(|(_, x)| strip_spans(x));
        }
        ExprKind::BoolOp { values, .. } | ExprKind::Tuple(values) => values.iter_mut().for_each(strip_spans),
        ExprKind::IfExp { cond, then, orelse } => {
            strip_spans(cond);
            strip_spans(then);
            strip_spans(orelse);
        }
        ExprKind::Call { func, args, kwargs } => {
            strip_spans(func);
            args.iter_mut().for_each(strip_spans);
            kwargs.iter_mut().for_each(|(k, x)| {
                k.span = Span::default();
                strip_spans(x)
            });
        }
        ExprKind::Attribute { value, attr } => {
            strip_spans(value);
            attr.span = Span::default();
        }
        ExprKind::Subscript { value, indices } => {
            strip_spans(value);
            for i in indices {
                match i {
                    Index::Expr(x) => strip_spans(x),
                    Index::Slice { lower, upper, step, span } => {
                        *span = Span::default();
                        for x in [lower, upper, step].into_iter().flatten() {
                            strip_spans(x);
                        }
                    }
                    Index::NewAxis(sp) => *sp = Span::default(),
                }
            }
        }
        _ => {}
    }
}
