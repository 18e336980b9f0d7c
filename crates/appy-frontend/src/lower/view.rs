//! NumPy views and slice semantics.
//!
//! `b = a[1:]`, `r = A[i]` (a row of a matrix), `t = A.T` and `s = a[::2]` bind names to
//! *views*: they name elements of an array (its base memref) without copying, as NumPy
//! does, so writing through a view writes the array. A view records, per axis of the
//! base array, either a fixed index or a range `start + step * k` for `k` in `0..len`,
//! and the order of its own axes (a transpose permutes them).
//!
//! Slice bounds follow Python: a negative bound counts from the end, and bounds are
//! clamped to the axis (`a[:N]` with `N > len(a)` is the whole axis); the count of a
//! slice with step `s` is `ceil((hi - lo) / s)`, never negative.

use super::*;

/// One axis of a view's base array.
#[derive(Clone, Copy, Debug)]
pub(super) enum VAxis {
    /// Fixed at this index (i64).
    Index(Value),
    /// The elements `start + step * k`, `k` in `0..len` (`start`: `None` for 0; `len`:
    /// `None` for the whole axis, i.e. the memref's dimension).
    Range {
        start: Option<Value>,
        step: i64,
        len: Option<Value>,
    },
}

/// A NumPy view of an array.
#[derive(Clone, Debug)]
pub(super) struct View {
    /// The array (memref) it shows.
    pub base: Value,
    /// Element type.
    pub dt: DType,
    /// One entry per axis of the base array.
    pub axes: Vec<VAxis>,
    /// The view's own axes, in order: indices of `Range` entries of `axes`.
    pub order: Vec<usize>,
}

impl View {
    /// The view of a whole array.
    pub fn whole(base: Value, dt: DType, rank: usize) -> View {
        View {
            base,
            dt,
            axes: vec![
                VAxis::Range {
                    start: None,
                    step: 1,
                    len: None
                };
                rank
            ],
            order: (0..rank).collect(),
        }
    }

    /// Number of axes of the view.
    pub fn rank(&self) -> usize {
        self.order.len()
    }
}

/// A slice bound as written: absent, a constant, or a run-time i64 value.
#[derive(Clone, Copy, Debug)]
pub(super) enum Bound {
    Absent,
    Const(i64),
    Dyn(Value),
}

impl Lower<'_> {
    /// The view an array value shows (`None` for non-arrays).
    pub(super) fn view_of(&self, v: &V) -> Option<View> {
        match v {
            V::Arr(m, dt, r) => Some(View::whole(*m, *dt, *r)),
            V::View(view) => Some((**view).clone()),
            _ => None,
        }
    }

    /// The number of elements along base axis `k` of a view (i64).
    pub(super) fn base_len(&mut self, view: &View, k: usize) -> Value {
        match view.axes[k] {
            VAxis::Range { len: Some(l), .. } => l,
            _ => self.memref_dim(view.base, k),
        }
    }

    /// `memref.dim` of axis `k`, as i64.
    pub(super) fn memref_dim(&mut self, m: Value, k: usize) -> Value {
        let c = self.b.index(k as i64);
        let d = self.b.op1("memref.dim", &[m, c], "index", &[]);
        self.b.to_i64(d)
    }

    /// The lengths of the view's axes, in its order (i64).
    pub(super) fn view_shape(&mut self, view: &View) -> Vec<Value> {
        view.order.clone().into_iter().map(|k| self.base_len(view, k)).collect()
    }

    /// A bound as written in the source.
    pub(super) fn slice_bound(&mut self, e: Option<&Expr>) -> DResult<Bound> {
        let Some(e) = e else { return Ok(Bound::Absent) };
        if let Some(k) = const_int(e) {
            return Ok(Bound::Const(k));
        }
        let (v, t) = self.scalar(e)?;
        if !t.dt.is_int() && t.dt != DType::Bool {
            return Err(self.err(e.span, "slice bounds must be integers"));
        }
        Ok(Bound::Dyn(self.b.cast(v, t, STy::INT)))
    }

    /// A slice step: a non-zero integer constant (1 when absent).
    pub(super) fn slice_step(&mut self, e: Option<&Expr>) -> DResult<i64> {
        let Some(e) = e else { return Ok(1) };
        match const_int(e) {
            Some(0) => Err(self.err(e.span, "slice step cannot be zero")),
            Some(k) => Ok(k),
            None => Err(self
                .err(e.span, "slice steps must be integer constants")
                .with_note("help: write the step as a literal, e.g. `a[::2]`")),
        }
    }

    /// Python's `lo:hi:step` on an axis of `n` elements (i64): the first index and the
    /// number of elements. Negative bounds count from the end; bounds are clamped.
    pub(super) fn slice_range(&mut self, lo: Bound, hi: Bound, step: i64, n: Value) -> (Value, Value) {
        let zero = self.b.int(0, "i64");
        if step > 0 {
            // Only the clamps that can change the elements are emitted: a start past the
            // end or a stop before the start already give a count of zero.
            let first = match lo {
                Bound::Absent => zero,
                Bound::Const(k) if k >= 0 => self.b.int(k, "i64"),
                Bound::Const(k) => {
                    let kv = self.b.int(k, "i64");
                    let w = self.b.bin("arith.addi", n, kv);
                    self.b.bin("arith.maxsi", w, zero)
                }
                Bound::Dyn(v) => {
                    let w = self.wrap_negative(v, n);
                    self.b.bin("arith.maxsi", w, zero)
                }
            };
            let last = match hi {
                Bound::Absent => n,
                Bound::Const(k) if k >= 0 => {
                    let kv = self.b.int(k, "i64");
                    self.b.bin("arith.minsi", kv, n)
                }
                Bound::Const(k) => {
                    let kv = self.b.int(k, "i64");
                    self.b.bin("arith.addi", n, kv)
                }
                Bound::Dyn(v) => {
                    let w = self.wrap_negative(v, n);
                    self.b.bin("arith.minsi", w, n)
                }
            };
            let d = self.b.bin("arith.subi", last, first);
            let mut len = self.b.bin("arith.maxsi", d, zero);
            if step != 1 {
                len = self.ceil_div(len, step);
            }
            (first, len)
        } else {
            // Bounds in [-1, n-1]; the default start is the last element and the default
            // stop lies before the first.
            let one = self.b.int(1, "i64");
            let nm1 = self.b.bin("arith.subi", n, one);
            let first = match lo {
                Bound::Absent => nm1,
                b => self.clamp_bound(b, n, -1),
            };
            let last = match hi {
                Bound::Absent => self.b.int(-1, "i64"),
                b => self.clamp_bound(b, n, -1),
            };
            let d = self.b.bin("arith.subi", first, last);
            let d = self.b.bin("arith.maxsi", d, zero);
            (first, self.ceil_div(d, -step))
        }
    }

    /// `v < 0 ? v + n : v`: a bound counted from the end when negative.
    fn wrap_negative(&mut self, v: Value, n: Value) -> Value {
        let zero = self.b.int(0, "i64");
        let neg = self.b.cmpi(IPred::Slt, v, zero);
        let w = self.b.bin("arith.addi", v, n);
        self.b.select(neg, w, v)
    }

    /// `ceil(x / s)` for `x >= 0`, `s > 0`.
    fn ceil_div(&mut self, x: Value, s: i64) -> Value {
        let sm1 = self.b.int(s - 1, "i64");
        let sv = self.b.int(s, "i64");
        let t = self.b.bin("arith.addi", x, sm1);
        self.b.bin("arith.divsi", t, sv)
    }

    /// A bound counted from the end when negative, clamped to `[low, n + low]` (`low` is 0
    /// for a positive step, -1 for a negative one).
    fn clamp_bound(&mut self, b: Bound, n: Value, low: i64) -> Value {
        let lo = self.b.int(low, "i64");
        let top = if low == 0 {
            n
        } else {
            let l = self.b.int(low, "i64");
            self.b.bin("arith.addi", n, l)
        };
        match b {
            Bound::Absent => unreachable!("absent bounds have defaults"),
            Bound::Const(k) if k >= 0 => {
                let kv = self.b.int(k, "i64");
                self.b.bin("arith.minsi", kv, top)
            }
            Bound::Const(k) => {
                let kv = self.b.int(k, "i64");
                let w = self.b.bin("arith.addi", n, kv);
                self.b.bin("arith.maxsi", w, lo)
            }
            Bound::Dyn(v) => {
                let zero = self.b.int(0, "i64");
                let neg = self.b.cmpi(IPred::Slt, v, zero);
                let w = self.b.bin("arith.addi", v, n);
                let w = self.b.select(neg, w, v);
                let w = self.b.bin("arith.minsi", w, top);
                self.b.bin("arith.maxsi", w, lo)
            }
        }
    }

    /// `base + step * x` (i64), without ops for a zero base or a unit step.
    pub(super) fn affine(&mut self, base: Option<Value>, step: i64, x: Value) -> Value {
        let sx = if step == 1 {
            x
        } else {
            let s = self.b.int(step, "i64");
            self.b.bin("arith.muli", x, s)
        };
        match base {
            None => sx,
            Some(b) => self.b.bin("arith.addi", b, sx),
        }
    }

    /// Applies subscripts to a view: scalar indices fix axes, slices narrow them; axes
    /// not indexed stay whole. `None` (a new axis) is only allowed in tensor
    /// expressions. Returns the new view (rank 0 when every axis is indexed).
    pub(super) fn subview(&mut self, view: &View, indices: &[Index], span: Span) -> DResult<View> {
        if let Some(Index::NewAxis(sp)) = indices.iter().find(|i| matches!(i, Index::NewAxis(_))) {
            return Err(self
                .err(
                    *sp,
                    "`None` (a new axis) can only be used inside an array expression, not in a view bound to a name",
                )
                .with_note("help: write it where the value is used, e.g. `C[:, :] = a[:, None] * b[None, :]`"));
        }
        if indices.len() > view.rank() {
            return Err(self.err(
                span,
                format!(
                    "too many indices: the array has {} dimension(s), {} given",
                    view.rank(),
                    indices.len()
                ),
            ));
        }
        let mut out = view.clone();
        let mut order = vec![];
        for (k, &b) in view.order.iter().enumerate() {
            let VAxis::Range { start, step, len } = view.axes[b] else {
                unreachable!("a view's axes are ranges")
            };
            match indices.get(k) {
                None => order.push(b),
                Some(Index::Expr(x)) => {
                    let i = self.index_value(x, || None)?;
                    let i = if const_int(x).is_some_and(|c| c < 0) {
                        let n = self.base_len(view, b);
                        self.b.bin("arith.addi", n, i)
                    } else {
                        i
                    };
                    out.axes[b] = VAxis::Index(self.affine(start, step, i));
                }
                Some(Index::Slice {
                    lower, upper, step: st, ..
                }) => {
                    let s = self.slice_step(st.as_deref())?;
                    let lo = self.slice_bound(lower.as_deref())?;
                    let hi = self.slice_bound(upper.as_deref())?;
                    if let (Bound::Absent, Bound::Absent, 1) = (lo, hi, s) {
                        order.push(b);
                        continue;
                    }
                    let n = match len {
                        Some(l) => l,
                        None => self.memref_dim(view.base, b),
                    };
                    let (first, count) = self.slice_range(lo, hi, s, n);
                    let start2 = self.affine(start, step, first);
                    out.axes[b] = VAxis::Range {
                        start: Some(start2),
                        step: step * s,
                        len: Some(count),
                    };
                    order.push(b);
                }
                Some(Index::NewAxis(_)) => unreachable!("rejected above"),
            }
        }
        out.order = order;
        Ok(out)
    }

    /// An integer index expression as i64.
    pub(super) fn index_value(&mut self, x: &Expr, _hint: impl FnOnce() -> Option<Value>) -> DResult<Value> {
        let (v, t) = self.scalar(x)?;
        if t.is_float() {
            return Err(self.err(x.span, "array indices must be integers"));
        }
        Ok(self.b.cast(v, t, STy::INT))
    }

    /// The base-array indices (index type) of the element of a view at view indices
    /// `idx` (i64, one per view axis).
    pub(super) fn view_element(&mut self, view: &View, idx: &[Value]) -> Vec<Value> {
        let mut at: Vec<Option<Value>> = vec![None; view.axes.len()];
        for (k, &b) in view.order.iter().enumerate() {
            if let VAxis::Range { start, step, .. } = view.axes[b] {
                at[b] = Some(self.affine(start, step, idx[k]));
            }
        }
        let mut out = vec![];
        for (b, a) in view.axes.iter().enumerate() {
            let v = match (a, at[b]) {
                (_, Some(v)) => v,
                (VAxis::Index(i), None) => *i,
                (VAxis::Range { .. }, None) => unreachable!("every range axis is in the order"),
            };
            out.push(self.b.to_index(v));
        }
        out
    }

    /// The view with its axes reversed (`.T`).
    pub(super) fn transposed(view: &View) -> View {
        let mut t = view.clone();
        t.order.reverse();
        t
    }
}
