//! `for` loops: parallel (workers), simd (vector loops), sequential, with reductions
//! and data sharing.

use super::*;
use crate::ast::TransformKind;
use appy_ir::schedule::{Mark, TRANSFORMS, Tag, str_array};

impl<'a> Lower<'a> {
    // ----- loops -------------------------------------------------------------------

    pub(super) fn range_args(&mut self, iter: &Expr) -> DResult<(Value, Value, Value, Option<i64>)> {
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
        Ok((lb, ub, step, const_step))
    }

    /// Bounds for an index-typed loop over `k in [0, n)` with `i = lb + k*step`, or
    /// directly over `i` when the step is a positive constant.
    pub(super) fn loop_bounds(&mut self, lb: Value, ub: Value, step: Value, cstep: Option<i64>) -> (Value, Value, Value, bool) {
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

    pub(super) fn iv_value(&mut self, iv: Value, lb: Value, step: Value, direct: bool) -> Value {
        let k = self.b.to_i64(iv);
        if direct {
            return k;
        }
        let ks = self.b.bin("arith.muli", k, step);
        self.b.bin("arith.addi", lb, ks)
    }

    /// The plan of the loop `s` (the analysis made one per loop, found by the loop's
    /// span), and its number.
    fn plan(&self, s: &Stmt) -> DResult<(usize, &'a LoopPlan)> {
        let sema: &'a Analysis = self.sema;
        sema.plan_of(s.span)
            .ok_or_else(|| self.err(s.span, "internal error: no plan for this loop"))
    }

    /// The `transform(...)` clause of loop `s`'s pragma as the pass invocations that
    /// apply it (`appy.transforms`), each loop variable resolved to the iname of the
    /// loop of this nest that it names.
    fn transforms(&mut self, s: &Stmt) -> DResult<Option<String>> {
        let Some(PragmaKind::ParallelFor { transforms, .. }) = s.pragma.as_ref().map(|p| &p.kind) else {
            return Ok(None);
        };
        if transforms.is_empty() {
            return Ok(None);
        }
        let nest = self.nest_plans(s);
        let file = self.file;
        let find = |v: &Ident| find_in_nest(file, &nest, v);
        let mut out = vec![];
        for t in transforms {
            if t.kind == TransformKind::Prefetch {
                out.push(self.prefetch(&t.var)?);
                continue;
            }
            if t.kind == TransformKind::Privatize {
                let own = nest.iter().find(|p| p.span == s.span).map_or("", |p| p.iname.as_str());
                out.push(self.privatize(&t.var, own)?);
                continue;
            }
            if let TransformKind::Assume(k) = t.kind {
                out.push(format!("appy-assume{{iname={} multiple={k}}}", find(&t.var)?.iname));
                continue;
            }
            let target = find(&t.var)?;
            let n = &target.iname;
            out.push(match &t.kind {
                TransformKind::Split {
                    factor,
                    tune,
                    outer,
                    inner,
                } => {
                    // A tuning candidate's value (the list's last when it is shorter).
                    self.tune_choices = self.tune_choices.max(tune.len());
                    let factor = tune.get(self.tune.min(tune.len().saturating_sub(1))).unwrap_or(factor);
                    let parallel = target.kind.flags().is_some_and(|(workers, _)| workers);
                    let (o, i) = if parallel {
                        (Tag::Group(0), Tag::Local(0))
                    } else {
                        (Tag::For, Tag::For)
                    };
                    let (o, i) = (outer.unwrap_or(o), inner.unwrap_or(i));
                    format!("appy-split-iname{{iname={n} factor={factor} outer-tag={o} inner-tag={i}}}")
                }
                TransformKind::Tag(tag) => format!("appy-tag-inames{{tags={n}:{tag}}}"),
                TransformKind::Reorder(inner) | TransformKind::Join(inner) => {
                    let t2 = find(inner)?;
                    let pass = if matches!(t.kind, TransformKind::Join(_)) {
                        "appy-join-inames"
                    } else {
                        "appy-reorder"
                    };
                    format!("{pass}{{outer={n} inner={}}}", t2.iname)
                }
                TransformKind::Prefetch | TransformKind::Assume(_) | TransformKind::Privatize => unreachable!("handled above"),
            });
        }
        Ok(Some(str_array(&out)))
    }

    /// The plans of the loops of the nest annotated by `s`'s pragma: the loop and the
    /// loops in its body (a statement's span may cover its header only).
    fn nest_plans(&self, s: &Stmt) -> Vec<&'a LoopPlan> {
        let end = last_end(s);
        let within = |sp: Span| sp.start >= s.span.start && sp.start <= end;
        let sema: &'a Analysis = self.sema;
        sema.plans.iter().filter(|p| within(p.span)).collect()
    }

    /// The `assume(j, multiple=K)` clauses of `s`'s pragma, resolved to the loops they
    /// name, for [`Lower::check_assumed`] when those loops are lowered.
    fn note_assumes(&mut self, s: &Stmt) -> DResult<()> {
        let Some(PragmaKind::ParallelFor { transforms, .. }) = s.pragma.as_ref().map(|p| &p.kind) else {
            return Ok(());
        };
        if !transforms.iter().any(|t| matches!(t.kind, TransformKind::Assume(_))) {
            return Ok(());
        }
        let nest = self.nest_plans(s);
        for t in transforms {
            if let TransformKind::Assume(k) = t.kind {
                let iname = find_in_nest(self.file, &nest, &t.var)?.iname.clone();
                self.assumes.push((iname, k, t.span));
            }
        }
        Ok(())
    }

    /// Before loop `iname` from `lb` to `ub` by the constant `step`: when a clause
    /// assumes its trip count a multiple of K, a check that reports the program's error
    /// through the status buffer when it is not. Returns the upper bound to use: `lb`
    /// when the check fails, so that the loop (split without its rest on the strength
    /// of the fact) runs no iteration at all, never one past its end.
    fn check_assumed(&mut self, iname: &str, lb: Value, ub: Value, cstep: Option<i64>) -> DResult<Value> {
        let Some(&(_, k, span)) = self.assumes.iter().find(|a| a.0 == iname) else {
            return Ok(ub);
        };
        let Some(step) = cstep.filter(|s| *s != 0 && *s != i64::MIN) else {
            return Err(self.err(span, "assume(..., multiple=K) needs a loop with a constant step"));
        };
        let (lb64, ub64) = (self.b.to_i64(lb), self.b.to_i64(ub));
        // The trip count of range(lb, ub, step): ceil((ub - lb) / step), at least 0.
        let (from, to, st) = if step > 0 { (lb64, ub64, step) } else { (ub64, lb64, -step) };
        let span_v = self.b.bin("arith.subi", to, from);
        let stv = self.b.int(st, "i64");
        let trip = self.b.bin("arith.ceildivsi", span_v, stv);
        let zero = self.b.int(0, "i64");
        let trip = self.b.bin("arith.maxsi", trip, zero);
        let kv = self.b.int(k, "i64");
        let rem = self.b.bin("arith.remsi", trip, kv);
        let bad = self.b.cmpi(IPred::Ne, rem, zero);
        let site = self.new_site(span, appy_ir::status::SiteKind::Assume);
        self.record_fault(bad, site, trip, kv, 0);
        let guarded = self.b.select(bad, lb64, ub64);
        Ok(if self.b.m.ty(ub) == "index" {
            self.b.to_index(guarded)
        } else {
            guarded
        })
    }

    /// `privatize(tmp)` on the loop `iname`: the pass invocation, for a temporary the
    /// function allocates (named for the pass when it was bound: `Lower::privatized`).
    fn privatize(&self, v: &Ident, iname: &str) -> DResult<String> {
        let ok = match self.lookup(&v.name) {
            Some(Binding::Val(V::Arr(m, ..))) => !self.params.contains(m),
            _ => false,
        };
        if !ok {
            return Err(self
                .err(v.span, format!("privatize: `{}` is not a temporary array of the function", v.name))
                .with_note("privatize names an array the function allocates (np.empty, np.zeros, np.full) and uses in the loop at the loop's index only, e.g. `tmp = np.empty(n)` ... `transform(privatize(tmp))`"));
        }
        Ok(format!("appy-privatize{{array={} iname={iname}}}", v.name))
    }

    /// `prefetch(a)`: the pass invocation for array parameter `a` (by its position).
    fn prefetch(&self, v: &Ident) -> DResult<String> {
        let k = match self.lookup(&v.name) {
            Some(Binding::Val(V::Arr(m, ..))) => self.params.iter().position(|p| p == m),
            _ => None,
        };
        let Some(k) = k else {
            return Err(self
                .err(v.span, format!("prefetch: `{}` is not an array parameter of the function", v.name))
                .with_note(
                    "prefetch names an array the function takes and only reads, e.g. `transform(prefetch(a))` for `def f(a, out)`",
                ));
        };
        Ok(format!("appy-add-prefetch{{array={k} name={}}}", v.name))
    }

    /// Refuses a reduction that the loop levels cannot carry: over an 8- or 16-bit
    /// integer (combined across GPU lanes as 32-bit words), or the maximum or minimum of
    /// unsigned integers (their combiners compare signed).
    pub(super) fn reduction_type_ok(&self, op: Reduction, dt: DType, span: Span) -> DResult<()> {
        let small = (dt.is_int() || dt.half().is_some()) && dt.bits() < 32;
        let unsigned_order = dt.is_unsigned() && matches!(op, Reduction::Max | Reduction::Min);
        if !small && !unsigned_order {
            return Ok(());
        }
        let wide = if dt.is_float() {
            "np.float32"
        } else if dt.is_unsigned() && !unsigned_order {
            "np.uint64"
        } else {
            "np.int64"
        };
        let what = if small {
            format!("{dt} values")
        } else {
            format!("the {} of {dt} values", op.name())
        };
        Err(self
            .err(span, format!("a parallel reduction of {what} is not supported yet"))
            .with_note(format!(
                "help: reduce into a wider variable, e.g. `s = {wide}(0)` before the loop and `s += {wide}(a[i])`"
            )))
    }

    /// A `for` loop, as its plan says: sequential (`scf.for`), or on workers or lanes
    /// (`scf.parallel`) with its reductions, shared cells and private variables.
    pub(super) fn for_loop(&mut self, var: &Ident, iter: &Expr, body: &[Stmt], s: &Stmt) -> DResult<()> {
        let (k, plan) = self.plan(s)?;
        self.note_assumes(s)?;
        let (lb, ub, step, cstep) = self.range_args(iter)?;
        let ub = self.check_assumed(&plan.iname, lb, ub, cstep)?;
        let stop = match &s.kind {
            StmtKind::For { stop, .. } => stop.as_deref(),
            _ => None,
        };
        let Some((parallel, simd)) = plan.kind.flags() else {
            if let Some(flag) = stop {
                return self.stop_loop(var, (lb, ub, step, cstep), flag, body, s, &plan.iname);
            }
            return self.seq_loop(var, lb, ub, step, cstep, body, s, &plan.iname);
        };
        if stop.is_some() {
            return Err(self
                .err(s.span, "`break` cannot leave a parallel loop")
                .with_note("help: the iterations of a parallel loop all run; guard the rest of the body with `if` instead"));
        }
        let body = plan.body_or(body);
        // Array-element reductions in a simd loop accumulate in a scalar, and update the
        // element once after the loop.
        for r in &plan.element_reductions {
            let ExprKind::Subscript { value, .. } = &r.target.kind else {
                return Err(self.err(r.target.span, "expected an array element"));
            };
            let V::Arr(_, dt, _) = self.expr(value)? else {
                return Err(self.err(value.span, "only arrays can be subscripted"));
            };
            let t = STy::strong(dt);
            self.reduction_type_ok(r.op, dt, r.target.span)?;
            let slot = self.new_slot(t);
            let id = self.b.constant(r.op.identity(t.dt), t.mlir());
            self.b.store(id, slot, &[]);
            self.bind(&r.name, Binding::Slot(slot, t));
        }
        if let Some(e) = &plan.error {
            return Err(e.clone());
        }
        debug_assert!(
            plan.assigned
                .iter()
                .filter(|n| **n != var.name)
                .all(|n| plan.outside.contains(n) == (self.kind(n) == Kind::Scalar)),
            "the analysis saw other bindings than lowering at the loop of line {}",
            self.file.line_col(s.span.start).0
        );
        // A shared scalar the loop only reads is passed by value, like any scalar.
        // One the loop assigns lives in a one-element array while the loop runs.
        let mut cell_slots: Vec<(String, Value, STy)> = vec![];
        for n in &plan.cells {
            let (v, t) = self.scalar_value(n);
            // (A bool is an i1 here: the cell is internal, never an argument.)
            let cell = self.b.m.value(format!("memref<{}>", t.mlir()));
            let alloc = Op::new("memref.alloc")
                .with_results([cell])
                .with_attr("operandSegmentSizes", "array<i32: 0, 0>")
                .with_loc(self.b.loc.clone());
            self.scopes[0].allocas.push(alloc);
            self.cells.push(cell);
            self.b.store(v, cell, &[]);
            self.typed_alias(n, cell);
            cell_slots.push((n.clone(), cell, t));
        }
        // Snapshot scalars that the body only reads.
        let mut reads = vec![];
        ast_names_read(body, &mut reads);
        let assigned: HashSet<&String> = plan.assigned.iter().collect();
        let mut snap: Vec<(String, V)> = vec![];
        let mut snapped = HashSet::new();
        for (n, _) in &reads {
            if assigned.contains(n) || !snapped.insert(n.clone()) {
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
        for (n, op) in &plan.reductions {
            let (v, t) = self.scalar_value(n);
            self.reduction_type_ok(*op, t.dt, s.span)?;
            inits.push(v);
            red_tys.push(t);
        }
        let iv = self.b.m.value("index");
        self.b.begin();
        self.push_scope(if parallel { ScopeKind::Parallel } else { ScopeKind::Simd }, loop_scope(k));
        for (n, v) in snap {
            self.bind(&n, Binding::Val(v));
        }
        for (n, cell, t) in &cell_slots {
            self.bind(n, Binding::Slot(*cell, *t));
        }
        let mut accs = vec![];
        for ((n, op), t) in plan.reductions.iter().zip(&red_tys) {
            let acc = self.new_slot(*t);
            let id = self.b.constant(op.identity(t.dt), t.mlir());
            self.b.store(id, acc, &[]);
            self.typed_alias(n, acc);
            self.bind(n, Binding::Slot(acc, *t));
            accs.push(acc);
        }
        let i = self.iv_value(iv, lb, step, direct);
        self.bind(&var.name, Binding::Val(V::S(i, STy::INT)));
        self.block(body)?;
        self.set_loc(s.span);
        let mut partials = vec![];
        for a in &accs {
            partials.push(self.b.load(*a, &[]));
        }
        let mut reduce = Op::new("scf.reduce").with_operands(partials.iter().copied());
        for ((_, op), t) in plan.reductions.iter().zip(&red_tys) {
            reduce.regions.push(self.b.combiner(*op, t.mlir()));
        }
        reduce.loc = self.b.loc.clone();
        self.b.push(reduce);
        let mut ops = self.b.end();
        self.pop_scope(&mut ops);
        let results: Vec<Value> = red_tys.iter().map(|t| self.b.m.value(t.mlir())).collect();
        let n_inits = inits.len();
        let mut op = Op::new("scf.parallel")
            .with_operands([l, u, st].into_iter().chain(inits))
            .with_results(results.clone())
            .with_attr("operandSegmentSizes", format!("array<i32: 1, 1, 1, {n_inits}>"))
            .with_region(Builder::region(vec![iv], ops));
        op.set_inames(&[&plan.iname]);
        if let Some(t) = self.transforms(s)? {
            op.set_attr(TRANSFORMS, t);
        }
        if parallel {
            op.set_mark(Mark::Parallel);
        }
        if simd {
            op.set_mark(Mark::Simd);
        }
        if plan.auto_simd == AutoSimd::Applied {
            op.set_mark(Mark::AutoSimd);
        }
        if plan.prange {
            op.set_mark(Mark::Prange);
        }
        self.b.push(op);
        for (n, cell, t) in &cell_slots {
            let x = self.b.load(*cell, &[]);
            self.store_scalar(n, x, *t, s.span, false)?;
        }
        for (((n, _), r), t) in plan.reductions.iter().zip(results).zip(red_tys) {
            self.store_scalar(n, r, t, s.span, false)?;
        }
        for r in &plan.element_reductions {
            let op = if r.op == Reduction::Prod { BinOp::Mul } else { BinOp::Add };
            let value = Expr {
                kind: ExprKind::Name(r.name.clone()),
                span: r.target.span,
            };
            let stmt = Stmt {
                kind: StmtKind::AugAssign {
                    target: r.target.clone(),
                    op,
                    value: value.clone(),
                },
                span: r.target.span,
                pragma: None,
            };
            self.aug_assign(&r.target, op, &value, &stmt)?;
        }
        // Privates are not visible after the loop.
        for n in plan.privates() {
            if self.lookup(n).is_none() {
                self.bind(n, Binding::Private(s.span));
            }
        }
        if self.lookup(&var.name).is_none() {
            self.bind(&var.name, Binding::Private(s.span));
        }
        Ok(())
    }

    /// The value and type of the scalar `n` defined outside a loop (a reduction or a
    /// shared cell of it: the plan checked that it is one).
    fn scalar_value(&mut self, n: &str) -> (Value, STy) {
        match self.lookup(n).cloned() {
            Some(Binding::Slot(slot, t)) => (self.b.load(slot, &[]), t),
            Some(Binding::Val(V::S(v, t))) => (v, t),
            _ => unreachable!("the plan found a scalar defined outside the loop"),
        }
    }

    /// Makes the stores into `slot` (a loop's accumulator or cell for the variable `n`)
    /// count for the check of `n`'s type.
    fn typed_alias(&mut self, n: &str, slot: Value) {
        if let Some(Binding::Slot(outer, _)) = self.lookup(n)
            && let Some(&i) = self.typed_slots.get(outer)
        {
            self.typed_slots.insert(slot, i);
        }
    }

    pub(super) fn fresh(&mut self) -> usize {
        self.counter += 1;
        self.counter
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn seq_loop(
        &mut self,
        var: &Ident,
        lb: Value,
        ub: Value,
        step: Value,
        cstep: Option<i64>,
        body: &[Stmt],
        s: &Stmt,
        iname: &str,
    ) -> DResult<()> {
        let (l, u, st, direct) = self.loop_bounds(lb, ub, step, cstep);
        // Array names the body rebinds are loop-carried (`rebind.rs`).
        let carried = self.carried_arrays(&[body])?;
        let iter_args = self.carried_values(&carried);
        self.bind_carried(&carried, &iter_args);
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
        let yields = self.carried_yields(&carried, s.span)?;
        self.b.push(Builder::yield_op(&yields));
        let ops = self.b.end();
        self.set_loc(s.span);
        let results = self.carried_values(&carried);
        let mut op = Op::new("scf.for")
            .with_operands([l, u, st].into_iter().chain(Self::carried_inits(&carried)))
            .with_results(results.iter().copied())
            .with_region(Builder::region(std::iter::once(iv).chain(iter_args).collect(), ops));
        self.bind_carried(&carried, &results);
        op.set_inames(&[iname]);
        if matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::SequentialFor)) {
            op.set_mark(Mark::Sequential);
        }
        self.b.push(op);
        match prev {
            Some(p) => self.bind(&var.name, p),
            None => self.bind(&var.name, Binding::Private(s.span)),
        }
        Ok(())
    }
}

/// Where statement `s` ends, its body included (a compound statement's span may cover
/// its header only).
fn last_end(s: &Stmt) -> usize {
    let inner = match &s.kind {
        StmtKind::For { body, .. } | StmtKind::While { body, .. } => body.last(),
        StmtKind::If { then, orelse, .. } => orelse.last().or(then.last()),
        _ => None,
    };
    inner.map_or(s.span.end, |b| last_end(b).max(s.span.end))
}

/// The loop of `nest` over `v`; else an error at `v` listing the nest's variables.
fn find_in_nest<'p>(file: &SourceFile, nest: &[&'p LoopPlan], v: &Ident) -> DResult<&'p LoopPlan> {
    nest.iter().find(|p| p.var == v.name).copied().ok_or_else(|| {
        let vars: Vec<&str> = nest.iter().map(|p| p.var.as_str()).collect();
        Diagnostic::error(file, v.span, format!("transform: no loop over `{}` in this loop nest", v.name))
            .with_note(format!("the nest's loop variables: {}", vars.join(", ")))
    })
}
