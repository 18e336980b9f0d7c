//! Slices and views in tensor statements: `A[i, lo:hi:s, None]`, whole arrays and
//! views bound to names → `appy.view`, with NumPy's slice semantics.

use super::assign::i64_array;
use super::view::{Bound, VAxis, View};
use super::*;

impl Lower<'_> {
    pub(in crate::lower) fn src(&self, sp: Span) -> String {
        self.file.text().get(sp.start..sp.end).unwrap_or("").to_string()
    }

    /// A slice bound as i64 (the same text in one statement gives the same value).
    fn bound_of(&mut self, st: &mut TStmt, e: Option<&Expr>) -> DResult<Bound> {
        let Some(e) = e else { return Ok(Bound::Absent) };
        if let Some(k) = const_int(e) {
            return Ok(Bound::Const(k));
        }
        let key: String = self.src(e.span).split_whitespace().collect();
        if let Some(v) = st.bounds.get(&key) {
            return Ok(Bound::Dyn(*v));
        }
        let b = self.slice_bound(Some(e))?;
        if let Bound::Dyn(v) = b {
            st.bounds.insert(key, v);
        }
        Ok(b)
    }

    /// The operand or target `value[indices]` of a statement.
    pub(in crate::lower) fn slice_axes(&mut self, st: &mut TStmt, value: &Expr, indices: &[Index], span: Span) -> DResult<Sliced> {
        let v = self.expr(value)?;
        let Some(view) = self.view_of(&v) else {
            return Err(self.err(value.span, "only arrays can be sliced"));
        };
        self.slice_view(st, &view, indices, span)
    }

    /// `view[indices]` as an operand: per axis of the view a scalar index, a slice or (for
    /// axes not indexed) the whole axis; `None` adds a broadcast axis.
    pub(in crate::lower) fn slice_view(&mut self, st: &mut TStmt, view: &View, indices: &[Index], span: Span) -> DResult<Sliced> {
        let n_idx = indices.iter().filter(|i| !matches!(i, Index::NewAxis(_))).count();
        if n_idx > view.rank() {
            return Err(self
                .err(
                    span,
                    format!("too many indices: the array has {} dimension(s), {n_idx} given", view.rank()),
                )
                .with_note("help: index each dimension once, e.g. `A[i, :]`"));
        }
        let nb = view.axes.len();
        let mut dims: Vec<Option<usize>> = vec![None; nb];
        let mut ops: Vec<Option<Value>> = vec![None; nb];
        let mut steps = vec![1i64; nb];
        for (b, a) in view.axes.iter().enumerate() {
            if let VAxis::Index(i) = a {
                ops[b] = Some(*i);
            }
        }
        let mut axes = vec![];
        let mut k = 0;
        let full = Index::Slice {
            lower: None,
            upper: None,
            step: None,
            span,
        };
        let rest = (n_idx..view.rank()).map(|_| &full);
        for i in indices.iter().chain(rest) {
            if let Index::NewAxis(_) = i {
                axes.push(Ax::One);
                continue;
            }
            let b = view.order[k];
            k += 1;
            let VAxis::Range { start, step, len } = view.axes[b] else {
                unreachable!("a view's axes are ranges")
            };
            match i {
                Index::Expr(x) => {
                    let mut iv = self.index_value(x, || None)?;
                    if const_int(x).is_some_and(|c| c < 0) {
                        let n = self.axis_len(st, view, b);
                        iv = self.b.bin("arith.addi", n, iv);
                    }
                    ops[b] = Some(self.affine(start, step, iv));
                }
                Index::Slice {
                    lower,
                    upper,
                    step: st_e,
                    span: sp,
                } => {
                    let s = self.slice_step(st_e.as_deref())?;
                    let lo = self.bound_of(st, lower.as_deref())?;
                    let hi = self.bound_of(st, upper.as_deref())?;
                    let key = format!(
                        "{}:{}:{s}@{:?}/{b}/{:?}/{step}/{:?}",
                        lower.as_ref().map(|l| self.src(l.span)).unwrap_or_default(),
                        upper.as_ref().map(|u| self.src(u.span)).unwrap_or_default(),
                        view.base,
                        start,
                        len
                    );
                    let (first, count) = match st.slices.get(&key) {
                        Some(r) => *r,
                        None => {
                            let n = self.axis_len(st, view, b);
                            let r = self.slice_range(lo, hi, s, n);
                            st.slices.insert(key, r);
                            r
                        }
                    };
                    let text = tensor_slice_text(
                        &lower.as_ref().map(|l| self.src(l.span)).unwrap_or_default(),
                        &upper.as_ref().map(|u| self.src(u.span)).unwrap_or_default(),
                    );
                    let node = st.node(count, text, *sp);
                    axes.push(Ax::D(node));
                    dims[b] = Some(node);
                    ops[b] = Some(match start {
                        None if step == 1 => first,
                        _ => self.affine(start, step, first),
                    });
                    steps[b] = step * s;
                }
                Index::NewAxis(_) => unreachable!("handled above"),
            }
        }
        let zero = self.b.int(0, "i64");
        Ok(Sliced {
            m: view.base,
            dt: view.dt,
            axes,
            dims,
            ops: ops.into_iter().map(|o| o.unwrap_or(zero)).collect(),
            steps,
        })
    }

    /// The length of base axis `b` of a view (i64), once per statement.
    fn axis_len(&mut self, st: &mut TStmt, view: &View, b: usize) -> Value {
        if let VAxis::Range { len: Some(l), .. } = view.axes[b] {
            return l;
        }
        let key = format!("dim {:?}/{b}", view.base);
        if let Some((d, _)) = st.slices.get(&key) {
            return *d;
        }
        let d = self.memref_dim(view.base, b);
        st.slices.insert(key, (d, d));
        d
    }

    /// Allocates the new array of a [`TTarget::New`] statement: one axis per axis of the
    /// value (`axes`), of its extent (1 for a broadcast axis).
    pub(in crate::lower) fn alloc_for(&mut self, st: &mut TStmt, axes: &[Ax], dt: DType) -> Sliced {
        let mut sizes = vec![];
        let mut dims = vec![];
        let mut ops = vec![];
        let zero = self.b.int(0, "i64");
        for a in axes {
            match a {
                Ax::D(n) => {
                    let r = st.find(*n);
                    sizes.push(self.b.to_index(st.ext[r]));
                    dims.push(Some(*n));
                }
                Ax::One => {
                    sizes.push(self.b.index(1));
                    dims.push(None);
                }
            }
            ops.push(zero);
        }
        let m = self.alloc_memref(dt, &sizes);
        Sliced {
            m,
            dt,
            axes: axes.to_vec(),
            dims,
            ops,
            steps: vec![1; axes.len()],
        }
    }

    pub(in crate::lower) fn push_view(
        &mut self,
        st: &mut TStmt,
        m: Value,
        dt: DType,
        dims: &[Option<usize>],
        ops: &[Value],
        steps: &[i64],
    ) -> Value {
        let v = self.b.m.value("tensor<*xf64>");
        let mut op = Op::new("appy.view")
            .with_operands(std::iter::once(m).chain(ops.iter().copied()))
            .with_results([v]);
        if steps.iter().any(|s| *s != 1) {
            op.set_attr("steps", i64_array(steps));
        }
        self.b.push(op);
        let nodes = dims.iter().map(|d| d.unwrap_or(usize::MAX)).collect();
        st.made.push((v, Made::View(nodes), dt.mlir().to_string()));
        v
    }

    /// `A[i, lo:hi, None]` → `appy.view`.
    pub(in crate::lower) fn tview(&mut self, st: &mut TStmt, value: &Expr, indices: &[Index], span: Span) -> DResult<Tensor> {
        let s = self.slice_axes(st, value, indices, span)?;
        Ok(self.sliced_tensor(st, s))
    }

    /// The tensor of an operand.
    pub(in crate::lower) fn sliced_tensor(&mut self, st: &mut TStmt, s: Sliced) -> Tensor {
        let v = self.push_view(st, s.m, s.dt, &s.dims, &s.ops, &s.steps);
        let t = s.elem();
        Tensor { v, axes: s.axes, t }
    }

    /// `np.arange(...)` over a new dimension of `count` elements: `start + step * i`.
    pub(in crate::lower) fn iota(&mut self, st: &mut TStmt, count: Value, span: Span) -> Tensor {
        let node = st.node(count, ":".into(), span);
        let v = self.b.m.value("tensor<?xi64>");
        self.b.push(Op::new("appy.iota").with_results([v]));
        st.made.push((v, Made::View(vec![node]), "i64".into()));
        Tensor {
            v,
            axes: vec![Ax::D(node)],
            t: STy::strong(DType::I64),
        }
    }
}

/// The text of a slice for matching the tensor pragma: `lo:hi`, with `0:` written `:`.
pub(in crate::lower) fn tensor_slice_text(lo: &str, hi: &str) -> String {
    let lo: String = lo.split_whitespace().collect();
    let hi: String = hi.split_whitespace().collect();
    let lo = if lo == "0" { String::new() } else { lo };
    format!("{lo}:{hi}")
}
