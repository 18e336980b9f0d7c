//! Array allocation (`np.empty/zeros/ones/full`, `..._like`, their torch spellings) and
//! dtypes (`np.float32`, `'float32'`, `x.dtype`, `torch.float32`).

use super::*;
use crate::sema::catalog::{Fill, Rule};
use appy_ir::schedule::{BUFFER, BUFFER_BYTES, Mark};

impl Lower<'_> {
    /// A `memref.alloc` of `dt` with the given sizes (index values).
    pub(super) fn alloc_memref(&mut self, dt: DType, sizes: &[Value]) -> Value {
        let ty = memref_type(dt, sizes.len());
        let n = sizes.len() as i32;
        self.b.op1(
            "memref.alloc",
            sizes,
            &ty,
            &[("operandSegmentSizes", format!("array<i32: {n}, 0>"))],
        )
    }

    /// An allocation call (`Rule::Alloc` or `Rule::Like`) as a new array.
    pub(super) fn alloc_array(&mut self, rule: Rule, name: &str, args: &[Expr], kwargs: &[(Ident, Expr)], span: Span) -> DResult<V> {
        if matches!(rule, Rule::Alloc { fill: Fill::Buffer, .. }) {
            return self.buffer_array(args, kwargs, span);
        }
        if self.scopes.len() != 1 || self.b.depth() != 1 {
            return Err(self
                .err(
                    span,
                    "arrays can only be allocated at the top level of the function, outside loops and conditionals",
                )
                .with_note("help: allocate the array before the loop and write into it inside"));
        }
        let mut dtype: Option<DType> = None;
        let mut dims: Vec<Value> = vec![];
        let (fill, like, torch) = match rule {
            Rule::Alloc { fill, torch } => (fill, false, torch),
            Rule::Like(fill) => (fill, true, false),
            _ => unreachable!("allocation rules"),
        };
        // Positional arguments after the shape: the fill value (`full`), then the dtype.
        let mut rest: &[Expr];
        if like {
            let Some(a) = args.first() else {
                return Err(self.err(span, format!("`{name}` needs an array argument")));
            };
            let v = self.expr(a)?;
            let Some(view) = self.view_of(&v) else {
                return Err(self.err(a.span, format!("`{name}` needs an array argument")));
            };
            dtype = Some(view.dt);
            for l in self.view_shape(&view) {
                dims.push(self.b.to_index(l));
            }
            rest = &args[1..];
        } else {
            if args.is_empty() {
                return Err(self.err(span, format!("`{name}` needs a shape")));
            }
            // `torch.empty(M, N)`: every leading integer argument is a size.
            let n_sizes = crate::sema::shape::alloc_sizes(rule, args);
            for s in &args[..n_sizes] {
                let items = match self.expr(s)? {
                    V::Tuple(vs) => vs,
                    v => vec![v],
                };
                for it in items {
                    let V::S(x, t) = it else {
                        return Err(self.err(s.span, "shape entries must be integers"));
                    };
                    if !t.dt.is_int() && t.dt != DType::Bool {
                        return Err(self.err(s.span, "shape entries must be integers"));
                    }
                    let x = self.b.cast(x, t, STy::INT);
                    self.check_static_negative(s)?;
                    let x = self.nonnegative_dim(x, dims.len(), s.span);
                    dims.push(self.b.to_index(x));
                }
            }
            rest = &args[n_sizes..];
        }
        let mut fill_val: Option<(Value, STy)> = None;
        if fill == Fill::Full {
            let Some(v) = rest.first() else {
                return Err(self.err(span, format!("`{name}` needs a fill value")));
            };
            let V::S(x, t) = self.expr(v)? else {
                return Err(self.err(v.span, "the fill value must be a scalar"));
            };
            fill_val = Some((x, t));
            rest = &rest[1..];
            if dtype.is_none() {
                // `np.full(n, 1)` is an int64 array, `np.full(n, 1.0)` a float64 one.
                dtype = Some(t.dt);
            }
        }
        if let Some(t) = rest.first() {
            dtype = Some(self.dtype_of(t)?);
        }
        for (k, v) in kwargs {
            match k.name.as_str() {
                "dtype" => dtype = Some(self.dtype_of(v)?),
                // Where the data lives is appy's choice.
                "device" | "pin_memory" => {}
                "requires_grad" if matches!(v.kind, ExprKind::Bool(false)) => {}
                "order" if matches!(&v.kind, ExprKind::Str(s) if s == "C") => {}
                _ => {
                    return Err(self
                        .err(k.span, format!("unsupported keyword `{}` for `{name}`", k.name))
                        .with_note("help: supported keywords: dtype= (device= is accepted and ignored)"));
                }
            }
        }
        // NumPy allocates float64 by default, torch float32.
        let dtype = dtype.unwrap_or(types::default_dtype(torch));
        let rank = dims.len();
        let m = self.alloc_memref(dtype, &dims);
        let fv = match (fill, fill_val) {
            (Fill::Zeros, _) => Some(self.b.scalar(0.0, STy::strong(dtype))),
            (Fill::Ones, _) => Some(self.b.scalar(1.0, STy::strong(dtype))),
            (_, Some((x, t))) => Some(self.b.cast(x, t, STy::strong(dtype))),
            _ => None,
        };
        if let Some(fv) = fv {
            let fv = self.stored_form(fv, dtype);
            self.fill_nest(m, &dims, fv, fill == Fill::Zeros);
        }
        Ok(V::Arr(m, dtype, rank))
    }

    /// `appy.buffer(size, dtype=np.float64)`: a one-dimensional scratchpad of a constant
    /// size, private to an iteration of the parallel loop whose body calls it (APPy's
    /// group mode): `memref.alloca() {appy.buffer}` of the static size, cast to the
    /// dynamic array type. On the GPU, `appy-gpu-outline` makes it the group's shared
    /// memory; on the CPU it is a thread's stack array.
    fn buffer_array(&mut self, args: &[Expr], kwargs: &[(Ident, Expr)], span: Span) -> DResult<V> {
        let in_body = self.scopes.last().is_some_and(|s| s.kind == ScopeKind::Parallel) && self.b.depth() == self.scopes.len();
        if !in_body {
            return Err(self
                .err(span, "`appy.buffer` makes a scratchpad for one iteration of a parallel loop: call it in the body of a `#pragma parallel for` loop, outside conditionals and inner loops")
                .with_note("help: allocate arrays for the whole function with `np.empty` at its top level"));
        }
        let help = "help: write the size with integer literals and `+ - *`, `appy.buffer(66)` or `appy.buffer(64 + 2, dtype=np.float32)`";
        let Some(size) = args.first() else {
            return Err(self.err(span, "`appy.buffer` needs a size").with_note(help));
        };
        let k = match crate::sema::types::fold_int(size) {
            Some(k) => Some(k),
            None => match self.expr(size)? {
                V::S(x, t) if t.dt.is_int() => self.b.const_int_of(x),
                _ => None,
            },
        };
        let Some(k) = k else {
            return Err(self
                .err(
                    size.span,
                    "the size of `appy.buffer` must be known at compile time (an integer constant)",
                )
                .with_note(help));
        };
        let mut dtype = DType::F64;
        if let Some(t) = args.get(1) {
            dtype = self.dtype_of(t)?;
        }
        if args.len() > 2 {
            return Err(self.err(args[2].span, "`appy.buffer` takes a size and a dtype").with_note(help));
        }
        for (key, v) in kwargs {
            match key.name.as_str() {
                "dtype" => dtype = self.dtype_of(v)?,
                _ => {
                    return Err(self
                        .err(key.span, format!("unsupported keyword `{}` for `appy.buffer`", key.name))
                        .with_note("help: its keyword is dtype="));
                }
            }
        }
        let bytes = k.saturating_mul(dtype.size() as i64);
        if k < 1 || bytes > BUFFER_BYTES {
            return Err(self.err(
                size.span,
                format!("`appy.buffer` of {k} elements ({bytes} bytes): a scratchpad holds 1 to {BUFFER_BYTES} bytes (a GPU group's shared memory)"),
            ));
        }
        let dynamic = memref_type(dtype, 1);
        let fixed = dynamic.replacen('?', &k.to_string(), 1);
        let a = self.b.op1(
            "memref.alloca",
            &[],
            &fixed,
            &[("operandSegmentSizes", "array<i32: 0, 0>".into()), (BUFFER, "unit".into())],
        );
        let m = self.b.op1("memref.cast", &[a], &dynamic, &[]);
        Ok(V::Arr(m, dtype, 1))
    }

    /// A parallel fill of `m` (sizes `dims`) with `fv`: a perfect nest of 1-D parallel
    /// loops (one grid on the GPU, a loop nest on the CPU). The nest of a zero fill
    /// (`np.zeros`) is marked `appy.zero_fill`: the CPU allocates such an array zeroed
    /// instead (`appy-cpu-zeros`).
    fn fill_nest(&mut self, m: Value, dims: &[Value], fv: Value, zero: bool) {
        let rank = dims.len();
        let c0 = self.b.index(0);
        let c1 = self.b.index(1);
        let ivs: Vec<Value> = (0..rank).map(|_| self.b.m.value("index")).collect();
        if rank == 0 {
            self.b.store(fv, m, &[]);
            return;
        }
        let mut inner = vec![
            Op::new("memref.store")
                .with_operands([fv, m].into_iter().chain(ivs.iter().copied()))
                .with_loc(self.b.loc.clone()),
        ];
        for d in (0..rank).rev() {
            inner.push(Op::new("scf.reduce").with_loc(self.b.loc.clone()));
            let op = Op::new("scf.parallel")
                .with_operands([c0, dims[d], c1])
                .with_attr("operandSegmentSizes", "array<i32: 1, 1, 1, 0>")
                .with_mark(Mark::Parallel)
                .with_region(Builder::region(vec![ivs[d]], std::mem::take(&mut inner)))
                .with_loc(self.b.loc.clone());
            inner = vec![op];
        }
        if zero {
            for op in &mut inner {
                op.set_mark(Mark::ZeroFill);
            }
        }
        for op in inner {
            self.b.push(op);
        }
    }

    /// A negative constant size is an error at compile time (`np.zeros(-5)`).
    fn check_static_negative(&mut self, s: &Expr) -> DResult<()> {
        if let Some(k) = const_int(s)
            && k < 0
        {
            return Err(self
                .err(s.span, format!("negative dimensions are not allowed (size {k})"))
                .with_note("help: array sizes must be zero or positive"));
        }
        Ok(())
    }

    /// The dtype an expression names: `np.float32`, `float`, `'float32'`, `'f4'`,
    /// `x.dtype`, `torch.float32`, or a variable bound to one of them.
    pub(super) fn dtype_of(&mut self, e: &Expr) -> DResult<DType> {
        if let ExprKind::Attribute { value, attr } = &e.kind
            && attr.name == "dtype"
        {
            let v = self.expr(value)?;
            if let Some(view) = self.view_of(&v) {
                return Ok(view.dt);
            }
            if let V::S(_, t) = v {
                return Ok(t.dt);
            }
        }
        if let ExprKind::Name(n) = &e.kind
            && let Some(Binding::Val(V::DType(d))) = self.lookup(n)
        {
            return Ok(*d);
        }
        if let Some(d) = qualify(&self.imports, e).as_deref().and_then(types::named_dtype) {
            return Ok(d);
        }
        if let ExprKind::Str(s) = &e.kind
            && let Some(d) = types::dtype_str(s)
        {
            return Ok(d);
        }
        Err(self
            .err(e.span, "unsupported dtype")
            .with_note("help: use np.float32, np.float64, np.int32, np.int64, np.bool_ (or 'float32', x.dtype, torch.float32, ...)"))
    }

    /// A value of type `dt` as stored in memory (booleans are bytes).
    pub(super) fn stored_form(&mut self, v: Value, dt: DType) -> Value {
        if dt == DType::Bool {
            self.b.op1("arith.extui", &[v], "i8", &[])
        } else {
            v
        }
    }

    /// A value loaded from memory of type `dt` as a scalar of that type.
    pub(super) fn loaded_form(&mut self, v: Value, dt: DType) -> Value {
        if dt == DType::Bool {
            self.b.op1("arith.trunci", &[v], "i1", &[])
        } else {
            v
        }
    }
}
