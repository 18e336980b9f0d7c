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
//!
//! Lowering only emits IR: the semantic analysis (`sema::analysis`) has
//! already given every scalar variable its type (the join of the values assigned to
//! it) and every loop its plan (kind, reductions, shared cells, privates).

use crate::ast::*;
use crate::sema::Reduction;
use crate::sema::analysis::{Analysis, FUNCTION_SCOPE, NO_SCOPE, ScopeKind, loop_scope};
use crate::sema::names::*;
use crate::sema::plan::{AutoSimd, LoopPlan};
use crate::sema::resolve::*;
use crate::sema::shape::{Kind, Names};
use crate::sema::types::{self, const_int, tyname};
use appy_ir::build::{Builder, FPred, IPred};
use appy_ir::diag::{DResult, Diagnostic, SourceFile, Span};
use appy_ir::ir::{Block, Op, Region, Value};
use appy_ir::types::{ArgType, DType, STy, memref_type, promote};
use std::collections::{HashMap, HashSet};

mod alloc;
mod call;
mod checks;
mod expr;
mod loops;
mod rebind;
mod shape;
mod stmt;
mod tensor;
mod vector;
mod view;
mod whiles;

/// Options that affect the `appy` level (part of the specialisation key). `appy.MVL` is
/// not one of them: it stays symbolic (`appy.mvl`) until strip-mining.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LowerOptions {
    /// Checked mode: every array subscript is checked against its axis (an index out
    /// of bounds is reported through the status buffer, [`appy_ir::status`]), and
    /// negative indices count from the end as in Python.
    pub bounds_check: bool,
    /// The tuning candidate whose values the `tune(...)` lists of `transform(...)`
    /// clauses take (the k-th of each, its last when shorter; 0: the first).
    pub tune: usize,
}

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
    /// Warnings about the accepted program (e.g. a misplaced pragma).
    pub warnings: Vec<Diagnostic>,
    /// The sites of the status buffer, when the function takes one (a trailing
    /// `memref<?xi64>` parameter of [`appy_ir::status::STATUS_LEN`] elements).
    pub status: Option<appy_ir::status::Status>,
    /// The number of tuning candidates the `tune(...)` lists give (the longest list's
    /// length; 1 without any).
    pub tune_choices: usize,
}

/// Lowers `program`'s function, specialised for `args`, to the `appy` level.
pub fn lower(file: &SourceFile, program: &Program, args: &[ArgType], opts: &LowerOptions) -> DResult<Lowered> {
    // Deep expressions recurse through every walk of lowering: see `appy_ir::stack`.
    appy_ir::stack::deep(|| lower_on_stack(file, program, args, opts))
}

fn lower_on_stack(file: &SourceFile, program: &Program, args: &[ArgType], opts: &LowerOptions) -> DResult<Lowered> {
    let desugared = crate::sema::desugar::desugar(file, program)?;
    let calls = desugared.calls.clone();
    // An error inside an inlined function names the call that brought it in.
    lower_desugared(file, program, desugared, args, opts).map_err(|e| crate::sema::desugar::with_call_site(file, e, &calls, false))
}

fn lower_desugared(
    file: &SourceFile,
    program: &Program,
    desugared: crate::sema::desugar::Desugared,
    args: &[ArgType],
    opts: &LowerOptions,
) -> DResult<Lowered> {
    let mut warnings = desugared.warnings;
    // Complex values become pairs of real ones; complex arrays, float arrays of one more
    // axis.
    let (function, args) = crate::sema::complex::split(file, desugared.function, args, &Imports::new(&program.imports))?;
    let (f, args) = (&function, args.as_slice());
    // Races visible in the source: a loop-carried dependence in a parallel loop is an
    // error, an unsynchronised update of a shared element a warning.
    warnings.extend(crate::sema::races::check(file, &f.body, &Imports::new(&program.imports))?);
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
    // The type of every variable and the plan of every loop, before any IR.
    let imports = Imports::new(&program.imports);
    let analysis = crate::sema::analysis::analyze(file, f, args, &imports);
    let mut l = Lower {
        file,
        b: Builder::new(),
        scopes: vec![],
        imports,
        results: None,
        counter: 0,
        sema: &analysis,
        seq_worker: 0,
        warnings: vec![],
        cells: vec![],
        checked: opts.bounds_check
            || f.options
                .iter()
                .any(|(k, v)| k.name == "boundscheck" && matches!(v.kind, ExprKind::Bool(true))),
        status: None,
        sites: vec![],
        known_scalar: std::ptr::null(),
        no_status_reports: false,
        auto_simd: f
            .options
            .iter()
            .any(|(k, v)| k.name == "auto_simd" && matches!(v.kind, ExprKind::Bool(true))),
        typed: vec![],
        typed_slots: HashMap::new(),
        sign_dependent: vec![],
        tune: opts.tune,
        tune_choices: 1,
        params: vec![],
        assumes: vec![],
        privatized: Default::default(),
    };
    if let Err(e) = l.function(f, args) {
        return Err(l.sign_dependent_error(Some(e.span.unwrap_or_default())).unwrap_or(e));
    }
    if let Some(e) = l.sign_dependent_error(None) {
        return Err(e);
    }
    let results = l.results.clone().unwrap_or_default();
    warnings.extend(l.warnings);
    Ok(Lowered {
        module: l.b.m,
        name: f.name.name.clone(),
        params: f.params.iter().map(|p| p.name.clone()).collect(),
        results,
        warnings,
        status: l.status.map(|_| appy_ir::status::Status { sites: l.sites }),
        tune_choices: l.tune_choices.max(1),
    })
}

#[derive(Clone, Debug)]
enum V {
    /// A scalar SSA value.
    S(Value, STy),
    /// An array (memref).
    Arr(Value, DType, usize),
    /// A view of an array (`a[1:]`, `A[i]`, `A.T`).
    View(Box<view::View>),
    /// A tuple (shapes, multiple values).
    Tuple(Vec<V>),
    /// A dtype (`x.dtype`, bound to a name).
    DType(DType),
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

struct Scope {
    kind: ScopeKind,
    /// The analysis's number for it ([`FUNCTION_SCOPE`], [`loop_scope`]).
    id: usize,
    vars: HashMap<String, Binding>,
    /// Slots to place at the start of the scope's region.
    allocas: Vec<Op>,
}

struct Lower<'a> {
    file: &'a SourceFile,
    b: Builder,
    scopes: Vec<Scope>,
    imports: Imports,
    results: Option<Vec<ArgType>>,
    counter: usize,
    /// The types of variables and the plans of loops.
    sema: &'a Analysis,
    /// `@appy.jit(auto_simd=True)`: tensor statements get `simd` on their last dimension.
    auto_simd: bool,
    /// Depth of `sequential for` loops (their bodies run on one worker).
    seq_worker: usize,
    /// Warnings found while lowering.
    warnings: Vec<Diagnostic>,
    /// One-element arrays of shared scalars (freed when the function returns).
    cells: Vec<Value>,
    /// Checked mode ([`LowerOptions::bounds_check`] or `@appy.jit(boundscheck=True)`).
    checked: bool,
    /// [`LowerOptions::tune`].
    tune: usize,
    /// [`Lowered::tune_choices`], as the clauses are met.
    tune_choices: usize,
    /// The function's parameters, in order (`transform(prefetch(a))` names one).
    params: Vec<Value>,
    /// The loops that `assume(j, multiple=K)` clauses name (iname, K, the clause).
    assumes: Vec<(String, i64, Span)>,
    /// The arrays that `privatize(tmp)` clauses name: their allocations are named for
    /// the pass (`appy.name`).
    privatized: std::collections::HashSet<String>,
    /// The status buffer parameter, once something reports into it.
    status: Option<Value>,
    /// Its sites ([`appy_ir::status::Status::sites`]).
    sites: Vec<appy_ir::status::Site>,
    /// The operand about to be lowered when its parent already found it scalar (a
    /// binary operation whose rank is none): [`Lower::expr`] then skips the rank walk,
    /// which would make a chain of n operators cost n² (a 5,000-term sum).
    known_scalar: *const Expr,
    /// Lowering the scalar body of a tensor expression's element-wise op, which cannot
    /// hold the conditional stores of a status report.
    no_status_reports: bool,
    /// The variables whose slot type came from the analysis: name, that type, and the
    /// join of the types lowering stores into it, which must be the same (checked in
    /// debug builds when the function is done).
    typed: Vec<(String, STy, STy)>,
    /// The slots of `typed`, by slot (a loop's reduction accumulators and shared cells
    /// stand for the variable outside the loop).
    typed_slots: HashMap<Value, usize>,
    /// The values of `x ** k` (Python ints, `k` of unknown sign) not yet used as floats
    /// (`expr.rs`, [`crate::sema::types::Power::PyUnknownSign`]): an error when the
    /// function is done.
    sign_dependent: Vec<SignDependent>,
}

/// A value of `x ** k` whose type in Python depends on the sign of `k`.
struct SignDependent {
    value: Value,
    span: Span,
    /// The source of `x` and `k`, for the message.
    base: String,
    exp: String,
}

impl Names for Lower<'_> {
    fn imports(&self) -> &Imports {
        &self.imports
    }

    fn kind(&self, name: &str) -> Kind {
        match self.lookup(name) {
            None => Kind::Unbound,
            Some(Binding::Slot(..) | Binding::Val(V::S(..))) => Kind::Scalar,
            Some(Binding::Val(V::Arr(_, _, r))) => Kind::Array(*r),
            Some(Binding::Val(V::View(v))) => Kind::Array(v.rank()),
            Some(Binding::Val(V::Tuple(xs))) => Kind::Tuple(xs.len()),
            Some(Binding::Val(V::DType(_))) => Kind::DType,
            Some(Binding::Val(V::Vidx { .. })) => Kind::Vidx,
            Some(Binding::Private(_)) => Kind::Private,
        }
    }
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

    fn push_scope(&mut self, kind: ScopeKind, id: usize) {
        self.scopes.push(Scope {
            kind,
            id,
            vars: HashMap::new(),
            allocas: vec![],
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
        self.store_scalar(name, v, t, span, true)
    }

    /// [`Self::assign_scalar`]; `counts`: whether the value counts for the check of the
    /// variable's type (not the result of a loop's reduction, which has that type).
    fn store_scalar(&mut self, name: &str, v: Value, t: STy, span: Span, counts: bool) -> DResult<()> {
        if let Some(e) = self.sign_dependent_value(v) {
            return Err(e);
        }
        match self.lookup(name).cloned() {
            Some(Binding::Slot(slot, st)) => {
                // A Python variable takes the type of each value assigned to it; appy
                // gives it the join of those types, NumPy's promotion of them (`s = 0.0`
                // then `s += a[i]` with float32 `a` is a float32, as in NumPy 2), which
                // the analysis found. A variable it could not type has the type of its
                // first value.
                if promote(st, t) != st {
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
                if counts && let Some(&i) = self.typed_slots.get(&slot) {
                    self.typed[i].2 = promote(self.typed[i].2, t);
                }
                if !st.weak {
                    // `best = -1` where `best` later holds uint8 values.
                    self.var_int_fits(name, v, t, st.dt, span)?;
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
                if !ty.weak {
                    self.var_int_fits(name, v, t, ty.dt, span)?;
                }
                let slot = self.new_slot(ty);
                self.typed_slot(name, slot, t);
                let c = self.b.cast(v, t, ty);
                self.b.store(c, slot, &[]);
                self.bind(name, Binding::Slot(slot, ty));
                Ok(())
            }
        }
    }

    /// The type of the variable `name` of the innermost scope, from the analysis.
    fn var_type(&self, name: &str) -> Option<STy> {
        self.sema.slot_type(self.scopes.last()?.id, name)
    }

    /// Records a new slot of the variable `name` for the check of its type, with the
    /// first value stored into it of type `first`.
    fn typed_slot(&mut self, name: &str, slot: Value, first: STy) {
        if let Some(t) = self.var_type(name) {
            self.typed_slots.insert(slot, self.typed.len());
            self.typed.push((name.to_string(), t, first));
        }
    }

    /// Checks that every variable typed by the analysis holds exactly the join of the
    /// values lowering stored into it (debug builds).
    fn check_types(&self) {
        for (name, want, got) in &self.typed {
            debug_assert_eq!(
                want,
                got,
                "the analysis typed `{name}` as {}, lowering stored {}",
                tyname(*want),
                tyname(*got)
            );
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
