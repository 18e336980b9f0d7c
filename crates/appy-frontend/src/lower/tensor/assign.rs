//! Tensor statements: the target, unification of dimensions, the pragma, `appy.assign`.

use super::*;

impl Lower<'_> {
    /// Lowers a tensor statement to `appy.assign`.
    pub(in crate::lower) fn tensor_stmt(&mut self, s: &Stmt) -> DResult<()> {
        let (target, aug, value) = match &s.kind {
            StmtKind::Assign { targets, value } => {
                let [t] = targets.as_slice() else {
                    return Err(self.err(s.span, "a tensor statement needs a single target"));
                };
                (t, None, value)
            }
            StmtKind::AugAssign { target, op, value } => (target, Some(*op), value),
            _ => unreachable!("tensor statements are assignments"),
        };
        let target = match &target.kind {
            ExprKind::Subscript { .. } => TTarget::Array(target),
            ExprKind::Name(n) => match self.lookup(n).cloned() {
                // `B *= alpha`, `b += c` with arrays: the whole array is updated in place.
                Some(Binding::Val(ref v @ (V::Arr(..) | V::View(_)))) if aug.is_some() => {
                    TTarget::Whole(self.view_of(v).expect("an array"), target.span)
                }
                _ => TTarget::Scalar(target),
            },
            _ => return Err(self.err(target.span, "the target of a tensor statement must be an array slice or a variable")),
        };
        self.tensor_assign(target, aug, value, s.pragma.as_ref(), s.span).map(|_| ())
    }

    /// Computes an array-valued expression into a new array (`C = A + B`,
    /// `return x[:N] + alpha`), allocated here: only at the function's top level.
    pub(in crate::lower) fn new_array(&mut self, value: &Expr) -> DResult<V> {
        self.new_array_with(value, None)
    }

    /// [`Self::new_array`] with a tensor pragma for the statement that computes it.
    pub(in crate::lower) fn new_array_with(&mut self, value: &Expr, pragma: Option<&Pragma>) -> DResult<V> {
        if self.scopes.len() != 1 || self.b.depth() != 1 {
            return Err(self
                .err(
                    value.span,
                    "this array expression makes a new array, and appy allocates arrays only at the top level of the function (outside loops and conditionals)",
                )
                .with_note("help: allocate the result before the loop (e.g. `t = np.empty_like(a)`) and write into it: `t[:] = ...`"));
        }
        match self.tensor_assign(TTarget::New, None, value, pragma, value.span)? {
            Some(v) => Ok(v),
            None => Err(self.err(value.span, "expected an array expression")),
        }
    }

    /// The value of an array-valued expression where a value is needed: a view for a
    /// plain view (`a[1:]`, `A.T`), the new array of an allocation, a scalar for a rank-0
    /// result (`np.sum(a)`), else a new array holding the result.
    pub(in crate::lower) fn array_value(&mut self, e: &Expr) -> DResult<V> {
        if self.is_view_expr(e) {
            return self.view_value(e);
        }
        if let ExprKind::Call { func, args, kwargs } = &e.kind
            && let Some((f, None)) = self.callee(func)
            && matches!(
                f.rule,
                crate::sema::catalog::Rule::Alloc { .. } | crate::sema::catalog::Rule::Like(_)
            )
        {
            let name = qualify(&self.imports, func).unwrap_or_default().replace("numpy.", "np.");
            return self.alloc_array(f.rule, &name, args, kwargs, e.span);
        }
        match self.arank(e) {
            Some(0) => self.array_scalar(e),
            Some(_) => self.new_array(e),
            None => self.expr(e),
        }
    }

    /// A plain view expression as a view (no data is copied).
    fn view_value(&mut self, e: &Expr) -> DResult<V> {
        match &e.kind {
            ExprKind::Name(n) => match self.lookup(n).cloned() {
                Some(Binding::Val(v)) => Ok(v),
                _ => Err(self.err(e.span, format!("undefined name `{n}`"))),
            },
            ExprKind::Subscript { value, indices } => {
                let base = self.view_value(value)?;
                let view = self.view_of(&base).expect("a view expression is an array");
                let sub = self.subview(&view, indices, e.span)?;
                Ok(V::View(Box::new(sub)))
            }
            ExprKind::Attribute { value, .. } => {
                let base = self.view_value(value)?;
                let view = self.view_of(&base).expect("a view expression is an array");
                Ok(V::View(Box::new(Self::transposed(&view))))
            }
            ExprKind::Call { args, .. } => {
                let base = self.view_value(&args[0])?;
                let view = self.view_of(&base).expect("a view expression is an array");
                Ok(V::View(Box::new(Self::transposed(&view))))
            }
            _ => unreachable!("not a view expression"),
        }
    }

    /// A new array holding the values of an array value (a view returned from the
    /// function, `a.copy()`).
    pub(in crate::lower) fn copy_value(&mut self, v: V, span: Span) -> DResult<V> {
        let name = format!("_appy_v{}", self.fresh());
        self.bind(&name, Binding::Val(v));
        let e = Expr {
            kind: ExprKind::Unary {
                op: UnaryOp::Pos,
                operand: Box::new(Expr {
                    kind: ExprKind::Name(name),
                    span,
                }),
            },
            span,
        };
        self.new_array(&e)
    }

    /// Computes a rank-0 array expression (`np.sum(a)`, `x.max()`) into a scalar.
    pub(in crate::lower) fn array_scalar(&mut self, value: &Expr) -> DResult<V> {
        let name = format!("_appy_s{}", self.fresh());
        let target = Expr {
            kind: ExprKind::Name(name.clone()),
            span: value.span,
        };
        self.tensor_assign(TTarget::Scalar(&target), None, value, None, value.span)?;
        let Some(Binding::Slot(slot, t)) = self.lookup(&name).cloned() else {
            return Err(self.err(value.span, "expected a scalar result"));
        };
        Ok(V::S(self.b.load(slot, &[]), t))
    }

    /// Lowers `target (aug)= value` with the tensor pragma `pragma`; returns the new
    /// array for a [`TTarget::New`] target.
    pub(in crate::lower) fn tensor_assign(
        &mut self,
        target: TTarget<'_>,
        aug: Option<BinOp>,
        value: &Expr,
        pragma: Option<&Pragma>,
        span: Span,
    ) -> DResult<Option<V>> {
        if self.scopes.iter().any(|sc| sc.kind == ScopeKind::Simd) {
            return Err(self
                .err(span, "tensor statements are not supported inside a simd loop")
                .with_note("help: write the statement in the parallel loop's body, or index element by element"));
        }
        self.set_loc(span);
        self.b.begin();
        let r = self.tensor_stmt_ops(target, aug, value, pragma, span);
        let ops = self.b.end();
        let (fix, post) = r?;
        for mut op in ops {
            if let Some(a) = op.results.first().and_then(|v| fix.get(v)) {
                op.set_attr("dims", a.clone());
            }
            self.b.push(op);
        }
        match post {
            Post::None => Ok(None),
            Post::Scalar(n, slot, t, span) => {
                let x = self.b.load(slot, &[]);
                self.assign_scalar(&n, x, t, span)?;
                Ok(None)
            }
            Post::New(v) => Ok(Some(v)),
        }
    }

    /// The ops of a tensor statement; returns the `dims` attribute of each view and
    /// reduce (known after unification), and what to do afterwards.
    pub(in crate::lower) fn tensor_stmt_ops(
        &mut self,
        target: TTarget<'_>,
        aug: Option<BinOp>,
        value: &Expr,
        pragma: Option<&Pragma>,
        span: Span,
    ) -> DResult<(HashMap<Value, String>, Post)> {
        let in_worker = self.seq_worker > 0 || self.scopes.iter().any(|sc| sc.kind == ScopeKind::Parallel);
        let atomic = matches!(pragma.map(|p| &p.kind), Some(PragmaKind::Atomic));
        let mut st = TStmt::default();
        // The target: an array slice (its dimensions come first) or a scalar variable.
        let mut tarr: Option<Sliced> = None;
        let mut tname: Option<(String, Span)> = None;
        let mut target_expr: Option<&Expr> = None;
        let new = matches!(target, TTarget::New);
        match target {
            TTarget::Array(t) => {
                let ExprKind::Subscript { value: arr, indices } = &t.kind else {
                    unreachable!("array targets are subscripts")
                };
                if indices.iter().any(|i| matches!(i, Index::NewAxis(_))) {
                    return Err(self.err(t.span, "`None` (a new axis) cannot appear in an assignment target"));
                }
                tarr = Some(self.slice_axes(&mut st, arr, indices, t.span)?);
                target_expr = Some(t);
            }
            TTarget::Whole(view, sp) => {
                tarr = Some(self.slice_view(&mut st, &view, &[], sp)?);
            }
            TTarget::Scalar(t) => {
                let ExprKind::Name(n) = &t.kind else {
                    unreachable!("scalar targets are names")
                };
                if aug.is_some() && self.lookup(n).is_none() {
                    return Err(self.err(t.span, format!("undefined name `{n}`")));
                }
                tname = Some((n.clone(), t.span));
                target_expr = Some(t);
            }
            TTarget::New => {}
        }
        // The value.
        let mut v = self.texpr(&mut st, value)?;
        match (aug, atomic) {
            (Some(op), true) => {
                if !matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul) || tarr.is_none() {
                    return Err(self.err(span, "`#pragma atomic` supports `+=`, `-=` and `*=` on array slices"));
                }
                if op == BinOp::Sub {
                    v = self.lift(&mut st, value.span, vec![v], |n| Expr {
                        kind: ExprKind::Unary {
                            op: UnaryOp::Neg,
                            operand: Box::new(n.into_iter().next().expect("one")),
                        },
                        span: value.span,
                    })?;
                }
            }
            (Some(op), false) => {
                let cur = match &tarr {
                    Some(t) => {
                        let t = t.clone();
                        let tv = self.push_view(&mut st, t.m, t.dt, &t.dims, &t.ops, &t.steps);
                        let elem = t.elem();
                        TV::T(Tensor {
                            v: tv,
                            axes: t.axes,
                            t: elem,
                        })
                    }
                    None => {
                        let t = target_expr.expect("a scalar target");
                        let (x, ty) = self.scalar(t)?;
                        TV::S(x, ty)
                    }
                };
                v = self.lift(&mut st, span, vec![cur, v], binary_of(op, span))?;
            }
            (None, true) => {
                return Err(self.err(
                    span,
                    "`#pragma atomic` on a tensor statement needs an update like `a[i, :N] += x[:N]`",
                ));
            }
            (None, false) => {}
        }
        // A new array takes the value's shape and element type.
        if new {
            let TV::T(t) = &v else {
                return Err(self.err(value.span, "expected an array expression"));
            };
            let (axes, elem) = (t.axes.clone(), t.t);
            tarr = Some(self.alloc_for(&mut st, &axes, elem.dt));
        }
        // Broadcast the value into the target.
        let taxes: Vec<Ax> = tarr.as_ref().map(|t| t.axes.clone()).unwrap_or_default();
        if let TV::T(t) = &v {
            let extra = t.axes.len().saturating_sub(taxes.len());
            if t.axes[..extra].iter().any(|a| matches!(a, Ax::D(_))) {
                let what = if taxes.is_empty() {
                    "a scalar variable".to_string()
                } else {
                    format!("a {}-dimensional target", taxes.len())
                };
                let mut d = self.err(
                    value.span,
                    format!("shape mismatch: assigning a {}-dimensional value to {what}", t.axes.len()),
                );
                if taxes.is_empty() {
                    d = d.with_note("help: reduce it with sum/max/min, or assign it to an array slice");
                }
                return Err(d);
            }
            let n = t.axes.len() - extra;
            for (a, b) in t.axes[extra..].iter().zip(&taxes[taxes.len() - n..]) {
                if let (Ax::D(p), Ax::D(q)) = (a, b) {
                    st.union(*p, *q);
                }
            }
        }
        let vt = match &v {
            TV::S(_, t) => *t,
            TV::T(t) => t.t,
        };
        // Convert to the target's element type.
        let (tmem, tdims, tops, tsteps, post) = match tarr {
            Some(t) => {
                let want = t.elem();
                if vt != want {
                    v = match v {
                        TV::S(x, t) => TV::S(self.b.cast(x, t, want), want),
                        t => self.tcast(&mut st, value.span, t, want)?,
                    };
                }
                let post = if new {
                    Post::New(V::Arr(t.m, t.dt, t.dims.len()))
                } else {
                    Post::None
                };
                (t.m, t.dims, t.ops, t.steps, post)
            }
            None => {
                let slot = self.new_slot(vt);
                let (n, sp) = tname.expect("a scalar target");
                (slot, vec![], vec![], vec![], Post::Scalar(n, slot, vt, sp))
            }
        };
        // Dimensions: dense ids in order of first appearance (target first).
        let nn = st.parent.len();
        let mut dense: HashMap<usize, usize> = HashMap::new();
        let mut exts = vec![];
        let mut names: Vec<String> = vec![];
        let mut first_span: Vec<Span> = vec![];
        // The target's dimensions first (a new array's come from its value).
        let firsts: Vec<usize> = tdims.iter().flatten().copied().chain(0..nn).collect();
        for n in firsts {
            let r = st.find(n);
            if let std::collections::hash_map::Entry::Vacant(e) = dense.entry(r) {
                e.insert(exts.len());
                exts.push(st.ext[r]);
                names.push(st.text[r].clone());
                first_span.push(st.span[r]);
            }
        }
        let did = |st: &mut TStmt, n: usize| -> usize { dense[&st.find(n)] };
        // Dimensions of every tensor value, and its type.
        let mut vdims: HashMap<Value, Vec<usize>> = HashMap::new();
        let made = std::mem::take(&mut st.made);
        let mut fix: HashMap<Value, String> = HashMap::new();
        let mut reductions: Vec<(Vec<usize>, &'static str)> = vec![];
        let mut partial: Vec<(Vec<usize>, Span)> = vec![];
        for (v, how, elem) in &made {
            let mut ds: Vec<usize> = match how {
                Made::View(nodes) => {
                    let dd: Vec<i64> = nodes
                        .iter()
                        .map(|&n| if n == usize::MAX { -1 } else { did(&mut st, n) as i64 })
                        .collect();
                    fix.insert(*v, i64_array(&dd));
                    dd.into_iter().filter(|d| *d >= 0).map(|d| d as usize).collect()
                }
                Made::Ew(ins) => ins.iter().flat_map(|i| vdims.get(i).cloned().unwrap_or_default()).collect(),
                Made::Reduce(i, nodes, kind, rspan) => {
                    let mut red: Vec<usize> = nodes.iter().map(|&n| did(&mut st, n)).collect();
                    red.sort_unstable();
                    red.dedup();
                    fix.insert(*v, i64_array(&red.iter().map(|x| *x as i64).collect::<Vec<_>>()));
                    reductions.push((red.clone(), kind));
                    let rest: Vec<usize> = vdims
                        .get(i)
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|d| !red.contains(d))
                        .collect();
                    partial.push((rest.clone(), *rspan));
                    rest
                }
            };
            ds.sort_unstable();
            ds.dedup();
            self.b.m.types[v.0 as usize] = format!("tensor<{}{elem}>", "?x".repeat(ds.len()));
            vdims.insert(*v, ds);
        }
        let tdense: Vec<i64> = tdims.iter().map(|d| d.map(|n| did(&mut st, n) as i64).unwrap_or(-1)).collect();
        let kept: Vec<usize> = tdense.iter().filter(|d| **d >= 0).map(|d| *d as usize).collect();
        // Inside a worker, a reduction that keeps some dimensions but not exactly the
        // target's would need a temporary array per worker (appy-tensor-fuse).
        if in_worker {
            let mut ks = kept.clone();
            ks.sort_unstable();
            for (rest, sp) in &partial {
                let mut r = rest.clone();
                r.sort_unstable();
                r.dedup();
                if !r.is_empty() && r != ks {
                    return Err(self
                        .err(
                            *sp,
                            "inside a parallel loop, a reduction that keeps some dimensions must be the whole value of its statement",
                        )
                        .with_note(
                            "help: assign it to an array slice first, e.g. `t[i, :N] = np.sum(A[i, :N, :K], axis=1)`, then use `t[i, :N]`",
                        ));
                }
            }
        }
        for (red, _) in &reductions {
            if let Some(d) = red.iter().find(|d| kept.contains(d)) {
                return Err(self.err(span, format!("dimension `{}` is both reduced and assigned", names[*d])));
            }
        }
        // The pragma: loop order and per-dimension properties.
        let k = exts.len();
        let mut order: Vec<usize> = vec![];
        let mut par = vec![false; k];
        let mut simd = vec![false; k];
        let mut le = vec![0i64; k];
        if let Some(Pragma {
            kind: PragmaKind::Tensor(entries),
            ..
        }) = pragma
        {
            for ent in entries {
                let txt = {
                    let (lo, hi) = ent.text.split_once(':').unwrap_or(("", &ent.text));
                    norm_slice(lo, hi)
                };
                let hits: Vec<usize> = (0..nn).filter(|&n| st.text[n] == txt).collect();
                let Some(&h) = hits.first() else {
                    let all: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                    return Err(self
                        .err(
                            ent.span,
                            format!("the pragma names the slice `{}`, which does not appear in this statement", ent.text),
                        )
                        .with_note(format!("the statement's dimensions are {}", all.join(", "))));
                };
                // A slice text shared by several dimensions (`1:N-1` on every axis of a
                // cube) names them in order: the first entry the first such dimension.
                let mut cands: Vec<usize> = hits.iter().map(|&x| did(&mut st, x)).collect();
                cands.sort_unstable();
                cands.dedup();
                let _ = h;
                let Some(d) = cands.iter().copied().find(|c| !order.contains(c)) else {
                    return Err(self.err(ent.span, format!("dimension `{}` is named twice in the pragma", ent.text)));
                };
                order.push(d);
                for p in &ent.props {
                    match p {
                        TensorProp::Parallel => par[d] = true,
                        TensorProp::Simd => simd[d] = true,
                        TensorProp::Le(c) => le[d] = *c,
                        TensorProp::Reduce { op, var } => {
                            if kept.contains(&d) {
                                return Err(self
                                    .err(ent.span, format!("dimension `{}` is not reduced in this statement", ent.text))
                                    .with_note("help: `reduce(op:var)` marks a dimension that a sum/max/min or a matrix product removes"));
                            }
                            let tn = match target_expr.map(|t| &t.kind) {
                                Some(ExprKind::Subscript { value, .. }) => self.src(value.span),
                                Some(_) => self.src(target_expr.expect("a target").span),
                                None => String::new(),
                            };
                            if var.name != tn.trim() {
                                return Err(self.err(
                                    var.span,
                                    format!(
                                        "the reduction variable `{}` is not the statement's target `{}`",
                                        var.name,
                                        tn.trim()
                                    ),
                                ));
                            }
                            let canon = match op.as_str() {
                                "+" | "sum" => "sum",
                                "*" | "prod" => "prod",
                                o => o,
                            };
                            if let Some((_, kind)) = reductions.iter().find(|(r, kind)| r.contains(&d) && *kind != canon) {
                                return Err(self.err(
                                    ent.span,
                                    format!("`reduce({op}:{})` does not match the statement's `{kind}` reduction", var.name),
                                ));
                            }
                        }
                    }
                }
            }
            // A dimension that is not named but shares its slice text with a named one
            // (`:N` kept and `:N` inside `np.sum(..., axis=1)`) takes its properties;
            // a reduced one goes innermost.
            for d in 0..k {
                if order.contains(&d) {
                    continue;
                }
                let Some(&src) = order.iter().find(|o| names[**o] == names[d]) else {
                    continue;
                };
                par[d] = par[src];
                simd[d] = simd[src];
                le[d] = le[src];
                if kept.contains(&d) {
                    let at = order.iter().position(|o| *o == src).expect("named") + 1;
                    order.insert(at, d);
                } else {
                    order.push(d);
                }
            }
            if let Some(d) = (0..k).find(|d| !order.contains(d)) {
                return Err(self
                    .err(
                        first_span[d],
                        format!("dimension `{}` of this statement is missing from the tensor pragma", names[d]),
                    )
                    .with_note("help: name every distinct slice of the statement in the pragma, e.g. `#pragma :M=>parallel :N=>simd`"));
            }
            if self.auto_simd
                && let Some(&last) = order.last()
            {
                simd[last] = true;
            }
        } else {
            if pragma.is_some() && !atomic {
                return Err(self.err(span, "this pragma cannot annotate a tensor statement"));
            }
            // Defaults: outside parallel loops the first dimension is parallel; the last
            // dimension is simd. An element-wise statement (nothing reduced) has every
            // dimension parallel: its elements are independent, so the strips of a long
            // last dimension are workers too, and a few long rows still fill the GPU
            // (as `#pragma :M=>parallel :N=>parallel` asks).
            order = (0..k).collect();
            if let Some(&last) = order.last() {
                simd[last] = true;
            }
            if !in_worker && let Some(&first) = order.first() {
                par[first] = true;
                if reductions.is_empty() {
                    par.iter_mut().for_each(|p| *p = true);
                }
            }
        }
        if in_worker {
            // Inside a worker every dimension runs within the worker: `parallel` (a
            // permission, not a demand) becomes simd.
            for d in 0..k {
                if par[d] {
                    par[d] = false;
                    simd[d] = true;
                }
            }
        }
        let vval = match &v {
            TV::S(x, _) => *x,
            TV::T(t) => t.v,
        };
        let bools = |xs: &[bool]| i64_array(&xs.iter().map(|b| *b as i64).collect::<Vec<_>>());
        let mut op = Op::new("appy.assign").with_operands([tmem, vval].into_iter().chain(tops.iter().copied()).chain(exts.iter().copied()));
        op.set_attr("operandSegmentSizes", format!("array<i32: 1, 1, {}, {}>", tops.len(), k));
        op.set_attr("dims", i64_array(&tdense));
        if tsteps.iter().any(|s| *s != 1) {
            op.set_attr("steps", i64_array(&tsteps));
        }
        op.set_attr("order", i64_array(&order.iter().map(|d| *d as i64).collect::<Vec<_>>()));
        op.set_attr("parallel", bools(&par));
        op.set_attr("simd", bools(&simd));
        op.set_attr("le", i64_array(&le));
        op.set_attr(
            "names",
            format!("[{}]", names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")),
        );
        if atomic && let Some(bop) = aug {
            let rop = if bop == BinOp::Mul { Reduction::Prod } else { Reduction::Sum };
            let dt = match &v {
                TV::S(_, t) => t.dt,
                TV::T(t) => t.t.dt,
            };
            if dt.bits() < 32 && dt != DType::Bool {
                return Err(self
                    .err(span, format!("an atomic update of {dt} elements is not supported yet"))
                    .with_note("help: accumulate into an int32, int64 or uint64 array"));
            }
            op.set_attr("atomic", rop.atomic_kind(dt.is_float()).attr());
        }
        self.set_loc(span);
        self.b.push(op);
        Ok((fix, post))
    }
}

/// `array<i64: a, b>` (or `array<i64>` when empty).
pub(crate) fn i64_array(xs: &[i64]) -> String {
    if xs.is_empty() {
        "array<i64>".into()
    } else {
        format!("array<i64: {}>", xs.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "))
    }
}
