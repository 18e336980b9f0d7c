//! Tensor expressions: element-wise ops (lifted scalar ops), reductions, contractions,
//! and calls.

use super::*;

impl Lower<'_> {
    /// Lowers `rebuild(names)` on scalars bound to `kids` (placeholders for tensors) and
    /// lifts every op that depends on a tensor to `appy.ew`.
    pub(in crate::lower) fn lift(
        &mut self,
        st: &mut TStmt,
        span: Span,
        kids: Vec<TV>,
        rebuild: impl FnOnce(Vec<Expr>) -> Expr,
    ) -> DResult<TV> {
        self.lift_with(st, span, kids, |this, n| this.expr(&rebuild(n)))
    }

    /// A cast of every element to `want`.
    pub(in crate::lower) fn tcast(&mut self, st: &mut TStmt, span: Span, x: TV, want: STy) -> DResult<TV> {
        self.lift_with(st, span, vec![x], |this, n| {
            let (x, t) = this.scalar(&n[0])?;
            Ok(V::S(this.b.cast(x, t, want), want))
        })
    }

    pub(in crate::lower) fn lift_with(
        &mut self,
        st: &mut TStmt,
        span: Span,
        kids: Vec<TV>,
        build: impl FnOnce(&mut Self, Vec<Expr>) -> DResult<V>,
    ) -> DResult<TV> {
        let mut axes: Vec<Ax> = vec![];
        for k in &kids {
            if let TV::T(t) = k {
                axes = st.broadcast(&axes, &t.axes);
            }
        }
        let mut names = vec![];
        let mut tmap: HashMap<Value, Value> = HashMap::new();
        for k in kids {
            let n = format!("_appy_e{}", self.fresh());
            let (x, t) = match k {
                TV::S(v, t) => (v, t),
                TV::T(tn) => {
                    let p = self.b.m.value(tn.t.mlir());
                    tmap.insert(p, tn.v);
                    (p, tn.t)
                }
            };
            self.bind(&n, Binding::Val(V::S(x, t)));
            names.push(Expr {
                kind: ExprKind::Name(n),
                span,
            });
        }
        self.b.begin();
        // Element-wise ops have no regions: no status reports (see `guarded_int_div`).
        let quiet = std::mem::replace(&mut self.no_status_reports, true);
        let r = build(self, names);
        self.no_status_reports = quiet;
        let ops = self.b.end();
        let (x, t) = match r? {
            V::S(x, t) => (x, t),
            _ => return Err(self.err(span, "expected an element-wise expression")),
        };
        for mut op in ops {
            let uses = op.operands.iter().any(|o| tmap.contains_key(o)) || op.free_values().iter().any(|o| tmap.contains_key(o));
            if !uses {
                self.b.push(op);
                continue;
            }
            if !op.regions.is_empty() || op.results.len() != 1 || op.operands.is_empty() || op.operands.len() > 3 {
                return Err(self.err(span, "this operation cannot be applied element-wise in a tensor expression"));
            }
            let elem = self.b.m.ty(op.results[0]).to_string();
            let nv = self.b.m.value("tensor<*xf64>");
            let inputs: Vec<Value> = op.operands.iter().map(|o| *tmap.get(o).unwrap_or(o)).collect();
            let tins: Vec<Value> = op.operands.iter().filter_map(|o| tmap.get(o).copied()).collect();
            tmap.insert(op.results[0], nv);
            let n = op.operands.len();
            let mut attrs = vec![
                ("op".to_string(), format!("\"{}\"", op.name)),
                (
                    "operandSegmentSizes".to_string(),
                    format!("array<i32: 1, {}, {}>", (n > 1) as i32, (n > 2) as i32),
                ),
            ];
            attrs.append(&mut op.attrs);
            let mut ew = Op::new("appy.ew").with_operands(inputs).with_results([nv]).with_loc(op.loc.clone());
            ew.attrs = attrs;
            self.b.push(ew);
            st.made.push((nv, Made::Ew(tins), elem));
        }
        Ok(match tmap.get(&x) {
            Some(v) => TV::T(Tensor { v: *v, axes, t }),
            None => TV::S(x, t),
        })
    }

    pub(in crate::lower) fn treduce(&mut self, st: &mut TStmt, x: Tensor, which: &[usize], op: Reduction, span: Span) -> DResult<TV> {
        if x.t.dt.half().is_some() {
            // Accumulated in float32 (`types::accumulator`), rounded back once.
            let t = x.t;
            let r = self.treduce_signed(st, x, which, op, span)?;
            return self.tcast(st, span, r, t);
        }
        if x.t.dt.is_int() && x.t.dt.bits() < 32 && matches!(op, Reduction::Max | Reduction::Min) {
            // 8- and 16-bit integers are compared as int32 (widening keeps their order,
            // unsigned ones included; GPU lanes combine 32-bit words), then narrowed.
            let t = x.t;
            let TV::T(wide) = self.tcast(st, span, TV::T(x), STy::strong(DType::I32))? else {
                unreachable!("a cast of a tensor is a tensor")
            };
            let r = self.treduce_signed(st, wide, which, op, span)?;
            return self.tcast(st, span, r, t);
        }
        if !(x.t.dt.is_unsigned() && matches!(op, Reduction::Max | Reduction::Min)) {
            return self.treduce_signed(st, x, which, op, span);
        }
        // The combiners compare signed: flipping the top bit maps the unsigned order to
        // the signed one, and flipping it back after the reduction restores the values.
        let flip = |this: &mut Self, n: Vec<Expr>| -> DResult<V> {
            let (v, t) = this.scalar(&n[0])?;
            let k = this.b.int(t.dt.signed_min(), t.mlir());
            Ok(V::S(this.b.bin("arith.xori", v, k), t))
        };
        let TV::T(biased) = self.lift_with(st, span, vec![TV::T(x)], flip)? else {
            unreachable!("a map of a tensor is a tensor")
        };
        let r = self.treduce_signed(st, biased, which, op, span)?;
        self.lift_with(st, span, vec![r], flip)
    }

    fn treduce_signed(&mut self, st: &mut TStmt, x: Tensor, which: &[usize], op: Reduction, span: Span) -> DResult<TV> {
        // Sums of booleans and integers are int64 (NumPy).
        let mut x = x;
        let want = types::accumulator(op, x.t);
        if want != x.t {
            let TV::T(c) = self.tcast(st, span, TV::T(x.clone()), want)? else {
                unreachable!("a cast of a tensor is a tensor")
            };
            x = c;
        }
        let nodes: Vec<usize> = which
            .iter()
            .filter_map(|&a| match x.axes[a] {
                Ax::D(n) => Some(n),
                Ax::One => None,
            })
            .collect();
        let axes: Vec<Ax> = x
            .axes
            .iter()
            .enumerate()
            .filter(|(i, _)| !which.contains(i))
            .map(|(_, a)| *a)
            .collect();
        if nodes.is_empty() {
            return Ok(TV::T(Tensor { v: x.v, axes, t: x.t }));
        }
        let kind = op.name();
        let v = self.b.m.value("tensor<*xf64>");
        let mut r = Op::new("appy.reduce").with_operands([x.v]).with_results([v]);
        r.set_attr("kind", format!("\"{kind}\""));
        self.set_loc(span);
        self.b.push(r);
        st.made.push((v, Made::Reduce(x.v, nodes, kind, span), x.t.mlir().to_string()));
        Ok(TV::T(Tensor { v, axes, t: x.t }))
    }

    /// `a @ b` / `np.dot(a, b)` / `mv(a, b)` on tensors of rank ≤ 2: a product over the
    /// shared dimension, reduced.
    pub(in crate::lower) fn contract(&mut self, st: &mut TStmt, a: TV, b: TV, span: Span) -> DResult<TV> {
        let (TV::T(mut a), TV::T(mut b)) = (a, b) else {
            return Err(self.err(span, "matrix products need two tensor operands in sliced index notation"));
        };
        let (ra, rb) = (a.axes.len(), b.axes.len());
        if ra == 0 || rb == 0 || ra > 2 || rb > 2 {
            return Err(self.err(span, "matrix products are supported for 1- and 2-dimensional operands"));
        }
        // Align a's last axis with b's first: a (.., K, 1?) * b (1?, K, ..).
        let reduce_at = ra - 1;
        if rb == 2 {
            a.axes.push(Ax::One);
        }
        if ra == 2 && rb == 1 {
            // (M, K) * (K) broadcasts as is.
        } else if ra == 2 && rb == 2 {
            b.axes.insert(0, Ax::One);
        }
        // NumPy's dot keeps the operands' type: 16-bit floats multiply and sum in
        // float32 and round once; integers sum in their own width (the wide sum
        // truncated is the same); bools give whether some pair is true.
        let want = types::dot_result(a.t, b.t);
        let (a, b) = if want.dt.half().is_some() {
            let f32 = STy::strong(DType::F32);
            (self.tcast(st, span, TV::T(a), f32)?, self.tcast(st, span, TV::T(b), f32)?)
        } else {
            (TV::T(a), TV::T(b))
        };
        let p = self.lift(st, span, vec![a, b], binary_of(BinOp::Mul, span))?;
        let TV::T(p) = p else {
            unreachable!("a product of tensors is a tensor")
        };
        let r = self.treduce(st, p, &[reduce_at], Reduction::Sum, span)?;
        let rt = match &r {
            TV::T(t) => t.t,
            TV::S(_, t) => *t,
        };
        if rt != want { self.tcast(st, span, r, want) } else { Ok(r) }
    }

    pub(in crate::lower) fn texpr(&mut self, st: &mut TStmt, e: &Expr) -> DResult<TV> {
        if self.arank(e).is_none() && !has_slices(e) {
            let (v, t) = self.scalar(e)?;
            return Ok(TV::S(v, t));
        }
        // A plain view (`A`, `a[1:]`, `A[i]`, `A.T`) is an operand.
        if self.is_view_expr(e) {
            return match &e.kind {
                ExprKind::Subscript { value, indices } if self.is_view_expr(value) => Ok(TV::T(self.tview(st, value, indices, e.span)?)),
                _ => {
                    let v = self.expr(e)?;
                    let view = self.view_of(&v).expect("a view expression is an array");
                    let s = self.slice_view(st, &view, &[], e.span)?;
                    Ok(TV::T(self.sliced_tensor(st, s)))
                }
            };
        }
        let span = e.span;
        match &e.kind {
            ExprKind::Subscript { value, indices } if !self.is_view_expr(value) => {
                // `sum(A[:M, :N], axis=1)[:, None]`: `:` keeps an axis, `None` adds one.
                let TV::T(mut t) = self.texpr(st, value)? else {
                    return Err(self.err(value.span, "expected a tensor"));
                };
                let mut axes = vec![];
                let mut k = 0;
                for i in indices {
                    match i {
                        Index::NewAxis(_) => axes.push(Ax::One),
                        Index::Slice {
                            lower: None,
                            upper: None,
                            step: None,
                            ..
                        } if k < t.axes.len() => {
                            axes.push(t.axes[k]);
                            k += 1;
                        }
                        Index::Slice { span, .. } => {
                            return Err(self.err(*span, "only `:` and `None` can index the result of a tensor expression"));
                        }
                        Index::Expr(x) => {
                            return Err(self.err(x.span, "only `:` and `None` can index the result of a tensor expression"));
                        }
                    }
                }
                axes.extend_from_slice(&t.axes[k..]);
                t.axes = axes;
                Ok(TV::T(t))
            }
            ExprKind::Subscript { value, indices } => {
                if indices
                    .iter()
                    .any(|i| matches!(i, Index::Expr(x) if has_slices(x) || self.arank(x).is_some()))
                {
                    return Err(self
                        .err(e.span, "indexing with an array (fancy indexing) is not supported")
                        .with_note("help: write a loop over the indices, e.g. `for k in range(n): y[k] = x[idx[k]]`"));
                }
                Ok(TV::T(self.tview(st, value, indices, e.span)?))
            }
            ExprKind::Unary { op, operand } => {
                let k = self.texpr(st, operand)?;
                let op = *op;
                self.lift(st, span, vec![k], |n| Expr {
                    kind: ExprKind::Unary {
                        op,
                        operand: Box::new(n.into_iter().next().expect("one")),
                    },
                    span,
                })
            }
            ExprKind::Binary {
                op: BinOp::MatMul,
                lhs,
                rhs,
            } => {
                let a = self.texpr(st, lhs)?;
                let b = self.texpr(st, rhs)?;
                self.contract(st, a, b, span)
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.texpr(st, lhs)?;
                let mut b = self.texpr(st, rhs)?;
                let mut op = *op;
                // A tensor divided by a scalar: one division, then a multiplication per
                // element by the reciprocal (may differ from NumPy in the last bit; not
                // for 16-bit floats, where a rounded reciprocal is often a bit off).
                if op == BinOp::Div
                    && matches!(&a, TV::T(x) if x.t.dt.half().is_none())
                    && let TV::S(s, t) = b
                    && t.dt.half().is_none()
                {
                    let one = TV::S(self.b.float(1.0, "f64"), STy::FLOAT);
                    b = self.lift(st, span, vec![one, TV::S(s, t)], binary_of(BinOp::Div, span))?;
                    op = BinOp::Mul;
                }
                self.lift(st, span, vec![a, b], binary_of(op, span))
            }
            ExprKind::Compare { first, rest } => {
                let mut kids = vec![self.texpr(st, first)?];
                for (_, x) in rest {
                    kids.push(self.texpr(st, x)?);
                }
                let ops: Vec<CmpOp> = rest.iter().map(|(o, _)| *o).collect();
                self.lift(st, span, kids, |n| {
                    let mut it = n.into_iter();
                    let first = Box::new(it.next().expect("first"));
                    Expr {
                        kind: ExprKind::Compare {
                            first,
                            rest: ops.into_iter().zip(it).collect(),
                        },
                        span,
                    }
                })
            }
            ExprKind::Attribute { value, attr } if attr.name == "T" => match self.texpr(st, value)? {
                TV::T(mut t) => {
                    t.axes.reverse();
                    Ok(TV::T(t))
                }
                s => Ok(s),
            },
            ExprKind::Call { func, args, kwargs } => self.tcall(st, func, args, kwargs, e),
            ExprKind::BoolOp { .. } => Err(self
                .err(e.span, "`and`/`or` on tensors is ambiguous (as in NumPy)")
                .with_note("help: use `&`/`|` on comparisons, or `np.logical_and`")),
            ExprKind::IfExp { .. } => Err(self
                .err(e.span, "conditional expressions on tensors are not supported")
                .with_note("help: use `np.where(cond, a, b)`")),
            _ => Err(self.err(e.span, "unsupported tensor expression")),
        }
    }

    pub(in crate::lower) fn tcall(
        &mut self,
        st: &mut TStmt,
        func: &Expr,
        args: &[Expr],
        kwargs: &[(Ident, Expr)],
        e: &Expr,
    ) -> DResult<TV> {
        use crate::sema::catalog::Rule;
        let span = e.span;
        let Some((f, recv)) = self.callee(func) else {
            return Err(self.unsupported_call(func));
        };
        let name = match (&func.kind, recv) {
            (ExprKind::Attribute { attr, .. }, Some(_)) => format!(".{}()", attr.name),
            _ => qualify(&self.imports, func)
                .unwrap_or_default()
                .trim_start_matches("builtins.")
                .replace("numpy.", "np."),
        };
        let all: Vec<&Expr> = recv.into_iter().chain(args.iter()).collect();
        let builtin = matches!(f.rule, Rule::BuiltinSum | Rule::MaxMin { numpy: false, .. });
        let red = match f.rule {
            Rule::Reduce(op) => Some(op),
            Rule::Mean | Rule::BuiltinSum => Some(Reduction::Sum),
            Rule::MaxMin { max, numpy: false } if all.len() == 1 => Some(if max { Reduction::Max } else { Reduction::Min }),
            _ => None,
        };
        if let Some(op) = red {
            let [x] = all.as_slice() else {
                return Err(self.err(span, format!("`{name}` takes one array argument (and `axis=`)")));
            };
            let mut axis: Option<i64> = None;
            for (k, v) in kwargs {
                if k.name != "axis" || builtin {
                    return Err(self.err(k.span, format!("unsupported keyword argument `{}`", k.name)));
                }
                match const_int(v) {
                    Some(a) => axis = Some(a),
                    None if matches!(v.kind, ExprKind::None) => axis = None,
                    None => return Err(self.err(v.span, "`axis=` must be an integer literal")),
                }
            }
            let TV::T(t) = self.texpr(st, x)? else {
                return Err(self.err(x.span, "expected an array"));
            };
            let r = t.axes.len() as i64;
            let which: Vec<usize> = if builtin {
                // Python's builtins iterate over the first axis.
                if op != Reduction::Sum && r > 1 {
                    return Err(self
                        .err(span, format!("`{name}` of a {r}-dimensional array is ambiguous in Python"))
                        .with_note("help: use `np.max(x, axis=k)` / `np.min(x, axis=k)`"));
                }
                vec![0]
            } else if let Some(a) = axis {
                let a2 = if a < 0 { a + r } else { a };
                if !(0..r).contains(&a2) {
                    return Err(self.err(span, format!("axis {a} is out of range for a {r}-dimensional array")));
                }
                vec![a2 as usize]
            } else {
                (0..r as usize).collect()
            };
            let count = self.count_of(st, &t, &which);
            let mut t = t;
            let elem = t.t;
            if f.rule == Rule::Mean {
                // The mean is computed in float64 for integer input, as in NumPy.
                let want = types::mean_input(t.t);
                if want != t.t {
                    let TV::T(c) = self.tcast(st, span, TV::T(t), want)? else {
                        unreachable!("a cast of a tensor is a tensor")
                    };
                    t = c;
                }
            }
            let sum = self.treduce(st, t, &which, op, span)?;
            if f.rule != Rule::Mean {
                return Ok(sum);
            }
            let n = TV::S(count, STy::INT);
            let mean = self.lift(st, span, vec![sum, n], binary_of(BinOp::Div, span))?;
            if elem.dt.half().is_some() {
                // The mean of 16-bit floats, computed in float32, is rounded back once.
                return self.tcast(st, span, mean, elem);
            }
            return Ok(mean);
        }
        match f.rule {
            Rule::Dot => {
                let [a, b] = all.as_slice() else {
                    return Err(self.err(span, "matrix products take two arguments"));
                };
                let ta = self.texpr(st, a)?;
                let tb = self.texpr(st, b)?;
                if name.ends_with("mv") && !matches!((&ta, &tb), (TV::T(x), TV::T(y)) if x.axes.len() == 2 && y.axes.len() == 1) {
                    return Err(self.err(span, "`mv(A, x)` takes a 2-dimensional and a 1-dimensional array"));
                }
                return self.contract(st, ta, tb, span);
            }
            Rule::Transpose => {
                let [a] = all.as_slice() else {
                    return Err(self.err(span, "`transpose` takes one argument"));
                };
                return match self.texpr(st, a)? {
                    TV::T(mut t) => {
                        t.axes.reverse();
                        Ok(TV::T(t))
                    }
                    s => Ok(s),
                };
            }
            Rule::Copy => {
                let [a] = all.as_slice() else {
                    return Err(self.err(span, format!("`{name}` takes one array")));
                };
                return self.texpr(st, a);
            }
            Rule::AsType | Rule::Cast(_) => {
                let (x, dt) = match (f.rule, all.as_slice()) {
                    (Rule::AsType, [x, d]) => (*x, self.dtype_of(d)?),
                    (Rule::Cast(c), [x]) => (*x, types::cast(c).dt),
                    _ => return Err(self.err(span, format!("`{name}` takes an array and a dtype"))),
                };
                let v = self.texpr(st, x)?;
                return self.tcast(st, span, v, STy::strong(dt));
            }
            Rule::Arange => return self.arange(st, args, kwargs, span),
            Rule::Alloc { .. } | Rule::Like(_) => {
                let v = self.array_value(e)?;
                let view = self.view_of(&v).expect("an allocation is an array");
                let s = self.slice_view(st, &view, &[], span)?;
                return Ok(TV::T(self.sliced_tensor(st, s)));
            }
            Rule::Math(_) => {
                return Err(self
                    .err(span, format!("`{name}` works on scalars, not arrays"))
                    .with_note("help: use the NumPy function, e.g. `np.exp(a)`, on arrays"));
            }
            Rule::Float(_) | Rule::Same(_) | Rule::Pred(_) | Rule::Where | Rule::Clip | Rule::MaxMin { .. } => {}
            _ => return Err(self.err(span, format!("`{name}` cannot be applied to arrays"))),
        }
        if let Some((k, _)) = kwargs.first() {
            return Err(self.err(k.span, format!("keyword arguments are not supported for `{name}` on arrays")));
        }
        let mut kids = vec![];
        for a in args {
            kids.push(self.texpr(st, a)?);
        }
        let func = func.clone();
        self.lift(st, span, kids, |n| Expr {
            kind: ExprKind::Call {
                func: Box::new(func),
                args: n,
                kwargs: vec![],
            },
            span,
        })
    }

    /// The number of elements a reduction over axes `which` of `t` combines (i64).
    fn count_of(&mut self, st: &mut TStmt, t: &Tensor, which: &[usize]) -> Value {
        let mut n = self.b.int(1, "i64");
        for &a in which {
            if let Ax::D(d) = t.axes[a] {
                let r = st.find(d);
                n = self.b.bin("arith.muli", n, st.ext[r]);
            }
        }
        n
    }

    /// `np.arange([start,] stop[, step], dtype=)`.
    fn arange(&mut self, st: &mut TStmt, args: &[Expr], kwargs: &[(Ident, Expr)], span: Span) -> DResult<TV> {
        let (start, stop, step) = match args {
            [stop] => (None, stop, None),
            [start, stop] => (Some(start), stop, None),
            [start, stop, step] => (Some(start), stop, Some(step)),
            _ => return Err(self.err(span, "np.arange takes one to three positional arguments")),
        };
        let mut dtype = None;
        for (k, v) in kwargs {
            match k.name.as_str() {
                "dtype" => dtype = Some(self.dtype_of(v)?),
                "device" => {}
                _ => return Err(self.err(k.span, format!("unsupported keyword `{}` for np.arange", k.name))),
            }
        }
        let mut vals = vec![];
        for x in [start, Some(stop), step].into_iter().flatten() {
            vals.push((x, self.scalar(x)?));
        }
        let t = vals.iter().skip(1).fold(vals[0].1.1, |acc, (_, (_, t))| promote(acc, *t));
        if t.is_float() {
            return Err(self
                .err(span, "np.arange with float arguments is not supported")
                .with_note("help: use integer arguments and scale, e.g. `x0 + h * np.arange(n)`"));
        }
        let get = |k: usize, this: &mut Self| -> Value {
            let (_, (v, t)) = vals[k];
            this.b.cast(v, t, STy::INT)
        };
        let (lo, hi) = if start.is_some() {
            (get(0, self), get(1, self))
        } else {
            (self.b.int(0, "i64"), get(0, self))
        };
        let stepv = match step {
            Some(s) => match const_int(s) {
                Some(0) => return Err(self.err(s.span, "np.arange step cannot be zero")),
                Some(k) => Some(k),
                None => return Err(self.err(s.span, "the step of np.arange must be an integer constant")),
            },
            None => Some(1),
        };
        let k = stepv.unwrap_or(1);
        // count = max(0, ceil((hi - lo) / k)).
        let (a, b) = if k > 0 { (hi, lo) } else { (lo, hi) };
        let d = self.b.bin("arith.subi", a, b);
        let zero = self.b.int(0, "i64");
        let d = self.b.bin("arith.maxsi", d, zero);
        let km1 = self.b.int(k.abs() - 1, "i64");
        let ka = self.b.int(k.abs(), "i64");
        let d = self.b.bin("arith.addi", d, km1);
        let count = self.b.bin("arith.divsi", d, ka);
        let iota = self.iota(st, count, span);
        let lo_v = TV::S(lo, STy::INT);
        let kv = TV::S(self.b.int(k, "i64"), STy::INT);
        let scaled = if k == 1 {
            TV::T(iota)
        } else {
            self.lift(st, span, vec![TV::T(iota), kv], binary_of(BinOp::Mul, span))?
        };
        let v = if start.is_some() {
            self.lift(st, span, vec![lo_v, scaled], binary_of(BinOp::Add, span))?
        } else {
            scaled
        };
        let want = STy::strong(dtype.unwrap_or(DType::I64));
        self.tcast(st, span, v, want)
    }
}
