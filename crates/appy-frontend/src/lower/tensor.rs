//! Tensor statements in sliced index notation (seed 001 §4) → the tensor ops of the
//! `appy` level: `appy.view`, `appy.ew`, `appy.reduce`, `appy.assign`.
//!
//! A statement such as
//!
//! ```python
//! #pragma :M=>parallel :N=>reduction(sum:y)
//! y[:M] = mv(alpha * A[:M, :N], x[:N])
//! ```
//!
//! becomes SSA values that are functions of the statement's *dimensions*: every sliced
//! axis starts as its own dimension, and NumPy's broadcasting rules (right-aligned
//! axes, `None` for a new axis) unify the dimensions that meet in an element-wise
//! operation, a contraction (`mv`, `@`, `np.dot`) or the assignment. After unification,
//! the statement's dimensions are numbered `0..k`, each with its extent (the length of
//! its first slice) and the slice text that names it in a tensor pragma.
//!
//! Element-wise operations reuse the scalar lowering: the operation is lowered once on
//! placeholder scalars and every scalar op that depends on a placeholder is lifted to an
//! `appy.ew` that names the op, so NumPy's promotion rules and the math functions are
//! exactly those of scalar code. Reductions (`sum/max/min`, `np.sum(..., axis=k)`,
//! contractions) are `appy.reduce`. The statement ends in `appy.assign`, which carries
//! the pragma: loop order, `parallel`, `simd`, `le(c)`, and `atomic`.
//!
//! The passes `appy-tensor-temporaries`, `appy-tensor-fuse`, `appy-tensor-sync` and
//! `appy-tensor-to-loops` lower these ops to loops (seed 001 §5.1).

use super::*;

/// A positional axis of a tensor value: a statement dimension (union-find node) or a
/// broadcast axis of length one (`None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ax {
    D(usize),
    One,
}

#[derive(Clone, Debug)]
struct Tensor {
    v: Value,
    axes: Vec<Ax>,
    t: STy,
}

#[derive(Clone, Debug)]
enum TV {
    S(Value, STy),
    T(Tensor),
}

/// How a tensor value was made (to compute its dimensions after unification).
#[derive(Clone, Debug)]
enum Made {
    View(Vec<usize>),
    Ew(Vec<Value>),
    Reduce(Value, Vec<usize>, &'static str, Span),
}

/// Per-statement state: the dimension nodes (union-find), their extents and names.
#[derive(Default)]
struct TStmt {
    parent: Vec<usize>,
    ext: Vec<Value>,
    text: Vec<String>,
    span: Vec<Span>,
    made: Vec<(Value, Made, String)>,
    bounds: HashMap<String, Value>,
}

impl TStmt {
    fn node(&mut self, ext: Value, text: String, span: Span) -> usize {
        self.parent.push(self.parent.len());
        self.ext.push(ext);
        self.text.push(text);
        self.span.push(span);
        self.parent.len() - 1
    }
    fn find(&mut self, x: usize) -> usize {
        let mut r = x;
        while self.parent[r] != r {
            r = self.parent[r];
        }
        let mut y = x;
        while self.parent[y] != r {
            let n = self.parent[y];
            self.parent[y] = r;
            y = n;
        }
        r
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            // The older node (a target slice or the first operand) stays the root.
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent[hi] = lo;
        }
    }
    /// NumPy broadcasting of two axis lists (right-aligned).
    fn broadcast(&mut self, a: &[Ax], b: &[Ax]) -> Vec<Ax> {
        let n = a.len().max(b.len());
        let mut out = vec![Ax::One; n];
        for k in 0..n {
            let x = if k < a.len() { Some(a[a.len() - 1 - k]) } else { None };
            let y = if k < b.len() { Some(b[b.len() - 1 - k]) } else { None };
            out[n - 1 - k] = match (x, y) {
                (Some(Ax::D(p)), Some(Ax::D(q))) => {
                    self.union(p, q);
                    Ax::D(p)
                }
                (Some(Ax::D(p)), _) | (_, Some(Ax::D(p))) => Ax::D(p),
                _ => Ax::One,
            };
        }
        out
    }
}

/// The expression `a <op> b` over the two names a lift binds.
fn binary_of(op: BinOp, span: Span) -> impl FnOnce(Vec<Expr>) -> Expr {
    move |n| {
        let mut it = n.into_iter();
        Expr {
            kind: ExprKind::Binary {
                op,
                lhs: Box::new(it.next().expect("two")),
                rhs: Box::new(it.next().expect("two")),
            },
            span,
        }
    }
}

/// Whether an expression contains a slice or `None` index (a tensor expression).
pub(super) fn has_slices(e: &Expr) -> bool {
    let mut found = false;
    fn walk(e: &Expr, found: &mut bool) {
        if let ExprKind::Subscript { indices, .. } = &e.kind
            && indices.iter().any(|i| !matches!(i, Index::Expr(_)))
        {
            *found = true;
        }
        e.for_each_child(&mut |c| walk(c, found));
    }
    walk(e, &mut found);
    found
}

/// Whether a statement is a tensor statement (an assignment in sliced index notation).
pub(super) fn is_tensor_stmt(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Assign { targets, value } => targets.iter().any(has_slices) || has_slices(value),
        StmtKind::AugAssign { target, value, .. } => has_slices(target) || has_slices(value),
        _ => false,
    }
}

fn norm_slice(lo: &str, hi: &str) -> String {
    let lo: String = lo.split_whitespace().collect();
    let hi: String = hi.split_whitespace().collect();
    let lo = if lo == "0" { String::new() } else { lo };
    format!("{lo}:{hi}")
}

impl Lower<'_> {
    fn src(&self, sp: Span) -> String {
        self.file.text().get(sp.start..sp.end).unwrap_or("").to_string()
    }

    /// A slice bound as i64 (the same text in one statement gives the same value).
    fn bound(&mut self, st: &mut TStmt, e: &Expr) -> DResult<Value> {
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
    fn slice_axes(
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

    fn push_view(&mut self, st: &mut TStmt, m: Value, dt: DType, dims: &[Option<usize>], ops: &[Value]) -> Value {
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
    fn tview(&mut self, st: &mut TStmt, value: &Expr, indices: &[Index], span: Span) -> DResult<Tensor> {
        let (m, dt, axes, dims, ops) = self.slice_axes(st, value, indices, span)?;
        let v = self.push_view(st, m, dt, &dims, &ops);
        Ok(Tensor {
            v,
            axes,
            t: STy::strong(dt),
        })
    }

    /// Lowers `rebuild(names)` on scalars bound to `kids` (placeholders for tensors) and
    /// lifts every op that depends on a tensor to `appy.ew`.
    fn lift(&mut self, st: &mut TStmt, span: Span, kids: Vec<TV>, rebuild: impl FnOnce(Vec<Expr>) -> Expr) -> DResult<TV> {
        self.lift_with(st, span, kids, |this, n| this.expr(&rebuild(n)))
    }

    /// A cast of every element to `want`.
    fn tcast(&mut self, st: &mut TStmt, span: Span, x: TV, want: STy) -> DResult<TV> {
        self.lift_with(st, span, vec![x], |this, n| {
            let (x, t) = this.scalar(&n[0])?;
            Ok(V::S(this.b.cast(x, t, want), want))
        })
    }

    fn lift_with(
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

    fn treduce(&mut self, st: &mut TStmt, x: Tensor, which: &[usize], op: RedOp, span: Span) -> DResult<TV> {
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
    fn contract(&mut self, st: &mut TStmt, a: TV, b: TV, span: Span) -> DResult<TV> {
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
    fn bare_array(&self, e: &Expr) -> Option<(String, Span)> {
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

    fn texpr(&mut self, st: &mut TStmt, e: &Expr) -> DResult<TV> {
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

    fn tcall(&mut self, st: &mut TStmt, func: &Expr, args: &[Expr], kwargs: &[(Ident, Expr)], e: &Expr) -> DResult<TV> {
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

    /// Lowers a tensor statement to `appy.assign`.
    pub(super) fn tensor_stmt(&mut self, s: &Stmt) -> DResult<()> {
        if self.scopes.iter().any(|sc| sc.kind == ScopeKind::Simd) {
            return Err(self.err(s.span, "tensor statements are not supported inside a simd loop"));
        }
        self.set_loc(s.span);
        self.b.begin();
        let r = self.tensor_stmt_ops(s);
        let ops = self.b.end();
        let (fix, post) = r?;
        for mut op in ops {
            if let Some(a) = op.results.first().and_then(|v| fix.get(v)) {
                op.set_attr("dims", a.clone());
            }
            self.b.push(op);
        }
        if let Some((n, slot, t, span)) = post {
            let x = self.b.load(slot, &[]);
            self.assign_scalar(&n, x, t, span)?;
        }
        Ok(())
    }

    /// The ops of a tensor statement; returns the `dims` attribute of each view and
    /// reduce (known after unification), and the scalar variable to update afterwards.
    #[allow(clippy::type_complexity)]
    fn tensor_stmt_ops(&mut self, s: &Stmt) -> DResult<(HashMap<Value, String>, Option<(String, Value, STy, Span)>)> {
        let in_worker = self.seq_worker > 0 || self.scopes.iter().any(|sc| sc.kind == ScopeKind::Parallel);
        let atomic = matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic));
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
        let mut st = TStmt::default();
        // The target: an array slice (its dimensions come first) or a scalar variable.
        let mut tarr: Option<(Value, DType, Vec<Ax>, Vec<Option<usize>>, Vec<Value>)> = None;
        let mut tname: Option<String> = None;
        match &target.kind {
            ExprKind::Subscript { value: arr, indices } => {
                if indices.iter().any(|i| matches!(i, Index::NewAxis(_))) {
                    return Err(self.err(target.span, "`None` (a new axis) cannot appear in an assignment target"));
                }
                tarr = Some(self.slice_axes(&mut st, arr, indices, target.span)?);
            }
            ExprKind::Name(n) => {
                if aug.is_some() && self.lookup(n).is_none() {
                    return Err(self.err(target.span, format!("undefined name `{n}`")));
                }
                tname = Some(n.clone());
            }
            _ => return Err(self.err(target.span, "the target of a tensor statement must be an array slice or a variable")),
        }
        // The value.
        let mut v = self.texpr(&mut st, value)?;
        match (aug, atomic) {
            (Some(op), true) => {
                if !matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul) || tarr.is_none() {
                    return Err(self.err(s.span, "`#pragma atomic` supports `+=`, `-=` and `*=` on array slices"));
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
                    Some((m, dt, axes, dims, ops)) => {
                        let (m, dt, axes, dims, ops) = (*m, *dt, axes.clone(), dims.clone(), ops.clone());
                        let tv = self.push_view(&mut st, m, dt, &dims, &ops);
                        TV::T(Tensor {
                            v: tv,
                            axes,
                            t: STy::strong(dt),
                        })
                    }
                    None => {
                        let (x, t) = self.scalar(target)?;
                        TV::S(x, t)
                    }
                };
                v = self.lift(&mut st, s.span, vec![cur, v], binary_of(op, s.span))?;
            }
            (None, true) => {
                return Err(self.err(
                    s.span,
                    "`#pragma atomic` on a tensor statement needs an update like `a[i, :N] += x[:N]`",
                ));
            }
            (None, false) => {}
        }
        // Broadcast the value into the target.
        let taxes: Vec<Ax> = tarr.as_ref().map(|t| t.2.clone()).unwrap_or_default();
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
        let (tmem, tdims, tops, post) = match tarr {
            Some((m, dt, _, dims, ops)) => {
                let want = STy::strong(dt);
                if vt != want {
                    v = match v {
                        TV::S(x, t) => TV::S(self.b.cast(x, t, want), want),
                        t => self.tcast(&mut st, value.span, t, want)?,
                    };
                }
                (m, dims, ops, None)
            }
            None => {
                let slot = self.new_slot(vt);
                (slot, vec![], vec![], Some((tname.expect("a scalar target"), slot, vt, target.span)))
            }
        };
        // Dimensions: dense ids in order of first appearance (target first).
        let nn = st.parent.len();
        let mut dense: HashMap<usize, usize> = HashMap::new();
        let mut exts = vec![];
        let mut names: Vec<String> = vec![];
        let mut first_span: Vec<Span> = vec![];
        for n in 0..nn {
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
                return Err(self.err(s.span, format!("dimension `{}` is both reduced and assigned", names[*d])));
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
        }) = &s.pragma
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
                            let tn = match &target.kind {
                                ExprKind::Subscript { value, .. } => self.src(value.span),
                                _ => self.src(target.span),
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
            if s.pragma.is_some() && !atomic {
                return Err(self.err(s.span, "this pragma cannot annotate a tensor statement"));
            }
            // Defaults: outside parallel loops the first dimension is parallel; the last
            // dimension is simd.
            order = (0..k).collect();
            if let Some(&last) = order.last() {
                simd[last] = true;
            }
            if !in_worker && let Some(&first) = order.first() {
                par[first] = true;
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
        op.set_attr("order", i64_array(&order.iter().map(|d| *d as i64).collect::<Vec<_>>()));
        op.set_attr("parallel", bools(&par));
        op.set_attr("simd", bools(&simd));
        op.set_attr("le", i64_array(&le));
        op.set_attr(
            "names",
            format!("[{}]", names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")),
        );
        if atomic && let Some(bop) = aug {
            let rop = if bop == BinOp::Mul { RedOp::Mul } else { RedOp::Add };
            let dt = match &v {
                TV::S(_, t) => t.dt,
                TV::T(t) => t.t.dt,
            };
            op.set_attr("atomic", format!("{} : i64", atomic_kind(rop, dt)));
        }
        self.set_loc(s.span);
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
