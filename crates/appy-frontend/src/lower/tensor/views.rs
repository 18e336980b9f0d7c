//! Slices and views in tensor statements: `A[i, lo:hi, None]` → `appy.view`.

use super::*;

impl Lower<'_> {
    pub(in crate::lower) fn src(&self, sp: Span) -> String {
        self.file.text().get(sp.start..sp.end).unwrap_or("").to_string()
    }

    /// A slice bound as i64 (the same text in one statement gives the same value).
    pub(in crate::lower) fn bound(&mut self, st: &mut TStmt, e: &Expr) -> DResult<Value> {
        let key: String = self.src(e.span).split_whitespace().collect();
        if let Some(v) = st.bounds.get(&key) {
            return Ok(*v);
        }
        if let ExprKind::Unary { op: UnaryOp::Neg, .. } | ExprKind::Int(i64::MIN..=-1) = &e.kind {
            return Err(self
                .err(
                    e.span,
                    "negative slice bounds (counting from the end) are not supported in sliced index notation",
                )
                .with_note("help: write the bound from the start, e.g. `a[:N-1]` instead of `a[:-1]`"));
        }
        let (v, t) = self.scalar(e)?;
        if !t.dt.is_int() {
            return Err(self.err(e.span, "slice bounds must be integers"));
        }
        let v = self.b.cast(v, t, STy::INT);
        st.bounds.insert(key, v);
        Ok(v)
    }

    /// The axes of `A[i, lo:hi, None]`: the array, its element type, the positional axes,
    /// the dimension node of each array axis (`None` for a scalar index) and the i64
    /// operand of each array axis (lower bound or index).
    #[allow(clippy::type_complexity)]
    pub(in crate::lower) fn slice_axes(
        &mut self,
        st: &mut TStmt,
        value: &Expr,
        indices: &[Index],
        span: Span,
    ) -> DResult<(Value, DType, Vec<Ax>, Vec<Option<usize>>, Vec<Value>)> {
        let V::Arr(m, dt, rank) = self.expr(value)? else {
            return Err(self.err(value.span, "only arrays can be sliced"));
        };
        let n_idx = indices.iter().filter(|i| !matches!(i, Index::NewAxis(_))).count();
        if n_idx != rank {
            return Err(self
                .err(
                    span,
                    format!("sliced index notation needs an index or a slice for each of the array's {rank} dimension(s); {n_idx} given"),
                )
                .with_note("help: write every dimension, e.g. `A[:M, :N]` or `A[i, :N]`"));
        }
        let mut axes = vec![];
        let mut dims: Vec<Option<usize>> = vec![];
        let mut ops = vec![];
        for i in indices {
            match i {
                Index::NewAxis(_) => axes.push(Ax::One),
                Index::Expr(x) => {
                    let (v, t) = self.scalar(x)?;
                    if !t.dt.is_int() {
                        return Err(self.err(x.span, "array indices must be integers"));
                    }
                    ops.push(self.b.cast(v, t, STy::INT));
                    dims.push(None);
                }
                Index::Slice { lower, upper, step, span } => {
                    if let Some(s) = step
                        && !matches!(s.kind, ExprKind::Int(1))
                    {
                        return Err(self.err(*span, "slices with a step are not supported in sliced index notation"));
                    }
                    let Some(upper) = upper else {
                        return Err(self
                            .err(*span, "sliced index notation needs an explicit upper bound")
                            .with_note("help: write the extent, e.g. `a[i, :N]` or `a[1:N-1]`"));
                    };
                    let lo = match lower {
                        Some(l) => self.bound(st, l)?,
                        None => match st.bounds.get("0") {
                            Some(z) => *z,
                            None => {
                                let z = self.b.int(0, "i64");
                                st.bounds.insert("0".into(), z);
                                z
                            }
                        },
                    };
                    let hi = self.bound(st, upper)?;
                    let d = self.b.bin("arith.subi", hi, lo);
                    let z = self.b.int(0, "i64");
                    let ext = self.b.bin("arith.maxsi", d, z);
                    let text = norm_slice(&lower.as_ref().map(|l| self.src(l.span)).unwrap_or_default(), &self.src(upper.span));
                    let n = st.node(ext, text, *span);
                    axes.push(Ax::D(n));
                    dims.push(Some(n));
                    ops.push(lo);
                }
            }
        }
        Ok((m, dt, axes, dims, ops))
    }

    pub(in crate::lower) fn push_view(&mut self, st: &mut TStmt, m: Value, dt: DType, dims: &[Option<usize>], ops: &[Value]) -> Value {
        let v = self.b.m.value("tensor<*xf64>");
        let op = Op::new("appy.view")
            .with_operands(std::iter::once(m).chain(ops.iter().copied()))
            .with_results([v]);
        self.b.push(op);
        let nodes = dims.iter().map(|d| d.unwrap_or(usize::MAX)).collect();
        st.made.push((v, Made::View(nodes), dt.mlir().to_string()));
        v
    }

    /// `A[i, lo:hi, None]` → `appy.view`.
    pub(in crate::lower) fn tview(&mut self, st: &mut TStmt, value: &Expr, indices: &[Index], span: Span) -> DResult<Tensor> {
        let (m, dt, axes, dims, ops) = self.slice_axes(st, value, indices, span)?;
        let v = self.push_view(st, m, dt, &dims, &ops);
        Ok(Tensor {
            v,
            axes,
            t: STy::strong(dt),
        })
    }
}
