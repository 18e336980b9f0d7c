//! Statements: the function body, assignments, updates, atomics, `if`, `return`.

use super::*;

/// The `@appy.jit(...)` options appy accepts: `auto_simd` changes the code; the others
/// select or debug APPy's own code generators and are accepted without effect.
const KNOWN_OPTIONS: &[&str] = &[
    "auto_simd",
    "dump_code",
    "backend",
    "dry_run",
    "dump_code_to_file",
    "verbose_static_rewrite",
    "clear_cache",
    "verbose_block_loop",
    "shader",
    "device",
    "lib",
    "tune",
    "entry_to_device",
    "simd",
    "boundscheck",
];

impl Lower<'_> {
    // ----- function --------------------------------------------------------------

    pub(super) fn function(&mut self, f: &Function, args: &[ArgType]) -> DResult<()> {
        self.set_loc(f.name.span);
        self.push_scope(ScopeKind::Function, FUNCTION_SCOPE);
        let mut params = vec![];
        for (p, a) in f.params.iter().zip(args) {
            let v = self.b.m.value(a.mlir());
            params.push(v);
            let bind = match *a {
                ArgType::Array { dtype, rank } => Binding::Val(V::Arr(v, dtype, rank)),
                ArgType::Scalar { dtype, weak } => Binding::Val(V::S(v, STy { dt: dtype, weak })),
            };
            self.bind(&p.name, bind);
        }
        self.params = params.clone();
        self.privatized = privatized_names(&f.body);
        // Parameters that are reassigned become mutable slots.
        let mut assigned = vec![];
        ast_names_assigned(&f.body, &mut assigned);
        for (p, a) in f.params.iter().zip(args) {
            if let (ArgType::Scalar { dtype, weak }, true) = (a, assigned.iter().any(|(n, _)| *n == p.name)) {
                let arg = STy { dt: *dtype, weak: *weak };
                let t = self.var_type(&p.name).map(|h| promote(arg, h)).unwrap_or(arg);
                let Some(Binding::Val(V::S(v, _))) = self.lookup(&p.name).cloned() else {
                    continue;
                };
                let slot = self.new_slot(t);
                self.typed_slot(&p.name, slot, arg);
                let v = self.b.cast(v, arg, t);
                self.b.store(v, slot, &[]);
                self.bind(&p.name, Binding::Slot(slot, t));
            }
        }
        for opt in &f.options {
            // APPy's own options that choose its code generator, or debug it, mean
            // nothing here; anything else is probably a typo.
            if !KNOWN_OPTIONS.contains(&opt.0.name.as_str()) {
                self.warnings.push(
                    Diagnostic::warning(
                        self.file,
                        opt.0.span,
                        format!("unknown `@appy.jit` option `{}` (ignored)", opt.0.name),
                    )
                    .with_note(format!("help: appy knows: {}", KNOWN_OPTIONS.join(", "))),
                );
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
        for c in std::mem::take(&mut self.cells) {
            self.b.op0("memref.dealloc", &[c], &[]);
        }
        self.b.op0("func.return", &ret, &[]);
        let mut ops = self.b.end();
        self.pop_scope(&mut ops);
        self.check_types();
        let mut arg_types: Vec<String> = args.iter().map(|a| a.mlir()).collect();
        let mut arg_names: Vec<String> = f.params.iter().map(|p| p.name.clone()).collect();
        if let Some(st) = self.status {
            params.push(st);
            arg_types.push("memref<?xi64>".into());
            arg_names.push("_appy_status".into());
        }
        let ftype = format!(
            "({}) -> ({})",
            arg_types.join(", "),
            ret.iter().map(|v| self.b.m.ty(*v).to_string()).collect::<Vec<_>>().join(", ")
        );
        let func = Op::new("func.func")
            .with_attr("function_type", ftype)
            .with_attr("sym_name", format!("\"{}\"", f.name.name))
            .with_attr("llvm.emit_c_interface", "unit")
            .with_attr(appy_ir::kernel::ARG_NAMES, appy_ir::schedule::str_array(&arg_names))
            .with_region(Region::single(Block { args: params, ops }))
            .with_loc(self.b.loc.clone());
        self.b.m.body_mut().push(func);
        Ok(())
    }

    pub(super) fn return_values(&mut self, e: Option<&Expr>) -> DResult<Vec<Value>> {
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
                V::View(_) => {
                    // A view is returned as a new array with its values.
                    let V::Arr(x, d, r) = self.copy_value(v, e.span)? else {
                        unreachable!("a copy is an array")
                    };
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

    pub(super) fn block(&mut self, stmts: &[Stmt]) -> DResult<()> {
        for s in stmts {
            if let StmtKind::Return(_) = s.kind {
                return Err(self.err(s.span, "`return` is only supported as the last statement of the function"));
            }
            self.stmt(s)?;
        }
        Ok(())
    }

    pub(super) fn stmt(&mut self, s: &Stmt) -> DResult<()> {
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
                && !self.is_array_stmt(s)
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
        if self.uses_vidx_stmt(s) {
            return self.vector_stmt(s);
        }
        // `a[i, j] = x, y, z`: a tuple into a row (`store_row`).
        let tuple_row = matches!(&s.kind, StmtKind::Assign { targets, value } if targets.len() == 1 && matches!(value.kind, ExprKind::Tuple(_)) && matches!(targets[0].kind, ExprKind::Subscript { .. }));
        if self.is_array_stmt(s) && !tuple_row {
            return self.array_stmt(s);
        }
        match &s.kind {
            StmtKind::Pass => Ok(()),
            StmtKind::Continue => Err(self.err(s.span, "`continue` outside a loop")),
            StmtKind::Break => Err(self.err(s.span, "`break` outside a loop")),
            StmtKind::Expr(e) => {
                if let ExprKind::Str(_) = e.kind {
                    return Ok(());
                }
                if let ExprKind::Call { func, args, kwargs } = &e.kind {
                    if matches!(&func.kind, ExprKind::Name(n) if n == crate::ast::ASSERT_FAILED) {
                        // A failed `assert`: an error at the statement.
                        let site = self.new_site(e.span, appy_ir::status::SiteKind::Assert);
                        let yes = self.b.int(1, "i1");
                        let zero = self.b.int(0, "i64");
                        self.record_fault(yes, site, zero, zero, 0);
                        return Ok(());
                    }
                    return self.call_stmt(func, args, kwargs, e);
                }
                Err(self.err(
                    e.span,
                    "expression statements have no effect in appy (only calls like `appy.atomic_add(...)` or `print(...)`)",
                ))
            }
            StmtKind::Return(_) => Err(self.err(s.span, "`return` is only supported as the last statement of the function")),
            StmtKind::Assign { targets, value } => self.assign(targets, value, s),
            StmtKind::AugAssign { target, op, value } => self.aug_assign(target, *op, value, s),
            StmtKind::If { cond, then, orelse } => {
                let c = self.expr(cond)?;
                let c = self.as_bool(c, cond.span)?;
                // Array names a branch rebinds are the `if`'s results (`rebind.rs`).
                let carried = self.carried_arrays(&[then, orelse])?;
                let inits = Self::carried_inits(&carried);
                self.b.begin();
                self.block(then)?;
                let yields = self.carried_yields(&carried, s.span)?;
                self.b.push(Builder::yield_op(&yields));
                let t = self.b.end();
                self.bind_carried(&carried, &inits);
                let e = if orelse.is_empty() && carried.is_empty() {
                    None
                } else {
                    self.b.begin();
                    self.block(orelse)?;
                    let yields = self.carried_yields(&carried, s.span)?;
                    self.b.push(Builder::yield_op(&yields));
                    Some(self.b.end())
                };
                self.set_loc(s.span);
                let results = self.carried_values(&carried);
                self.b.if_op_with_results(c, t, e, &results);
                self.bind_carried(&carried, &results);
                Ok(())
            }
            StmtKind::For { var, iter, body, .. } => self.for_loop(var, iter, body, s),
            StmtKind::While { cond, body } => self.while_loop(cond, body, s),
        }
    }

    /// A statement that computes with arrays: a view or a new array bound to names, or
    /// a tensor statement.
    pub(super) fn array_stmt(&mut self, s: &Stmt) -> DResult<()> {
        if let StmtKind::Assign { targets, value } = &s.kind
            && targets.iter().all(|t| matches!(t.kind, ExprKind::Name(_)))
            && !(targets.len() == 1 && self.arank(value) == Some(0))
            && self.arank(value).is_some()
        {
            let pragma = s.pragma.as_ref().filter(|p| matches!(p.kind, PragmaKind::Tensor(_)));
            let v = match pragma {
                Some(p) if !self.is_view_expr(value) => self.new_array_with(value, Some(p))?,
                _ => self.array_value(value)?,
            };
            for t in targets {
                self.store_to(t, v.clone(), value.span)?;
            }
            return Ok(());
        }
        self.tensor_stmt(s)
    }

    /// A call on a line of its own: `print(...)`, `a.fill(v)`, `np.copyto(dst, src)`,
    /// `appy.atomic_add(...)`.
    fn call_stmt(&mut self, func: &Expr, args: &[Expr], kwargs: &[(Ident, Expr)], e: &Expr) -> DResult<()> {
        use crate::sema::catalog::Rule;
        let Some((f, recv)) = self.callee(func) else {
            return Err(self.unsupported_call(func));
        };
        match f.rule {
            Rule::Atomic(_) => {
                let q = qualify(&self.imports, func).unwrap_or_default();
                let op = q.rsplit('_').next().unwrap_or("");
                self.atomic_call(op, args, e.span)
            }
            Rule::CopyTo => {
                let (dst, src) = match (recv, args) {
                    (Some(d), [v]) => (d, v),
                    (None, [d, v]) => (d, v),
                    _ => return Err(self.err(e.span, "expected `a.fill(value)` or `np.copyto(dst, src)`")),
                };
                if let Some((k, _)) = kwargs.first() {
                    return Err(self.err(k.span, format!("unsupported keyword `{}`", k.name)));
                }
                let d = self.expr(dst)?;
                let Some(view) = self.view_of(&d) else {
                    return Err(self.err(dst.span, "the destination must be an array"));
                };
                self.tensor_assign(tensor::TTarget::Whole(view, dst.span), None, src, None, e.span)?;
                Ok(())
            }
            Rule::Print => self.print_stmt(args, kwargs, e),
            _ => Err(self
                .err(e.span, "this expression statement has no effect")
                .with_note("help: assign its value to a name, or remove it")),
        }
    }

    /// `print(a, f"x = {x:.3f}", sep=..., end=...)`: an `appy.print` op in the host
    /// code, whose `pieces` attribute lists the text and the value fields
    /// ([`appy_ir::pyfmt::Piece`]); the runtime formats and prints it in program order.
    pub(super) fn print_stmt(&mut self, args: &[Expr], kwargs: &[(Ident, Expr)], e: &Expr) -> DResult<()> {
        use appy_ir::pyfmt::{Kind, Piece};
        if self.seq_worker > 0 || self.scopes.iter().any(|s| s.kind != ScopeKind::Function) {
            return Err(self
                .err(
                    e.span,
                    "`print` inside a parallel or simd loop is not supported (it would run on the GPU's threads)",
                )
                .with_note("help: print after the loop, or store the values into an array and print that from the host code"));
        }
        let mut sep = " ".to_string();
        let mut end = "\n".to_string();
        for (k, v) in kwargs {
            match (k.name.as_str(), &v.kind) {
                ("sep", ExprKind::Str(s)) => sep = s.clone(),
                ("end", ExprKind::Str(s)) => end = s.clone(),
                ("sep" | "end", ExprKind::None) => {}
                ("flush", _) => {}
                _ => {
                    return Err(self
                        .err(k.span, format!("`print(..., {}=...)` is not supported", k.name))
                        .with_note("help: supported: sep= and end= with string literals"));
                }
            }
        }
        let mut pieces: Vec<Piece> = vec![];
        let mut vals = vec![];
        // `fstr`: a field of an f-string, formatted by `format()`, which shows a NumPy
        // float32 as the Python float of the same value (`str()` shows NumPy's repr).
        let mut field = |this: &mut Self, x: &Expr, spec: &str, pieces: &mut Vec<Piece>, fstr: bool| -> DResult<()> {
            let v = this.expr(x)?;
            let V::S(v, t) = v else {
                return Err(this
                    .err(x.span, "only scalars and strings can be printed")
                    .with_note("help: print elements (`a[i]`), or return the array and print it in Python"));
            };
            let (v, t) = if fstr && t.dt == DType::F32 {
                (this.b.cast(v, t, STy::strong(DType::F64)), STy::strong(DType::F64))
            } else {
                (v, t)
            };
            if t.dt.half().is_some() {
                return Err(this
                    .err(x.span, format!("printing a {} is not supported yet", t.dt))
                    .with_note("help: print `float(x)` (Python shows the float64 of the value, not NumPy's shortest float16 form)"));
            }
            if t.dt == DType::U64 {
                return Err(this
                    .err(x.span, "printing a uint64 is not supported yet")
                    .with_note("help: print `int(x)` when it is below 2**63, or return the value and print it in Python"));
            }
            let kind = match t.dt {
                DType::F32 => Kind::F32,
                DType::F64 => Kind::F64,
                DType::Bool => Kind::Bool,
                _ => Kind::Int,
            };
            appy_ir::pyfmt::check_spec(kind, spec).map_err(|m| this.err(x.span, format!("invalid format: {m}")))?;
            pieces.push(Piece::Value(kind, spec.to_string()));
            // Every value travels as the 64 bits of its representation.
            let bits = match t.dt {
                DType::F64 => this.b.op1("arith.bitcast", &[v], "i64", &[]),
                DType::F32 => {
                    let w = this.b.op1("arith.bitcast", &[v], "i32", &[]);
                    this.b.op1("arith.extui", &[w], "i64", &[])
                }
                DType::I64 | DType::U64 => v,
                DType::Bool => this.b.op1("arith.extui", &[v], "i64", &[]),
                d => this.b.cast(v, STy::strong(d), STy::strong(DType::I64)),
            };
            vals.push(bits);
            Ok(())
        };
        for (k, a) in args.iter().enumerate() {
            if k > 0 {
                pieces.push(Piece::Text(sep.clone()));
            }
            match &a.kind {
                ExprKind::Str(s) => pieces.push(Piece::Text(s.clone())),
                ExprKind::FString(parts) => {
                    for p in parts {
                        match p {
                            FPart::Lit(s) => pieces.push(Piece::Text(s.clone())),
                            FPart::Field { expr, spec, .. } => field(self, expr, spec, &mut pieces, true)?,
                        }
                    }
                }
                _ => field(self, a, "", &mut pieces, false)?,
            }
        }
        pieces.push(Piece::Text(end));
        let list: Vec<String> = pieces.iter().map(|p| format!("\"{}\"", p.encode())).collect();
        self.set_loc(e.span);
        self.b.op0("appy.print", &vals, &[("pieces", format!("[{}]", list.join(", ")))]);
        Ok(())
    }

    pub(super) fn assign(&mut self, targets: &[Expr], value: &Expr, s: &Stmt) -> DResult<()> {
        let atomic = matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic));
        // `a[i] = max(a[i], v)` under `#pragma atomic`.
        if atomic {
            let [t] = targets else {
                return Err(self.err(s.span, "`#pragma atomic` needs a single target"));
            };
            if let ExprKind::Call { func, args, .. } = &value.kind
                && let (Some(q), [x, y]) = (qualify(&self.imports, func), args.as_slice())
            {
                let op = crate::sema::catalog::max_min(&q);
                if let Some(op) = op {
                    let same = crate::sema::prange::same;
                    let other = if same(x, t) {
                        y
                    } else if same(y, t) {
                        x
                    } else {
                        return Err(self.err(value.span, "`#pragma atomic` max/min must have the form `a[i] = max(a[i], v)`"));
                    };
                    // Builtin `max(a[i], v)` skips a NaN `v`, as Python's comparison does.
                    let builtin = crate::sema::catalog::lookup(&q)
                        .is_some_and(|f| matches!(f.rule, crate::sema::catalog::Rule::MaxMin { numpy: false, .. }));
                    return self.atomic_update(t, op, other, false, builtin);
                }
            }
            return Err(self.err(
                s.span,
                "`#pragma atomic` supports `a[i] += v`, `a[i] -= v`, and `a[i] = max(a[i], v)` / `min`",
            ));
        }
        let v = self.expr(value)?;
        for t in targets {
            self.store_to(t, v.clone(), value.span)?;
        }
        Ok(())
    }

    pub(super) fn store_to(&mut self, t: &Expr, v: V, vspan: Span) -> DResult<()> {
        match &t.kind {
            ExprKind::Name(n) => match v {
                V::S(x, ty) => self.assign_scalar(n, x, ty, t.span),
                V::Arr(..) | V::View(_) | V::Tuple(_) | V::Vidx { .. } | V::DType(_) => {
                    if self.scopes.len() != 1 && matches!(v, V::Tuple(_)) {
                        return Err(self.err(t.span, "tuples can only be bound at the top level of the function"));
                    }
                    if let Some(Binding::Slot(..)) = self.lookup(n) {
                        return Err(self.err(t.span, format!("`{n}` is a scalar; it cannot be rebound to an array or vector")));
                    }
                    if let V::Arr(m, ..) = v
                        && self.privatized.contains(n)
                        && let Some(op) = self.b.find_open_mut(m)
                        && op.name == "memref.alloc"
                    {
                        // The temporary a `transform(privatize(...))` clause names.
                        op.set_attr("appy.name", format!("\"{n}\""));
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
            ExprKind::Subscript { value, indices } if matches!(v, V::Tuple(_)) && indices.iter().all(|i| matches!(i, Index::Expr(_))) => {
                let V::Tuple(vs) = v else { unreachable!("matched") };
                self.store_row(t, value, indices, vs, vspan)
            }
            ExprKind::Subscript { value, indices } => {
                let (m, dt, idx, ok) = self.element_ref(value, indices, t.span)?;
                let V::S(x, ty) = v else {
                    return Err(self.err(vspan, "only scalar values can be stored into an array element"));
                };
                if dt.is_float() {
                    self.float_use(x);
                }
                self.int_fits(x, ty, dt, vspan)?;
                let c = self.b.cast(x, ty, STy::strong(dt));
                let c = self.stored_form(c, dt);
                self.set_loc(t.span);
                self.guarded(ok, |me| me.b.store(c, m, &idx));
                Ok(())
            }
            _ => Err(self.err(t.span, "cannot assign to this expression")),
        }
    }

    /// `a[i, j] = x, y, z`: a tuple of scalars stored into the row `a[i, j, :]`, element
    /// by element; a row of another length is NumPy's broadcast error, reported at the
    /// statement (nothing is stored).
    fn store_row(&mut self, t: &Expr, arr: &Expr, indices: &[Index], vs: Vec<V>, vspan: Span) -> DResult<()> {
        let span = t.span;
        let mk = |kind| Expr { kind, span };
        let axis = indices.len();
        // `arr.shape[axis]`: the row's length.
        let len = mk(ExprKind::Subscript {
            value: Box::new(mk(ExprKind::Attribute {
                value: Box::new(arr.clone()),
                attr: Ident {
                    name: "shape".into(),
                    span,
                },
            })),
            indices: vec![Index::Expr(mk(ExprKind::Int(axis as i64)))],
        });
        let V::S(n, _) = self.expr(&len)? else {
            return Err(self.err(span, "a tuple can be stored into a row of an array only"));
        };
        let k = self.b.int(vs.len() as i64, "i64");
        let bad = self.b.cmpi(IPred::Ne, n, k);
        let site = self.new_site(span, appy_ir::status::SiteKind::Broadcast);
        self.record_fault(bad, site, k, n, axis);
        let one = self.b.int(1, "i1");
        let ok = self.b.bin("arith.xori", bad, one);
        let mut result = Ok(());
        self.guarded(Some(ok), |me| {
            for (j, x) in vs.into_iter().enumerate() {
                let mut ix = indices.to_vec();
                ix.push(Index::Expr(mk(ExprKind::Int(j as i64))));
                let elem = mk(ExprKind::Subscript {
                    value: Box::new(arr.clone()),
                    indices: ix,
                });
                if let Err(e) = me.store_to(&elem, x, vspan) {
                    result = Err(e);
                    return;
                }
            }
        });
        result
    }

    pub(super) fn aug_assign(&mut self, target: &Expr, op: BinOp, value: &Expr, s: &Stmt) -> DResult<()> {
        let atomic = matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic));
        if atomic {
            let (rop, neg) = match op {
                BinOp::Add => (Reduction::Sum, false),
                BinOp::Sub => (Reduction::Sum, true),
                BinOp::Mul => (Reduction::Prod, false),
                _ => return Err(self.err(s.span, "`#pragma atomic` supports `+=`, `-=` and max/min updates")),
            };
            return self.atomic_update(target, rop, value, neg, false);
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

    pub(super) fn atomic_call(&mut self, op: &str, args: &[Expr], span: Span) -> DResult<()> {
        let usage = format!("`appy.atomic_{op}(a, index, value)` updates `a[index]` atomically (index: an integer or a tuple)");
        let [arr, idx, v] = args else { return Err(self.err(span, usage)) };
        let rop = match op {
            "add" => Reduction::Sum,
            "max" => Reduction::Max,
            "min" => Reduction::Min,
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
        self.atomic_update(&target, rop, v, false, false)
    }

    /// `target op= value` atomically (`neg`: `-=`; `skip_nan`: a float max/min that
    /// ignores a NaN value, as builtin `max(t, v)` does).
    pub(super) fn atomic_update(&mut self, target: &Expr, op: Reduction, value: &Expr, neg: bool, skip_nan: bool) -> DResult<()> {
        let ExprKind::Subscript { value: arr, indices } = &target.kind else {
            return Err(self.err(target.span, "atomic updates need an array element target like `s[0]`"));
        };
        if op == Reduction::Prod {
            let t = self
                .file
                .text()
                .get(target.span.start..target.span.end)
                .unwrap_or("a[i]")
                .to_string();
            return Err(self
                .err(target.span.to(value.span), format!("`{t} *= ...` cannot be an atomic update: neither back end has an atomic multiply"))
                .with_note("help: multiply into a scalar (`p = 1.0` before the loop, `p *= v` in it: a reduction), then update the element once after the loop"));
        }
        let (m, dt, idx, ok) = self.element_ref(arr, indices, target.span)?;
        if dt.bits() < 32 && dt != DType::Bool || (dt.is_unsigned() && matches!(op, Reduction::Max | Reduction::Min)) {
            return Err(self
                .err(
                    target.span,
                    format!("an atomic {} of a {dt} element is not supported yet", op.name()),
                )
                .with_note("help: accumulate into an int32, int64 or uint64 array (`.astype(...)` before the call)"));
        }
        let v = self.expr(value)?;
        let V::S(x, t) = v else {
            return Err(self.err(value.span, "atomic update value must be a scalar"));
        };
        if op == Reduction::Sum && !dt.is_float() && t.is_float() {
            // Python converts each new value `a[i] + v` to the integer dtype: the
            // result depends on the order of the updates, and an atomic update of
            // `int(v)` is another sum.
            return Err(self
                .err(
                    value.span,
                    format!(
                        "an atomic update of an `{}` element by a float value: Python stores `int(element + value)` each time, which no atomic update computes",
                        dt.numpy()
                    ),
                )
                .with_note("help: convert the value first (`int(...)`), or update a float array"));
        }
        if dt.is_float() {
            self.float_use(x);
        }
        let mut x = self.b.cast(x, t, STy::strong(dt));
        if neg {
            x = self.negate(x, dt);
        }
        let kind = match (op, skip_nan && dt.is_float()) {
            (Reduction::Max, true) => appy_ir::attrs::AtomicKind::Maxnumf.attr(),
            (Reduction::Min, true) => appy_ir::attrs::AtomicKind::Minnumf.attr(),
            _ => op.atomic_kind(dt.is_float()).attr(),
        };
        let mut ops = vec![x, m];
        ops.extend(idx);
        self.set_loc(target.span);
        self.guarded(ok, |me| {
            me.b.op1("memref.atomic_rmw", &ops, dt.mlir(), &[("kind", kind)]);
        });
        Ok(())
    }

    /// The integer value of `v` if the builder created it as a constant.
    pub(super) fn const_of(&self, v: Value) -> Option<i64> {
        self.b.const_int_of(v)
    }

    pub(super) fn negate(&mut self, x: Value, dt: DType) -> Value {
        if dt.is_float() {
            let ty = dt.mlir().to_string();
            self.b.op1("arith.negf", &[x], &ty, &[])
        } else if let Some(k) = self.const_of(x).and_then(i64::checked_neg) {
            // A negative literal (`-1`) stays a constant (the range checks read it).
            self.b.int(k, dt.mlir())
        } else {
            let z = self.b.int(0, dt.mlir());
            self.b.bin("arith.subi", z, x)
        }
    }
}

/// The arrays that `transform(privatize(...))` clauses in `body` name.
fn privatized_names(body: &[Stmt]) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    for s in body {
        if let Some(PragmaKind::ParallelFor { transforms, .. }) = s.pragma.as_ref().map(|p| &p.kind) {
            for t in transforms {
                if t.kind == crate::ast::TransformKind::Privatize {
                    out.insert(t.var.name.clone());
                }
            }
        }
        match &s.kind {
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => out.extend(privatized_names(body)),
            StmtKind::If { then, orelse, .. } => {
                out.extend(privatized_names(then));
                out.extend(privatized_names(orelse));
            }
            _ => {}
        }
    }
    out
}
