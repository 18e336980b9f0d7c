//! Scalar expressions: names, subscripts, operators, comparisons, conditionals.

use super::*;
use crate::sema::types::{Power, Sign};
use appy_ir::status::SiteKind;

/// [`Lower::element_ref`]'s result: array, element type, indices, in-bounds flag.
pub(super) type ElementRef = (Value, DType, Vec<Value>, Option<Value>);

impl Lower<'_> {
    // ----- expressions ---------------------------------------------------------------

    pub(super) fn as_bool(&mut self, v: V, span: Span) -> DResult<Value> {
        match v {
            V::S(x, t) => Ok(self.b.cast(x, t, STy::BOOL)),
            _ => Err(self.err(span, "expected a scalar condition")),
        }
    }

    pub(super) fn scalar(&mut self, e: &Expr) -> DResult<(Value, STy)> {
        match self.expr(e)? {
            V::S(x, t) => Ok((x, t)),
            V::Arr(..) | V::View(_) => Err(self
                .err(e.span, "expected a scalar, found an array")
                .with_note("help: index the array, e.g. `a[i]`, or reduce it, e.g. `np.sum(a)`")),
            V::Tuple(_) => Err(self.err(e.span, "expected a scalar, found a tuple")),
            V::DType(_) => Err(self.err(e.span, "expected a scalar, found a dtype")),
            V::Vidx { .. } => Err(self.err(e.span, "expected a scalar, found a vector index")),
        }
    }

    pub(super) fn expr(&mut self, e: &Expr) -> DResult<V> {
        // Array-valued expressions: views, new arrays, rank-0 results.
        let known_scalar = std::ptr::eq(std::mem::replace(&mut self.known_scalar, std::ptr::null()), e);
        if !known_scalar && !matches!(e.kind, ExprKind::Name(_)) && self.arank(e).is_some() {
            return self.array_value(e);
        }
        match &e.kind {
            ExprKind::Int(i) => Ok(V::S(self.b.int(*i, "i64"), STy::INT)),
            ExprKind::Float(f) => Ok(V::S(self.b.float(*f, "f64"), STy::FLOAT)),
            ExprKind::Bool(b) => Ok(V::S(self.b.int(*b as i64, "i1"), STy::BOOL)),
            ExprKind::None => Err(self.err(e.span, "`None` is only allowed as an index (a new axis)")),
            // Complex values are split into their parts before lowering (`sema::complex`).
            ExprKind::Imag(_) => Err(self.err(e.span, "complex values are not supported here")),
            ExprKind::Str(_) => Err(self.err(e.span, "strings are not supported here")),
            ExprKind::FString(_) => Err(self
                .err(e.span, "f-strings are only supported in `print(...)`")
                .with_note("help: print the values: `print(f\"x = {x}\")`")),
            ExprKind::Name(n) => match self.lookup(n).cloned() {
                Some(Binding::Slot(slot, t)) => Ok(V::S(self.b.load(slot, &[]), t)),
                Some(Binding::Val(v)) => Ok(v),
                Some(Binding::Private(sp)) => {
                    let (l, c) = self.file.line_col(sp.start);
                    Err(self
                        .err(
                            e.span,
                            format!("`{n}` is private to the loop at line {l}, column {c}; its value is not available after the loop"),
                        )
                        .with_note(format!(
                            "help: to get a value out of a parallel loop, make `{n}` an array or a `shared({n})` reduction"
                        )))
                }
                None => {
                    if let Some(q) = qualify(&self.imports, e)
                        && q == "appy.MVL"
                    {
                        return Ok(V::S(self.b.op1("appy.mvl", &[], "i64", &[]), STy::INT));
                    }
                    Err(self.err(e.span, format!("undefined name `{n}`")))
                }
            },
            ExprKind::Attribute { value, attr } => {
                let q = qualify(&self.imports, e).unwrap_or_default();
                if q == "appy.MVL" {
                    return Ok(V::S(self.b.op1("appy.mvl", &[], "i64", &[]), STy::INT));
                }
                if q == "numpy.nan" || q == "math.nan" || q == "numpy.NaN" {
                    return Ok(V::S(self.b.float(f64::NAN, "f64"), STy::FLOAT));
                }
                if q == "numpy.inf" || q == "math.inf" || q == "numpy.Inf" {
                    return Ok(V::S(self.b.float(f64::INFINITY, "f64"), STy::FLOAT));
                }
                if q == "numpy.pi" || q == "math.pi" {
                    return Ok(V::S(self.b.float(std::f64::consts::PI, "f64"), STy::FLOAT));
                }
                if q == "numpy.e" || q == "math.e" {
                    return Ok(V::S(self.b.float(std::f64::consts::E, "f64"), STy::FLOAT));
                }
                if attr.name == "dtype" {
                    return Ok(V::DType(self.dtype_of(e)?));
                }
                if attr.name == "shape" || attr.name == "size" || attr.name == "ndim" {
                    let v = self.expr(value)?;
                    if let Some(view) = self.view_of(&v) {
                        let r = view.rank();
                        let dims = match v {
                            V::Arr(m, _, r) => (0..r).map(|i| self.memref_dim(m, i)).collect(),
                            _ => self.view_shape(&view),
                        };
                        return Ok(match attr.name.as_str() {
                            "shape" => V::Tuple(dims.into_iter().map(|d| V::S(d, STy::INT)).collect()),
                            "ndim" => V::S(self.b.int(r as i64, "i64"), STy::INT),
                            _ => {
                                let mut p = self.b.int(1, "i64");
                                for d in dims {
                                    p = self.b.bin("arith.muli", p, d);
                                }
                                V::S(p, STy::INT)
                            }
                        });
                    }
                    return Err(self.err(value.span, format!("`.{}` needs an array", attr.name)));
                }
                Err(self.err(e.span, format!("unsupported attribute `{}`", q.trim_start_matches("builtins."))))
            }
            ExprKind::Subscript { value, indices } => {
                // Tuples (shapes) index with constants.
                if let V::Tuple(vs) = self.expr(value)? {
                    if let [Index::Expr(ix)] = indices.as_slice()
                        && let Some(k) = const_int(ix)
                    {
                        let n = vs.len() as i64;
                        let k = if k < 0 { k + n } else { k };
                        if (0..n).contains(&k) {
                            return Ok(vs[k as usize].clone());
                        }
                        return Err(self.err(ix.span, format!("index {k} is out of range for a tuple of {n}")));
                    }
                    return Err(self.err(e.span, "tuples can only be indexed with an integer constant"));
                }
                let (m, dt, idx, ok) = self.element_ref(value, indices, e.span)?;
                self.set_loc(e.span);
                let x = self.guarded_load(ok, m, &idx);
                Ok(V::S(self.loaded_form(x, dt), STy::strong(dt)))
            }
            ExprKind::Tuple(es) => {
                let mut vs = vec![];
                for x in es {
                    vs.push(self.expr(x)?);
                }
                Ok(V::Tuple(vs))
            }
            ExprKind::Unary { op, operand } => {
                let (x, t) = self.scalar(operand)?;
                Ok(match op {
                    UnaryOp::Pos => V::S(x, t),
                    UnaryOp::Neg => {
                        if t.dt == DType::Bool {
                            let t2 = types::unary(*op, t);
                            let y = self.b.cast(x, t, t2);
                            V::S(self.negate(y, t2.dt), t2)
                        } else {
                            V::S(self.negate(x, t.dt), t)
                        }
                    }
                    UnaryOp::Not => {
                        let c = self.b.cast(x, t, STy::BOOL);
                        let one = self.b.int(1, "i1");
                        V::S(self.b.bin("arith.xori", c, one), STy::BOOL)
                    }
                    UnaryOp::Invert => {
                        if t.is_float() {
                            return Err(self.err(e.span, "`~` needs an integer or boolean operand"));
                        }
                        let ones = self.b.int(-1, t.mlir());
                        let ones = if t.dt == DType::Bool { self.b.int(1, "i1") } else { ones };
                        V::S(self.b.bin("arith.xori", x, ones), t)
                    }
                })
            }
            ExprKind::Binary { op, lhs, rhs } => {
                // `e` is not an array (the rank check above), so neither operand is
                // (`arank` of a binary operation is the larger of its operands').
                let scalar_operands = *op != BinOp::MatMul;
                if scalar_operands {
                    self.known_scalar = &**lhs;
                }
                let a = self.scalar(lhs)?;
                if scalar_operands {
                    self.known_scalar = &**rhs;
                }
                let b = self.scalar(rhs)?;
                self.set_loc(e.span);
                if *op == BinOp::Pow {
                    return self.power(a, b, lhs, rhs, e.span, false);
                }
                self.binary(*op, a, b, e.span)
            }
            ExprKind::Compare { first, rest } => {
                let mut acc: Option<Value> = None;
                let mut left = self.scalar(first)?;
                for (op, r) in rest {
                    let right = self.scalar(r)?;
                    let c = self.compare(*op, left, right);
                    acc = Some(match acc {
                        None => c,
                        Some(p) => self.b.bin("arith.andi", p, c),
                    });
                    left = right;
                }
                Ok(V::S(acc.expect("at least one comparison"), STy::BOOL))
            }
            ExprKind::BoolOp { op, values } => {
                // Short-circuit evaluation through scf.if, so `i < n and a[i] > 0` never
                // reads out of bounds.
                let (first, rest) = values.split_first().expect("two operands");
                let v = self.expr(first)?;
                let mut acc = self.as_bool(v, first.span)?;
                for r in rest {
                    self.b.begin();
                    let v = self.expr(r)?;
                    let rv = self.as_bool(v, r.span)?;
                    self.b.push(Builder::yield_op(&[rv]));
                    let then = self.b.end();
                    let res = self.b.m.value("i1");
                    let short = self.b.int((*op == BoolOpKind::Or) as i64, "i1");
                    let (t_ops, e_ops) = if *op == BoolOpKind::And {
                        (then, vec![Builder::yield_op(&[short])])
                    } else {
                        (vec![Builder::yield_op(&[short])], then)
                    };
                    let ifop = Op::new("scf.if")
                        .with_operands([acc])
                        .with_results([res])
                        .with_region(Builder::region(vec![], t_ops))
                        .with_region(Builder::region(vec![], e_ops));
                    self.b.push(ifop);
                    acc = res;
                }
                Ok(V::S(acc, STy::BOOL))
            }
            ExprKind::IfExp { cond, then, orelse } => {
                let c = self.expr(cond)?;
                let c = self.as_bool(c, cond.span)?;
                self.b.begin();
                let (tv, tt) = self.scalar(then)?;
                let t_ops_marker = self.b.end();
                self.b.begin();
                let (ev, et) = self.scalar(orelse)?;
                let e_ops_marker = self.b.end();
                let rt = promote(tt, et);
                let mut t_ops = t_ops_marker;
                let mut e_ops = e_ops_marker;
                self.b.begin();
                let tc = self.b.cast(tv, tt, rt);
                t_ops.extend(self.b.end());
                t_ops.push(Builder::yield_op(&[tc]));
                self.b.begin();
                let ec = self.b.cast(ev, et, rt);
                e_ops.extend(self.b.end());
                e_ops.push(Builder::yield_op(&[ec]));
                let res = self.b.m.value(rt.mlir());
                let ifop = Op::new("scf.if")
                    .with_operands([c])
                    .with_results([res])
                    .with_region(Builder::region(vec![], t_ops))
                    .with_region(Builder::region(vec![], e_ops));
                self.b.push(ifop);
                Ok(V::S(res, rt))
            }
            ExprKind::Call { func, args, .. } if matches!(&func.kind, ExprKind::Name(n) if n == crate::sema::prelude::SUM_ZERO) => {
                let [x] = args.as_slice() else {
                    return Err(self.err(e.span, "internal: the prelude's sum zero takes one value"));
                };
                // Only its type: the ops that compute it are discarded (an empty array
                // has no element to read).
                self.b.begin();
                let typed = self.scalar(x);
                let _ = self.b.end();
                let rt = types::reduced(Reduction::Sum, typed?.1);
                let zero = self.b.int(0, "i64");
                Ok(V::S(self.b.cast(zero, STy::INT, rt), rt))
            }
            ExprKind::Call { func, args, kwargs } => self.call(func, args, kwargs, e),
        }
    }

    /// The array, element type and indices of the element `arr[indices]`, and in
    /// checked mode whether they are in bounds (the access must then be guarded by it).
    pub(super) fn element_ref(&mut self, arr: &Expr, indices: &[Index], span: Span) -> DResult<ElementRef> {
        let v = self.expr(arr)?;
        if let V::View(view) = &v {
            return self.view_element_ref(view, indices, span);
        }
        let site = self.index_site(span);
        let mut all_ok: Option<Value> = None;
        let V::Arr(m, dt, rank) = v else {
            return Err(self.err(arr.span, "only arrays can be subscripted"));
        };
        if indices.len() != rank {
            let has_slice = indices.iter().any(|i| !matches!(i, Index::Expr(_)));
            if !has_slice {
                return Err(self.err(
                    span,
                    format!(
                        "array has {rank} dimension(s) but {} index(es) were given; appy needs one index per dimension",
                        indices.len()
                    ),
                ));
            }
        }
        let mut idx = vec![];
        for (d, i) in indices.iter().enumerate() {
            match i {
                Index::Expr(x) => {
                    let (v, t) = self.scalar(x)?;
                    if t.is_float() {
                        return Err(self.err(x.span, "array indices must be integers"));
                    }
                    let mut v = self.b.cast(v, t, STy::INT);
                    if let Some(site) = site {
                        let c = self.b.index(d as i64);
                        let dim = self.b.op1("memref.dim", &[m, c], "index", &[]);
                        let dim = self.b.to_i64(dim);
                        let (w, ok) = self.check_index(v, dim, d, site);
                        all_ok = Some(match all_ok {
                            Some(a) => self.b.bin("arith.andi", a, ok),
                            None => ok,
                        });
                        v = w;
                    } else if const_int(x).is_some_and(|k| k < 0) {
                        // Python's negative indices count from the end; literal ones are exact.
                        let c = self.b.index(d as i64);
                        let dim = self.b.op1("memref.dim", &[m, c], "index", &[]);
                        let dim = self.b.to_i64(dim);
                        v = self.b.bin("arith.addi", dim, v);
                    }
                    idx.push(self.b.to_index(v));
                }
                Index::Slice { span, .. } => {
                    return Err(self
                        .err(*span, "slices (sliced index notation) are not supported yet in this context")
                        .with_note("help: write an explicit `#pragma simd` loop over the elements"));
                }
                Index::NewAxis(sp) => {
                    return Err(self.err(
                        *sp,
                        "`None` (new axis) is only supported in tensor expressions, which are not supported yet",
                    ));
                }
            }
        }
        Ok((m, dt, idx, all_ok))
    }

    /// An element of a view: one integer index per axis of the view.
    fn view_element_ref(&mut self, view: &view::View, indices: &[Index], span: Span) -> DResult<ElementRef> {
        if indices.len() != view.rank() || indices.iter().any(|i| !matches!(i, Index::Expr(_))) {
            return Err(self.err(span, format!("expected {} integer index(es) for this view", view.rank())));
        }
        let mut idx = vec![];
        let shape = self.view_shape(view);
        let site = self.index_site(span);
        let mut all_ok: Option<Value> = None;
        for (k, i) in indices.iter().enumerate() {
            let Index::Expr(x) = i else { unreachable!("checked") };
            let mut v = self.index_value(x, || None)?;
            if let Some(site) = site {
                let (w, ok) = self.check_index(v, shape[k], k, site);
                all_ok = Some(match all_ok {
                    Some(a) => self.b.bin("arith.andi", a, ok),
                    None => ok,
                });
                v = w;
            } else if const_int(x).is_some_and(|c| c < 0) {
                v = self.b.bin("arith.addi", shape[k], v);
            }
            idx.push(v);
        }
        let base = self.view_element(view, &idx);
        Ok((view.base, view.dt, base, all_ok))
    }

    /// In `a op b`, an operand of [`Power::PyUnknownSign`] (a float that Python
    /// would make an int when the exponent is not negative) whose int and float forms
    /// give `a op b` one type, for each form of the other operand: a float use.
    fn float_uses_of(&mut self, op: BinOp, (a, ta): (Value, STy), (b, tb): (Value, STy)) {
        let pending = |v: Value, me: &Self| me.sign_dependent.iter().any(|s| s.value == v);
        let (pa, pb) = (pending(a, self), pending(b, self));
        if !(pa || pb)
            || matches!(
                op,
                BinOp::MatMul | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::LShift | BinOp::RShift
            )
        {
            return;
        }
        let forms = |p: bool, t: STy| if p { vec![STy::INT, STy::FLOAT] } else { vec![t] };
        let mut types = forms(pa, ta)
            .into_iter()
            .flat_map(|x| forms(pb, tb).into_iter().map(move |y| types::binary(op, x, y)));
        let first = types.next();
        if types.all(|t| Some(t) == first) {
            self.float_use(a);
            self.float_use(b);
        }
    }

    /// Records a negative exponent of a NumPy integer power (`neg`, with exponent `y`)
    /// as an error at `span`, as NumPy raises.
    fn negative_power(&mut self, neg: Value, y: Value, span: Span) {
        if self.b.const_int_of(y).is_some_and(|k| k >= 0) {
            return;
        }
        let zero = self.b.int(0, "i64");
        let site = self.new_site(span, SiteKind::NegativePower);
        self.record_fault(neg, site, y, zero, 0);
    }

    /// Python's integer `x % y` for a nonzero `y`: the result takes the sign of `y`.
    fn int_mod(&mut self, x: Value, y: Value) -> Value {
        let r = self.b.bin("arith.remsi", x, y);
        let ty = self.b.m.ty(x).to_string();
        let zero = self.b.int(0, &ty);
        let rnz = self.b.cmpi(IPred::Ne, r, zero);
        let rneg = self.b.cmpi(IPred::Slt, r, zero);
        let yneg = self.b.cmpi(IPred::Slt, y, zero);
        let diff = self.b.bin("arith.xori", rneg, yneg);
        let fix = self.b.bin("arith.andi", rnz, diff);
        let ry = self.b.bin("arith.addi", r, y);
        self.b.select(fix, ry, r)
    }

    /// `x ** y` (`numpy`: `np.power(x, y)`): Python's `int ** int` is a float when the
    /// exponent is negative, NumPy's integer power of a negative exponent an error
    /// ([`types::power`]).
    pub(super) fn power(
        &mut self,
        (a, ta): (Value, STy),
        (b, tb): (Value, STy),
        base: &Expr,
        exp: &Expr,
        span: Span,
        numpy: bool,
    ) -> DResult<V> {
        let sign = types::sign_of(exp, &|n| self.sema.nonneg.contains(n));
        let p = types::power(ta, tb, sign, numpy);
        let text = |e: &Expr| self.file.text().get(e.span.start..e.span.end).unwrap_or("").to_string();
        match p {
            Power::Float | Power::Int => self.binary(BinOp::Pow, (a, ta), (b, tb), span),
            Power::PyNegative => {
                let Sign::Const(k) = sign else {
                    unreachable!("a constant exponent")
                };
                if let Some(x) = types::fold_int(base) {
                    if x == 0 {
                        return Err(self.err(span, "0 cannot be raised to a negative power (Python raises ZeroDivisionError)"));
                    }
                    return Ok(V::S(self.b.float((x as f64).powf(k as f64), "f64"), STy::FLOAT));
                }
                // As CPython computes it: `float(x) ** float(k)`.
                let x = self.b.cast(a, ta, STy::FLOAT);
                let y = self.b.float(k as f64, "f64");
                Ok(V::S(self.b.bin("math.powf", x, y), STy::FLOAT))
            }
            Power::PyUnknownSign => {
                // The int result where it is exact (a non-negative exponent, a result
                // below 2**62), converted; else `float(x) ** float(y)`, which is what
                // Python computes for a negative `y` (and close to the int for a huge
                // one, which int64 would not hold).
                let x = self.b.cast(a, ta, STy::INT);
                let y = self.b.cast(b, tb, STy::INT);
                let ip = self.int_pow(x, y, STy::INT);
                let ipf = self.b.cast(ip, STy::INT, STy::FLOAT);
                let xf = self.b.cast(x, STy::INT, STy::FLOAT);
                let yf = self.b.cast(y, STy::INT, STy::FLOAT);
                let fp = self.b.bin("math.powf", xf, yf);
                let zero = self.b.int(0, "i64");
                let neg = self.b.cmpi(IPred::Slt, y, zero);
                let mag = self.b.op1("math.absf", &[fp], "f64", &[]);
                let limit = self.b.float(2f64.powi(62), "f64");
                let big = self.b.cmpf(FPred::Oge, mag, limit);
                let use_float = self.b.bin("arith.ori", neg, big);
                let r = self.b.select(use_float, fp, ipf);
                self.sign_dependent.push(SignDependent {
                    value: r,
                    span,
                    base: text(base),
                    exp: text(exp),
                });
                Ok(V::S(r, STy::FLOAT))
            }
            Power::NumpyNegative => {
                let (x, y) = (text(base), text(exp));
                let y = if types::fold_int(exp).is_some() && !y.contains(['(', ' ']) {
                    format!("{y}.0")
                } else {
                    format!("float({y})")
                };
                Err(self
                    .err(
                        span,
                        "Integers to negative integer powers are not allowed (NumPy raises ValueError)",
                    )
                    .with_note(format!("help: a float exponent gives NumPy's float result: `{x} ** {y}`")))
            }
            Power::NumpyUnknownSign => {
                let t = types::binary(BinOp::Pow, ta, tb);
                let x = self.b.cast(a, ta, t);
                let y = self.b.cast(b, tb, STy::INT);
                // NumPy raises for a negative exponent: an error through the status
                // buffer (also in a whole-array expression: an integer power has a
                // loop, which element-wise ops refuse anyway).
                let zero = self.b.int(0, "i64");
                let neg = self.b.cmpi(IPred::Slt, y, zero);
                self.negative_power(neg, y, span);
                Ok(V::S(self.int_pow(x, y, t), t))
            }
        }
    }

    /// `x ** y` for integers `x` (of type `t`) and `y` (i64) by repeated multiplication;
    /// a negative `y` gives 1.
    fn int_pow(&mut self, x: Value, y: Value, t: STy) -> Value {
        let zero = self.b.int(0, "i64");
        let y = self.b.bin("arith.maxsi", y, zero);
        let n = self.b.to_index(y);
        let c0 = self.b.index(0);
        let c1 = self.b.index(1);
        let one = self.b.int(1, t.mlir());
        let iv = self.b.m.value("index");
        let acc = self.b.m.value(t.mlir());
        let r = self.b.m.value(t.mlir());
        self.b.begin();
        let next = self.b.bin("arith.muli", acc, x);
        self.b.push(Builder::yield_op(&[next]));
        let body = self.b.end();
        self.b.push(
            Op::new("scf.for")
                .with_operands([c0, n, c1, one])
                .with_results([r])
                .with_region(Builder::region(vec![iv, acc], body)),
        );
        r
    }

    /// Marks a value of [`Power::PyUnknownSign`] as used where its type does not
    /// matter: as a float.
    pub(super) fn float_use(&mut self, v: Value) {
        self.sign_dependent.retain(|s| s.value != v);
    }

    /// The error for the first `x ** k` of [`Power::PyUnknownSign`] not used as a float;
    /// with `within`, the first inside that span (an error there is about it: `a[2 ** k]`
    /// is not an integer index).
    pub(super) fn sign_dependent_error(&self, within: Option<Span>) -> Option<Diagnostic> {
        let s = self
            .sign_dependent
            .iter()
            .filter(|s| within.is_none_or(|w| w.start <= s.span.start && s.span.end <= w.end))
            .min_by_key(|s| s.span.start)?;
        Some(self.sign_error(s))
    }

    /// The error for `v` if it is a value of [`Power::PyUnknownSign`] (assigned to a
    /// variable, whose type it would decide).
    pub(super) fn sign_dependent_value(&self, v: Value) -> Option<Diagnostic> {
        self.sign_dependent.iter().find(|s| s.value == v).map(|s| self.sign_error(s))
    }

    fn sign_error(&self, s: &SignDependent) -> Diagnostic {
        let (x, k) = (&s.base, &s.exp);
        let fx = if x.chars().all(|c| c.is_ascii_digit()) {
            format!("{x}.0")
        } else {
            format!("float({x})")
        };
        self.err(
            s.span,
            format!(
                "`{x} ** {k}` is an int when `{k}` >= 0 and a float when `{k}` < 0 (Python's rule for ints), and appy cannot tell the sign of `{k}` here"
            ),
        )
        .with_note(format!(
            "help: write `{fx} ** {k}` for a float, or, for an int, an exponent appy can see is not negative (`abs({k})` when `{k}` never is, a variable of `range(...)`); appy computes an int power whose exponent may be negative only where the result is used as a float (`a[i] * {x} ** {k}` with a float `a[i]`)"
        ))
    }

    pub(super) fn binary(&mut self, op: BinOp, (a, ta): (Value, STy), (b, tb): (Value, STy), span: Span) -> DResult<V> {
        self.float_uses_of(op, (a, ta), (b, tb));
        for (v, tv, other) in [(a, ta, tb), (b, tb, ta)] {
            if !other.weak {
                self.int_fits(v, tv, other.dt, span)?;
            }
        }
        let t = types::binary(op, ta, tb);
        if matches!(op, BinOp::Pow) && t.dt.is_int() {
            // int ** int by repeated multiplication.
            let x = self.b.cast(a, ta, t);
            let y = self.b.cast(b, tb, STy::INT);
            return Ok(V::S(self.int_pow(x, y, t), t));
        }
        if matches!(op, BinOp::Pow) && !tb.is_float() {
            let x = self.b.cast(a, ta, t);
            if let Some(k @ 1..=4) = self.const_of(b) {
                // Small integer powers are exact products, as in NumPy.
                let mut r = x;
                for _ in 1..k {
                    r = self.b.bin("arith.mulf", r, x);
                }
                return Ok(V::S(r, t));
            }
            let y = self.b.cast(b, tb, t);
            return Ok(V::S(self.b.bin("math.powf", x, y), t));
        }
        let x = self.b.cast(a, ta, t);
        let y = self.b.cast(b, tb, t);
        let f = t.is_float();
        let name = match op {
            BinOp::Add => {
                if f {
                    "arith.addf"
                } else {
                    "arith.addi"
                }
            }
            BinOp::Sub => {
                if f {
                    "arith.subf"
                } else {
                    "arith.subi"
                }
            }
            BinOp::Mul => {
                if f {
                    "arith.mulf"
                } else {
                    "arith.muli"
                }
            }
            BinOp::Div => "arith.divf",
            BinOp::Pow => "math.powf",
            BinOp::FloorDiv => {
                if f {
                    let q = self.b.bin("arith.divf", x, y);
                    return Ok(V::S(self.b.op1("math.floor", &[q], t.mlir(), &[]), t));
                }
                let div = if t.dt.is_unsigned() { "arith.divui" } else { "arith.floordivsi" };
                let q = self.guarded_int_div(x, y, t, span, SiteKind::FloorDiv, |me, x, y| me.b.bin(div, x, y));
                return Ok(V::S(q, t));
            }
            BinOp::Mod if !f => {
                let r = if t.dt.is_unsigned() {
                    self.guarded_int_div(x, y, t, span, SiteKind::Mod, |me, x, y| me.b.bin("arith.remui", x, y))
                } else {
                    self.guarded_int_div(x, y, t, span, SiteKind::Mod, |me, x, y| me.int_mod(x, y))
                };
                return Ok(V::S(r, t));
            }
            BinOp::Mod => {
                // Python modulo: the result takes the sign of the divisor.
                let r = self.b.bin(if f { "arith.remf" } else { "arith.remsi" }, x, y);
                let zero = self.b.scalar(0.0, t);
                let (rnz, rneg, yneg) = if f {
                    (
                        self.b.cmpf(FPred::Une, r, zero),
                        self.b.cmpf(FPred::Olt, r, zero),
                        self.b.cmpf(FPred::Olt, y, zero),
                    )
                } else {
                    (
                        self.b.cmpi(IPred::Ne, r, zero),
                        self.b.cmpi(IPred::Slt, r, zero),
                        self.b.cmpi(IPred::Slt, y, zero),
                    )
                };
                let diff = self.b.bin("arith.xori", rneg, yneg);
                let fix = self.b.bin("arith.andi", rnz, diff);
                let ry = self.b.bin(if f { "arith.addf" } else { "arith.addi" }, r, y);
                return Ok(V::S(self.b.select(fix, ry, r), t));
            }
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::LShift | BinOp::RShift => {
                if f {
                    return Err(self.err(span, "bitwise operators need integer or boolean operands"));
                }
                if matches!(op, BinOp::LShift | BinOp::RShift) && t.dt.is_int() {
                    return Ok(V::S(self.shift(op == BinOp::LShift, x, y, t), t));
                }
                match op {
                    BinOp::BitAnd => "arith.andi",
                    BinOp::BitOr => "arith.ori",
                    BinOp::BitXor => "arith.xori",
                    BinOp::LShift => "arith.shli",
                    _ => "arith.shrsi",
                }
            }
            BinOp::MatMul => {
                return Err(self
                    .err(span, "`@` needs matrices or vectors in sliced index notation, not scalars")
                    .with_note("help: e.g. `C[:M, :N] = A[:M, :K] @ B[:K, :N]`"));
            }
        };
        Ok(V::S(self.b.bin(name, x, y), t))
    }

    /// An error if `v`, a Python int constant (of type `t`), does not fit the narrow or
    /// unsigned integer type `to` it meets: NumPy raises OverflowError
    /// (`img[i] + 300`, `out[i] = -1` with uint8 arrays, `np.uint8(-1)`).
    pub(super) fn int_fits(&self, v: Value, t: STy, to: DType, span: Span) -> DResult<()> {
        let narrow = to.is_unsigned() || matches!(to, DType::I8 | DType::I16 | DType::I32);
        if t == STy::INT
            && narrow
            && let Some(k) = self.b.const_int_of(v)
            && !to.holds(k)
        {
            return Err(self
                .err(span, format!("NumPy raises OverflowError here: Python integer {k} out of bounds for {to}"))
                .with_note(format!(
                    "help: make the constant a wider NumPy integer (`np.int64({k})`) to compute in that type, or convert the {to} value first"
                )));
        }
        Ok(())
    }

    /// [`Self::int_fits`] for a constant assigned to variable `name`, whose type (the
    /// join of everything assigned to it) is `to`.
    pub(super) fn var_int_fits(&self, name: &str, v: Value, t: STy, to: DType, span: Span) -> DResult<()> {
        self.int_fits(v, t, to, span).map_err(|_| {
            let k = self.b.const_int_of(v).unwrap_or_default();
            self.err(
                span,
                format!("`{name}` holds {to} values elsewhere, and the Python integer {k} is out of bounds for {to} (appy gives a variable one type)"),
            )
            .with_note(format!(
                "help: initialise `{name}` with a value of its type (e.g. an element), or make it wider: `{name} = np.int64({k})`"
            ))
        })
    }

    /// `x << y` or `x >> y` on integers of type `t` with NumPy's meaning for every
    /// shift count (MLIR's shifts are poison from the width on): a count of the width
    /// or more (or negative, read as unsigned as NumPy does) gives 0 to the left and the
    /// sign (0 or -1) to the right.
    fn shift(&mut self, left: bool, x: Value, y: Value, t: STy) -> Value {
        let ty = t.mlir();
        let bits = self.b.int(8 * t.dt.size() as i64, ty);
        let fits = self.b.cmpi(IPred::Ult, y, bits);
        if left {
            let zero = self.b.int(0, ty);
            let n = self.b.select(fits, y, zero);
            let v = self.b.bin("arith.shli", x, n);
            self.b.select(fits, v, zero)
        } else if t.dt.is_unsigned() {
            let zero = self.b.int(0, ty);
            let n = self.b.select(fits, y, zero);
            let v = self.b.bin("arith.shrui", x, n);
            self.b.select(fits, v, zero)
        } else {
            let top = self.b.int(8 * t.dt.size() as i64 - 1, ty);
            let n = self.b.select(fits, y, top);
            self.b.bin("arith.shrsi", x, n)
        }
    }

    pub(super) fn compare(&mut self, op: CmpOp, (a, ta): (Value, STy), (b, tb): (Value, STy)) -> Value {
        let narrow = |d: DType| d.is_unsigned() || matches!(d, DType::I8 | DType::I16);
        // A Python int against an int32 compares exactly too (`x < 3_000_000_000`, or a
        // Python int argument beyond int32's range), as NumPy 2 compares it.
        let python_int = (ta == STy::INT && tb.dt == DType::I32) || (tb == STy::INT && ta.dt == DType::I32);
        if !ta.is_float() && !tb.is_float() && (narrow(ta.dt) || narrow(tb.dt) || python_int) && ta.dt != tb.dt {
            return self.compare_ints(op, (a, ta), (b, tb));
        }
        let t = promote(ta, tb);
        let t = if t.dt == DType::Bool { STy::INT } else { t };
        let x = self.b.cast(a, ta, t);
        let y = self.b.cast(b, tb, t);
        if t.is_float() {
            let p = match op {
                CmpOp::Lt => FPred::Olt,
                CmpOp::Le => FPred::Ole,
                CmpOp::Gt => FPred::Ogt,
                CmpOp::Ge => FPred::Oge,
                CmpOp::Eq => FPred::Oeq,
                CmpOp::Ne => FPred::Une,
            };
            self.b.cmpf(p, x, y)
        } else {
            self.b.cmpi(int_pred(op, t.dt.is_unsigned()), x, y)
        }
    }

    /// `a op b` for integers of different types, one of them small or unsigned, with
    /// the exact result NumPy gives (no operand wraps first: `np.uint8(5) < -1` is
    /// false): both are widened to 64 bits; a signed and a uint64 compare as the
    /// unsigned comparison when the signed one is not negative, and by its sign when
    /// it is.
    fn compare_ints(&mut self, op: CmpOp, (a, ta): (Value, STy), (b, tb): (Value, STy)) -> Value {
        let wide = |d: DType| {
            if d.is_unsigned() {
                STy::strong(DType::U64)
            } else {
                STy::strong(DType::I64)
            }
        };
        let (wa, wb) = (wide(ta.dt), wide(tb.dt));
        let x = self.b.cast(a, ta, wa);
        let y = self.b.cast(b, tb, wb);
        if wa == wb {
            return self.b.cmpi(int_pred(op, wa.dt.is_unsigned()), x, y);
        }
        // One uint64 (u) and one int64 (s): when s < 0, u > s.
        let unsigned = self.b.cmpi(int_pred(op, true), x, y);
        let s = if wa.dt.is_unsigned() { y } else { x };
        let zero = self.b.int(0, "i64");
        let negative = self.b.cmpi(IPred::Slt, s, zero);
        let u_greater = match op {
            CmpOp::Ne => true,
            CmpOp::Eq => false,
            CmpOp::Gt | CmpOp::Ge => wa.dt.is_unsigned(),
            CmpOp::Lt | CmpOp::Le => !wa.dt.is_unsigned(),
        };
        let k = self.b.int(u_greater as i64, "i1");
        self.b.select(negative, k, unsigned)
    }
}

/// The integer predicate of `op` (unsigned: `ult`, ...).
fn int_pred(op: CmpOp, unsigned: bool) -> IPred {
    match (op, unsigned) {
        (CmpOp::Lt, false) => IPred::Slt,
        (CmpOp::Le, false) => IPred::Sle,
        (CmpOp::Gt, false) => IPred::Sgt,
        (CmpOp::Ge, false) => IPred::Sge,
        (CmpOp::Lt, true) => IPred::Ult,
        (CmpOp::Le, true) => IPred::Ule,
        (CmpOp::Gt, true) => IPred::Ugt,
        (CmpOp::Ge, true) => IPred::Uge,
        (CmpOp::Eq, _) => IPred::Eq,
        (CmpOp::Ne, _) => IPred::Ne,
    }
}
