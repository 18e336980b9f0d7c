//! Array allocation (`np.empty/zeros/ones/full/..._like`) and dtypes.

use super::*;

impl Lower<'_> {
    pub(super) fn alloc_array(&mut self, q: &str, args: &[Expr], kwargs: &[(Ident, Expr)], span: Span) -> DResult<V> {
        let mut dtype = DType::F64;
        let mut dims: Vec<Value> = vec![];
        let like = q.ends_with("_like");
        if like {
            let Some(a) = args.first() else {
                return Err(self.err(span, format!("`{q}` needs an array argument")));
            };
            let V::Arr(m, d, r) = self.expr(a)? else {
                return Err(self.err(a.span, "expected an array"));
            };
            dtype = d;
            for i in 0..r {
                let c = self.b.index(i as i64);
                dims.push(self.b.op1("memref.dim", &[m, c], "index", &[]));
            }
        } else {
            let Some(shape) = args.first() else {
                return Err(self.err(span, format!("`{q}` needs a shape")));
            };
            let sv = self.expr(shape)?;
            let items = match sv {
                V::Tuple(vs) => vs,
                v => vec![v],
            };
            for it in items {
                let V::S(x, t) = it else {
                    return Err(self.err(shape.span, "shape entries must be integers"));
                };
                if !t.dt.is_int() {
                    return Err(self.err(shape.span, "shape entries must be integers"));
                }
                let x = self.b.cast(x, t, STy::INT);
                dims.push(self.b.to_index(x));
            }
        }
        let mut fill: Option<f64> = match q {
            "numpy.zeros" | "numpy.zeros_like" => Some(0.0),
            "numpy.ones" | "numpy.ones_like" => Some(1.0),
            _ => None,
        };
        let mut fill_val: Option<(Value, STy)> = None;
        if q == "numpy.full" {
            let Some(v) = args.get(1) else {
                return Err(self.err(span, "np.full needs a fill value"));
            };
            let V::S(x, t) = self.expr(v)? else {
                return Err(self.err(v.span, "fill value must be a scalar"));
            };
            fill_val = Some((x, t));
            fill = None;
        }
        for (k, v) in kwargs {
            if k.name == "dtype" {
                dtype = self.dtype_of(v)?;
            } else {
                return Err(self.err(k.span, format!("unsupported keyword `{}` for `{q}`", k.name)));
            }
        }
        if let Some(t) = args.get(if q == "numpy.full" { 2 } else { 1 }) {
            dtype = self.dtype_of(t)?;
        }
        if dtype == DType::Bool {
            return Err(self.err(span, "boolean arrays are not supported"));
        }
        let rank = dims.len();
        let ty = memref_type(dtype, rank);
        let n = dims.len() as i32;
        let m = self.b.op1(
            "memref.alloc",
            &dims,
            &ty,
            &[("operandSegmentSizes", format!("array<i32: {n}, 0>"))],
        );
        let fv = match (fill, fill_val) {
            (Some(f), _) => Some(self.b.scalar(f, STy::strong(dtype))),
            (_, Some((x, t))) => Some(self.b.cast(x, t, STy::strong(dtype))),
            _ => None,
        };
        if let Some(fv) = fv {
            // A parallel fill: a perfect nest of 1-D parallel loops (one grid on the
            // GPU, a loop nest on the CPU).
            let c0 = self.b.index(0);
            let c1 = self.b.index(1);
            let ivs: Vec<Value> = (0..rank).map(|_| self.b.m.value("index")).collect();
            if rank == 0 {
                self.b.store(fv, m, &[]);
            } else {
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
                        .with_attr("appy.parallel", "unit")
                        .with_region(Builder::region(vec![ivs[d]], std::mem::take(&mut inner)))
                        .with_loc(self.b.loc.clone());
                    inner = vec![op];
                }
                for op in inner {
                    self.b.push(op);
                }
            }
        }
        Ok(V::Arr(m, dtype, rank))
    }

    pub(super) fn dtype_of(&mut self, e: &Expr) -> DResult<DType> {
        let q = qualify(&self.imports, e).unwrap_or_default();
        Ok(match q.as_str() {
            "numpy.float32" => DType::F32,
            "numpy.float64" | "builtins.float" => DType::F64,
            "numpy.int32" => DType::I32,
            "numpy.int64" | "builtins.int" => DType::I64,
            "numpy.bool_" | "builtins.bool" => DType::Bool,
            _ => {
                if let ExprKind::Str(s) = &e.kind {
                    match s.as_str() {
                        "float32" => return Ok(DType::F32),
                        "float64" => return Ok(DType::F64),
                        "int32" => return Ok(DType::I32),
                        "int64" => return Ok(DType::I64),
                        _ => {}
                    }
                }
                return Err(self.err(e.span, "unsupported dtype; use np.float32, np.float64, np.int32 or np.int64"));
            }
        })
    }
}
