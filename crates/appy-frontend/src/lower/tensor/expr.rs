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
        let r = build(self, names);
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

    pub(in crate::lower) fn treduce(&mut self, st: &mut TStmt, x: Tensor, which: &[usize], op: RedOp, span: Span) -> DResult<TV> {
        // Sums of booleans and integers are int64 (NumPy).
        let mut x = x;
        if op == RedOp::Add && !x.t.is_float() && x.t != STy::INT {
            let TV::T(c) = self.tcast(st, span, TV::T(x.clone()), STy::INT)? else {
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
        let kind = match op {
            RedOp::Add => "sum",
            RedOp::Max => "max",
            RedOp::Min => "min",
            RedOp::Mul => "prod",
        };
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
        let p = self.lift(st, span, vec![TV::T(a), TV::T(b)], binary_of(BinOp::Mul, span))?;
        let TV::T(p) = p else {
            unreachable!("a product of tensors is a tensor")
        };
        self.treduce(st, p, &[reduce_at], RedOp::Add, span)
    }

    /// A name bound to an array used as a value (not subscripted) inside `e`.
    pub(in crate::lower) fn bare_array(&self, e: &Expr) -> Option<(String, Span)> {
        match &e.kind {
            ExprKind::Name(n) => match self.lookup(n) {
                Some(Binding::Val(V::Arr(..))) => Some((n.clone(), e.span)),
                _ => None,
            },
            ExprKind::Subscript { indices, .. } => indices.iter().find_map(|i| match i {
                Index::Expr(x) => self.bare_array(x),
                _ => None,
            }),
            ExprKind::Attribute { .. } => None,
            ExprKind::Call { args, .. } => args.iter().find_map(|a| self.bare_array(a)),
            _ => {
                let mut found = None;
                e.for_each_child(&mut |c| {
                    if found.is_none() {
                        found = self.bare_array(c);
                    }
                });
                found
            }
        }
    }

    pub(in crate::lower) fn texpr(&mut self, st: &mut TStmt, e: &Expr) -> DResult<TV> {
        if !has_slices(e) {
            if let Some((n, sp)) = self.bare_array(e) {
                return Err(self
                    .err(
                        sp,
                        format!("whole-array operand `{n}`: tensor expressions use sliced index notation"),
                    )
                    .with_note(format!("help: write every dimension as a slice, e.g. `{n}[:N]` or `{n}[:M, :N]`")));
            }
            let (v, t) = self.scalar(e)?;
            return Ok(TV::S(v, t));
        }
        let span = e.span;
        match &e.kind {
            ExprKind::Subscript { value, indices } if has_slices(value) => {
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
                if indices.iter().any(|i| matches!(i, Index::Expr(x) if has_slices(x))) {
                    return Err(self.err(e.span, "indexing with a tensor is not supported"));
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
                // element by the reciprocal (may differ from NumPy in the last bit).
                if op == BinOp::Div
                    && matches!(a, TV::T(_))
                    && let TV::S(s, t) = b
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
        let q = qualify(&self.imports, func).unwrap_or_default();
        let span = e.span;
        let red = match q.as_str() {
            "builtins.sum" | "numpy.sum" => Some(RedOp::Add),
            "builtins.max" | "numpy.max" | "numpy.amax" => Some(RedOp::Max),
            "builtins.min" | "numpy.min" | "numpy.amin" => Some(RedOp::Min),
            "numpy.prod" => Some(RedOp::Mul),
            _ => None,
        };
        let builtin = q.starts_with("builtins.");
        if let Some(op) = red
            && (args.len() == 1 || !builtin)
        {
            let [x] = args else {
                return Err(self.err(
                    span,
                    format!("`{}` takes one tensor argument (and `axis=`)", q.trim_start_matches("builtins.")),
                ));
            };
            let mut axis: Option<i64> = None;
            for (k, v) in kwargs {
                if k.name != "axis" || builtin {
                    return Err(self.err(k.span, format!("unsupported keyword argument `{}`", k.name)));
                }
                match &v.kind {
                    ExprKind::Int(a) => axis = Some(*a),
                    ExprKind::Unary { op: UnaryOp::Neg, operand } if matches!(operand.kind, ExprKind::Int(_)) => {
                        let ExprKind::Int(a) = operand.kind else { unreachable!() };
                        axis = Some(-a);
                    }
                    ExprKind::None => axis = None,
                    _ => return Err(self.err(v.span, "`axis=` must be an integer literal")),
                }
            }
            let TV::T(t) = self.texpr(st, x)? else {
                return Err(self.err(x.span, "expected a tensor (sliced index notation)"));
            };
            let r = t.axes.len() as i64;
            let which: Vec<usize> = if builtin {
                // Python's builtins iterate over the first axis.
                if op != RedOp::Add && r > 1 {
                    return Err(self
                        .err(
                            span,
                            format!(
                                "`{}` of a {r}-dimensional tensor is ambiguous in Python",
                                q.trim_start_matches("builtins.")
                            ),
                        )
                        .with_note("help: use `np.max(x, axis=k)` / `np.min(x, axis=k)`"));
                }
                vec![0]
            } else if let Some(a) = axis {
                let a2 = if a < 0 { a + r } else { a };
                if !(0..r).contains(&a2) {
                    return Err(self.err(span, format!("axis {a} is out of range for a {r}-dimensional tensor")));
                }
                vec![a2 as usize]
            } else {
                (0..r as usize).collect()
            };
            return self.treduce(st, t, &which, op, span);
        }
        match q.as_str() {
            "builtins.mv" | "appy.mv" => {
                let [a, b] = args else {
                    return Err(self.err(span, "`mv(A, x)` takes a matrix and a vector"));
                };
                let ta = self.texpr(st, a)?;
                let tb = self.texpr(st, b)?;
                if !matches!((&ta, &tb), (TV::T(x), TV::T(y)) if x.axes.len() == 2 && y.axes.len() == 1) {
                    return Err(self.err(span, "`mv(A, x)` takes a 2-dimensional and a 1-dimensional tensor"));
                }
                return self.contract(st, ta, tb, span);
            }
            "numpy.dot" | "numpy.matmul" => {
                let [a, b] = args else {
                    return Err(self.err(span, "matrix products take two arguments"));
                };
                let ta = self.texpr(st, a)?;
                let tb = self.texpr(st, b)?;
                return self.contract(st, ta, tb, span);
            }
            "numpy.transpose" | "builtins.transpose" | "appy.transpose" => {
                let [a] = args else {
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
            _ => {}
        }
        if kwargs.iter().any(|(_, v)| has_slices(v)) {
            return Err(self.err(span, "tensor keyword arguments are not supported"));
        }
        let mut kids = vec![];
        for a in args {
            kids.push(self.texpr(st, a)?);
        }
        let (func, kwargs) = (func.clone(), kwargs.to_vec());
        self.lift(st, span, kids, |n| Expr {
            kind: ExprKind::Call {
                func: Box::new(func),
                args: n,
                kwargs,
            },
            span,
        })
    }
}
