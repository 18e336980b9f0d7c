//! `appy-tensor-library`: matrix products go to a library on the GPU.
//!
//! A tensor statement outside parallel loops of the form
//!
//! ```python
//! C[:M, :N] = alpha * A[:M, :K] @ B[:K, :N] + beta * C[:M, :N]   # or `=` / `+=`
//! ```
//!
//! (operands possibly transposed, scalar factors anywhere in the product) becomes
//! `appy.gemm`, which the GPU runtime runs with cuBLAS; so does a matrix-vector product
//! `y[:M] (+)= alpha * A[:M, :K] @ x[:K]` (or `x @ A`, `mv`), with `vec = 1` (gemv). Only the GPU pipeline runs this
//! pass; on the CPU the statement stays a fused loop nest (`appy-tensor-to-loops`).

use crate::tensor::*;
use crate::{Pass, PassInfo, PassOpt};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::reduction::Reduction;
use appy_ir::types::{DType, STy};
use std::collections::HashMap;

/// The pass.
pub struct TensorLibrary {
    /// CPU mode: only operands with an identity layout.
    pub cpu: bool,
    /// CPU mode: per function parameter, whether it takes strided arrays
    /// (`appy-cpu-strided`), which a library call cannot take.
    pub strided: Vec<bool>,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-tensor-library",
    description: "matrix products in tensor statements → appy.gemm (cuBLAS on the GPU; with cpu=1, BLAS on the CPU for operands not marked in `strided`)",
    options: &[PassOpt::CPU, PassOpt::STRIDED],
    file: file!(),
    make: |o| {
        Ok(Box::new(TensorLibrary {
            cpu: o.flag("cpu")?,
            strided: o.flags("strided")?,
        }))
    },
};

impl Pass for TensorLibrary {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        // The memrefs a library call may take: on the GPU every array (the runtime
        // copies boxes); on the CPU those with an identity layout.
        let excluded = if self.cpu {
            crate::util::strided_params(m, &self.strided)
        } else {
            vec![]
        };
        let allowed = |v: Value| !excluded.contains(&v);
        rewrite_module(m, &mut |b, ops, in_worker| {
            if in_worker { Ok(ops) } else { rewrite(b, ops, &allowed) }
        })
    }
}

/// A 2-D view: memref, offsets, dims.
struct View2 {
    mem: Value,
    off: [Value; 2],
    dims: [i64; 2],
}

fn view2(defs: &HashMap<Value, Op>, v: Value) -> Option<View2> {
    let op = defs.get(&v).filter(|o| o.name == "appy.view" && !o.has_attr("steps"))?;
    let dims = op.attr("dims").map(int_array)?;
    let [d0, d1] = dims.as_slice() else { return None };
    if *d0 < 0 || *d1 < 0 || d0 == d1 || op.operands.len() != 3 {
        return None;
    }
    Some(View2 {
        mem: op.operands[0],
        off: [op.operands[1], op.operands[2]],
        dims: [*d0, *d1],
    })
}

/// A 1-D view over one dimension: memref, offset, dim.
fn view1(defs: &HashMap<Value, Op>, v: Value) -> Option<(Value, Value, i64)> {
    let op = defs.get(&v).filter(|o| o.name == "appy.view" && !o.has_attr("steps"))?;
    let dims = op.attr("dims").map(int_array)?;
    let [d] = dims.as_slice() else { return None };
    (*d >= 0 && op.operands.len() == 2).then_some((op.operands[0], op.operands[1], *d))
}

/// `y[:M] (+)= alpha * op(W) @ v (+ beta * y)`: a matrix-vector product (`mv`, `@`,
/// `np.dot`), for cuBLAS gemv.
struct Gemv {
    w: View2,
    v: (Value, Value),
    k: usize,
    alpha: Vec<Value>,
    beta: Option<Vec<Value>>,
}

fn matvec(defs: &HashMap<Value, Op>, a: &Assign) -> Option<Gemv> {
    if a.atomic.is_some() || a.dims.len() != 1 || a.dims[0] < 0 {
        return None;
    }
    let t = a.dims[0];
    let is_target = |f: Value| view1(defs, f).is_some_and(|(m, o, d)| m == a.target && o == a.idx[0] && d == t);
    let (p, beta) = split_root(defs, a.value, &is_target)?;
    let (k, tensors, alpha) = reduced_product(defs, p)?;
    let (mut w, mut v) = (None, None);
    for f in tensors {
        if let Some(m) = view2(defs, f).filter(|m| w.is_none() && m.dims.contains(&t) && m.dims.contains(&k)) {
            w = Some(m);
        } else if let Some((m, o, _)) = view1(defs, f).filter(|x| v.is_none() && x.2 == k) {
            v = Some((m, o));
        } else {
            return None;
        }
    }
    Some(Gemv {
        w: w?,
        v: v?,
        k: k as usize,
        alpha,
        beta,
    })
}

/// `P`, or `P + Y` / `Y + P` where Y is the target itself times scalars (`is_target`
/// recognises the target's view): returns P and Y's scalar factors (beta).
fn split_root(defs: &HashMap<Value, Op>, root: Value, is_target: &dyn Fn(Value) -> bool) -> Option<(Value, Option<Vec<Value>>)> {
    let op = defs.get(&root)?;
    if !(op.name == "appy.ew" && ew_name(op) == "arith.addf" && op.operands.len() == 2) {
        return Some((root, None));
    }
    let c_part = |v: Value| -> Option<Vec<Value>> {
        let mut fs = vec![];
        factors(defs, v, &mut fs);
        let mut scalars = vec![];
        let mut seen = false;
        for f in fs {
            if defs.contains_key(&f) {
                if seen || !is_target(f) {
                    return None;
                }
                seen = true;
            } else {
                scalars.push(f);
            }
        }
        seen.then_some(scalars)
    };
    let (x, y) = (op.operands[0], op.operands[1]);
    if let Some(s) = c_part(y) {
        Some((x, Some(s)))
    } else {
        c_part(x).map(|s| (y, Some(s)))
    }
}

/// `s1 * ... * sum_k(f1 * f2 * ...)`: the reduced dimension, the tensor factors inside
/// the sum, and every scalar factor (inside or outside).
fn reduced_product(defs: &HashMap<Value, Op>, p: Value) -> Option<(i64, Vec<Value>, Vec<Value>)> {
    let mut fs = vec![];
    factors(defs, p, &mut fs);
    let mut scalars = vec![];
    let mut red = None;
    for f in fs {
        match defs.get(&f) {
            None => scalars.push(f),
            Some(op) if op.name == "appy.reduce" && reduction(op).ok() == Some(Reduction::Sum) && red.is_none() => red = Some(op),
            _ => return None,
        }
    }
    let red = red?;
    let rd = reduced_dims(red);
    let [k] = rd.as_slice() else { return None };
    let k = *k as i64;
    let mut inner = vec![];
    factors(defs, red.operands[0], &mut inner);
    let mut tensors = vec![];
    for f in inner {
        if defs.contains_key(&f) {
            tensors.push(f);
        } else {
            scalars.push(f);
        }
    }
    Some((k, tensors, scalars))
}

fn ew_name(op: &Op) -> &str {
    op.attr("op").unwrap_or("").trim_matches('"')
}

/// Flattens a product tree into its factors.
fn factors(defs: &HashMap<Value, Op>, v: Value, out: &mut Vec<Value>) {
    match defs.get(&v) {
        Some(op) if op.name == "appy.ew" && matches!(ew_name(op), "arith.mulf") && op.operands.len() == 2 => {
            factors(defs, op.operands[0], out);
            factors(defs, op.operands[1], out);
        }
        _ => out.push(v),
    }
}

struct Gemm {
    a: View2,
    b: View2,
    k: usize,
    alpha: Vec<Value>,
    beta: Option<Vec<Value>>,
}

fn same_view(v: &View2, a: &Assign) -> bool {
    v.mem == a.target && v.off[..] == a.idx[..] && v.dims[..] == a.dims[..]
}

fn matmul(defs: &HashMap<Value, Op>, a: &Assign) -> Option<Gemm> {
    if a.atomic.is_some() || a.dims.len() != 2 || a.dims.iter().any(|d| *d < 0) || a.dims[0] == a.dims[1] {
        return None;
    }
    let is_target = |f: Value| view2(defs, f).is_some_and(|w| same_view(&w, a));
    let (p, beta) = split_root(defs, a.value, &is_target)?;
    let (k, tensors, alpha) = reduced_product(defs, p)?;
    let [va, vb] = <[Value; 2]>::try_from(tensors).ok()?;
    let (va, vb) = (view2(defs, va)?, view2(defs, vb)?);
    let (i, j) = (a.dims[0], a.dims[1]);
    // A must span {i, k} and B {k, j} (in either order); swap if given as B @ A.
    let spans = |v: &View2, x: i64, y: i64| (v.dims[0] == x && v.dims[1] == y) || (v.dims[0] == y && v.dims[1] == x);
    let (va, vb) = if spans(&va, i, k) && spans(&vb, k, j) {
        (va, vb)
    } else if spans(&vb, i, k) && spans(&va, k, j) {
        (vb, va)
    } else {
        return None;
    };
    Some(Gemm {
        a: va,
        b: vb,
        k: k as usize,
        alpha,
        beta,
    })
}

fn scalar_product(b: &mut Builder, vs: &[Value]) -> Value {
    let mut acc = b.float(1.0, "f64");
    for v in vs {
        let ty = b.m.ty(*v).to_string();
        let x = match DType::from_mlir(&ty) {
            Some(dt) => b.cast(*v, STy::strong(dt), STy::strong(DType::F64)),
            None => *v,
        };
        acc = b.bin("arith.mulf", acc, x);
    }
    acc
}

/// `alpha`, the product of the scalar factors of the product, and `beta`, that of the
/// factors of the `C` term (0 without one).
fn alpha_beta(b: &mut Builder, alpha: &[Value], beta: &Option<Vec<Value>>) -> (Value, Value) {
    let alpha = scalar_product(b, alpha);
    let beta = match beta {
        None => b.float(0.0, "f64"),
        Some(s) => scalar_product(b, s),
    };
    (alpha, beta)
}

fn rewrite(b: &mut Builder, ops: Vec<Op>, allowed: &dyn Fn(Value) -> bool) -> Result<Vec<Op>, IrError> {
    map_assigns(ops, &mut |defs, op, a, out| {
        if a.steps.iter().any(|s| *s != 1) {
            // Strided targets (`C[::2, :]`) stay loops.
            out.push(op);
            return Ok(());
        }
        let elem = |v: Value, b: &Builder| appy_ir::types::parse_memref(b.m.ty(v)).map(|(d, _)| d);
        if let Some(g) = matvec(defs, &a).filter(|g| {
            matches!(elem(a.target, b), Some(DType::F32 | DType::F64))
                && elem(g.w.mem, b) == elem(a.target, b)
                && elem(g.v.0, b) == elem(a.target, b)
                && g.w.mem != a.target
                && g.v.0 != a.target
                && [a.target, g.w.mem, g.v.0].into_iter().all(allowed)
        }) {
            b.loc = op.loc.clone();
            b.begin();
            let (alpha, beta) = alpha_beta(b, &g.alpha, &g.beta);
            let t = a.dims[0] as usize;
            let trans_a = g.w.dims[0] != t as i64;
            let zero = b.int(0, "i64");
            let one = b.int(1, "i64");
            let operands = [a.target, g.w.mem, g.v.0, a.idx[0], zero].into_iter().chain(g.w.off).chain([
                g.v.1,
                zero,
                a.exts[t],
                one,
                a.exts[g.k],
                alpha,
                beta,
            ]);
            let mut gemm = Op::new("appy.gemm").with_operands(operands).with_loc(op.loc.clone());
            gemm.set_attr("trans_a", format!("{}", trans_a as i64));
            gemm.set_attr("trans_b", "0");
            gemm.set_attr("vec", "1");
            b.push(gemm);
            out.extend(b.end());
            return Ok(());
        }
        let elem_ok = |v: Value, b: &Builder| matches!(appy_ir::types::parse_memref(b.m.ty(v)), Some((DType::F32 | DType::F64, 2)));
        let Some(g) = matmul(defs, &a).filter(|g| {
            elem_ok(a.target, b)
                && g.a.mem != a.target
                && g.b.mem != a.target
                && b.m.ty(g.a.mem) == b.m.ty(a.target)
                && b.m.ty(g.b.mem) == b.m.ty(a.target)
                && [a.target, g.a.mem, g.b.mem].into_iter().all(allowed)
        }) else {
            out.push(op);
            return Ok(());
        };
        b.loc = op.loc.clone();
        b.begin();
        let (alpha, beta) = alpha_beta(b, &g.alpha, &g.beta);
        let (i, j) = (a.dims[0] as usize, a.dims[1] as usize);
        let trans_a = g.a.dims[0] != i as i64;
        let trans_b = g.b.dims[0] != g.k as i64;
        let operands = [a.target, g.a.mem, g.b.mem]
            .into_iter()
            .chain(a.idx.iter().copied())
            .chain(g.a.off)
            .chain(g.b.off)
            .chain([a.exts[i], a.exts[j], a.exts[g.k], alpha, beta]);
        let mut gemm = Op::new("appy.gemm").with_operands(operands).with_loc(op.loc.clone());
        gemm.set_attr("trans_a", format!("{}", trans_a as i64));
        gemm.set_attr("trans_b", format!("{}", trans_b as i64));
        b.push(gemm);
        out.extend(b.end());
        Ok(())
    })
}
