//! `for` loops: parallel (workers), simd (vector loops), sequential, with reductions
//! and data sharing.

use super::*;

impl Lower<'_> {
    // ----- loops -------------------------------------------------------------------

    pub(super) fn range_args(&mut self, iter: &Expr) -> DResult<(Value, Value, Value, Option<i64>, bool)> {
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

    pub(super) fn for_loop(&mut self, var: &Ident, iter: &Expr, body: &[Stmt], s: &Stmt) -> DResult<()> {
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
                && !self.needs_scalar_loop(body)
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
                let rop = if matches!(op, BinOp::Mul) {
                    Reduction::Prod
                } else {
                    Reduction::Sum
                };
                let id = self.b.constant(rop.identity(t.dt), t.mlir());
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
        let mut reductions: Vec<(String, Reduction)> = vec![];
        let mut cells: Vec<String> = vec![];
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
                    // APPy's rule: a plain assignment to a shared scalar is visible after
                    // the loop (if several iterations assign, one of the values wins).
                    (None, true) => cells.push(n.clone()),
                    (_, false) => {
                        return Err(self.err(*sp, format!("shared variable `{n}` must be initialised before the loop")));
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
        // A shared scalar the loop only reads is passed by value, like any scalar.
        // One the loop assigns lives in a one-element array while the loop runs.
        let mut cell_slots: Vec<(String, Value, STy)> = vec![];
        for n in &cells {
            let (v, t) = match self.lookup(n).cloned() {
                Some(Binding::Slot(slot, t)) => (self.b.load(slot, &[]), t),
                Some(Binding::Val(V::S(v, t))) => (v, t),
                _ => unreachable!("checked above"),
            };
            // (A bool is an i1 here: the cell is internal, never an argument.)
            let cell = self.b.m.value(format!("memref<{}>", t.mlir()));
            let alloc = Op::new("memref.alloc")
                .with_results([cell])
                .with_attr("operandSegmentSizes", "array<i32: 0, 0>")
                .with_loc(self.b.loc.clone());
            self.scopes[0].allocas.push(alloc);
            self.cells.push(cell);
            self.b.store(v, cell, &[]);
            cell_slots.push((n.clone(), cell, t));
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
        for (n, cell, t) in &cell_slots {
            self.bind(n, Binding::Slot(*cell, *t));
        }
        let mut accs = vec![];
        for ((n, op), t) in reductions.iter().zip(&red_tys) {
            let acc = self.new_slot(*t);
            let id = self.b.constant(op.identity(t.dt), t.mlir());
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
            reduce.regions.push(self.b.combiner(*op, t.mlir()));
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
        for (n, cell, t) in &cell_slots {
            let x = self.b.load(*cell, &[]);
            self.assign_scalar(n, x, *t, s.span)?;
        }
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
            if !reductions.iter().any(|(m, _)| *m == n) && !cells.contains(&n) && self.lookup(&n).is_none() {
                self.bind(&n, Binding::Private(s.span));
            }
        }
        if self.lookup(&var.name).is_none() {
            self.bind(&var.name, Binding::Private(s.span));
        }
        Ok(())
    }

    /// Whether a loop body holds statements that only run outside simd loops (array
    /// statements, vector statements, calls on a line of their own): automatic
    /// vectorisation leaves such a loop sequential rather than reject the program.
    fn needs_scalar_loop(&self, body: &[Stmt]) -> bool {
        body.iter().any(|s| match &s.kind {
            StmtKind::For { body, .. } => self.needs_scalar_loop(body),
            StmtKind::If { then, orelse, .. } => self.needs_scalar_loop(then) || self.needs_scalar_loop(orelse),
            StmtKind::Expr(_) => true,
            _ => self.is_array_stmt(s) || self.uses_vidx_stmt(s),
        })
    }

    /// Finds `X[idx] op= e` updates in a simd loop body whose indices do not depend on
    /// the loop (reductions into one element, seed 000's array rule), and rewrites them to
    /// updates of fresh scalars `_appy_redN`.
    pub(super) fn element_reductions(&mut self, var: &Ident, body: &[Stmt]) -> DResult<(Vec<Stmt>, Vec<ElementRed>)> {
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
    ) -> DResult<()> {
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
}
