//! `appy-solve-library`: sequential loops that compute a triangular solve or a Cholesky
//! factorisation go to a library on the GPU (cuBLAS `trsv`, cuSOLVER `potrf`).
//!
//! Both algorithms are a chain of dot products, each depending on the previous one, so
//! their loops run one step after another: thousands of dependent steps, each too small
//! to fill the GPU. Blocked library versions reorganise the work (panels, matrix
//! products on the trailing part), which a loop-at-a-time compiler cannot do. This pass
//! recognises the loops by what they compute, not by how they are spelled: each
//! statement's value is turned into a symbolic expression ([`Sym`]) over affine indices
//! ([`Aff`]), so `np.sum(L[i, :i] * x[:i])`, `L[i, :i] @ x[:i]` and `np.dot(...)`, a
//! division or a multiplication by the reciprocal, and either operand order all match.
//!
//! Forward substitution (a loop over `i` from 0, step 1, whose body is one statement):
//!
//! ```python
//! for i in range(N):
//!     x[i] = (b[i] - np.sum(L[i, :i] * x[:i])) / L[i, i]      # b may be x itself
//! ```
//!
//! becomes `appy.trsv(L, x, b, N)` (`x[:N] = b[:N]`, then `x = L⁻¹ x` with the lower
//! triangle of L). Cholesky, column by column (a loop over `j` whose body is the
//! diagonal statement and a loop over the rows below it):
//!
//! ```python
//! for j in range(N):
//!     A[j, j] = np.sqrt(A[j, j] - np.sum(A[j, :j] * A[j, :j]))
//!     for i in range(j + 1, N):                                  # parallel or not
//!         A[i, j] = (A[i, j] - np.sum(A[i, :j] * A[j, :j])) / A[j, j]
//! ```
//!
//! becomes `appy.potrf(A, N)` (the lower triangle of `A[:N, :N]` becomes L; the rest is
//! untouched). So does NPBench's row-by-row form (`A[0, 0] = sqrt(A[0, 0])`, then for
//! each row `i` the in-place updates `A[i, j] -= np.dot(A[i, :j], A[j, :j]);
//! A[i, j] /= A[j, j]` for `j < i`, then the diagonal).
//!
//! The CPU pipeline runs it when the host has a BLAS library (`cpu=1`), for arrays with
//! an identity layout (parameters not marked in `strided`), for Cholesky only (a
//! triangular solve's loop, one pass of vectorised dot products over the rows, measured
//! faster than BLAS `?trsv` there; `appy-cpu-blas` still lowers `appy.trsv`):
//! `appy.potrf` gets a result, whether the library factorised the matrix; when it did
//! not (not positive definite, or sizes the array does not have), the matrix is
//! untouched and the original loops run (`scf.if`), so the result is the loops' to the
//! last NaN.

use crate::tensor::{Assign, int_array, reduced_dims, reduction, rewrite_module};
use crate::{Pass, PassInfo, PassOpt};
use appy_ir::affine::Affine;
use appy_ir::attrs::{CmpIPredicate, Scalar, parse_constant};
use appy_ir::diag::IrError;
use appy_ir::effects::{self, Access, is_read_only};
use appy_ir::ir::{Module, Op, Value};
use appy_ir::reduction::Reduction;
use appy_ir::schedule::Mark;
use appy_ir::types::{DType, parse_memref};
use std::collections::{HashMap, HashSet};

/// The pass.
pub struct SolveLibrary {
    /// CPU mode (module docs).
    pub cpu: bool,
    /// CPU mode: per function parameter, whether it takes strided arrays.
    pub strided: Vec<bool>,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-solve-library",
    description: "sequential loops computing a triangular solve or a Cholesky factorisation → appy.trsv / appy.potrf (cuBLAS / cuSOLVER on the GPU; with cpu=1, BLAS and LAPACK on the CPU, the loops kept for a failed factorisation)",
    options: &[PassOpt::CPU, PassOpt::STRIDED],
    file: file!(),
    make: |o| {
        Ok(Box::new(SolveLibrary {
            cpu: o.flag("cpu")?,
            strided: o.flags("strided")?,
        }))
    },
};

impl Pass for SolveLibrary {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        if !m.op.walk_any(&|o| o.name == "scf.for") {
            return Ok(());
        }
        // Every op that defines a value, without its regions (the matcher reads only
        // region-free ops through this map).
        let mut defs: HashMap<Value, Op> = HashMap::new();
        m.op.walk(&mut |o| {
            if !o.results.is_empty() {
                let mut s = o.clone();
                s.regions.clear();
                for r in &o.results {
                    defs.insert(*r, s.clone());
                }
            }
        });
        // On the CPU, arrays passed as strided views stay with the loops.
        let excluded = if self.cpu {
            crate::util::strided_params(m, &self.strided)
        } else {
            vec![]
        };
        let cpu = self.cpu;
        rewrite_module(m, &mut |b, ops, in_worker| {
            if in_worker || !ops.iter().any(|o| o.name == "scf.for") {
                return Ok(ops);
            }
            let mut out = Vec::with_capacity(ops.len());
            for op in ops {
                let found = if op.name == "scf.for" {
                    recognise(&defs, &out, &op, &|v| parse_memref(b.m.ty(v)))
                } else {
                    None
                };
                // On the CPU a triangular solve stays a loop: one pass over the rows,
                // each a vectorised dot product, measured faster than BLAS `?trsv`.
                let found = found.filter(|(name, arrays, _)| {
                    let strided = arrays.iter().any(|a| excluded.contains(a));
                    let cpu_trsv = cpu && *name == "appy.trsv";
                    !strided && !cpu_trsv
                });
                let Some((name, arrays, first)) = found else {
                    out.push(op);
                    continue;
                };
                let first_op = first.map(|k| out.remove(k));
                b.loc = op.loc.clone();
                b.begin();
                let mut n = b.to_i64(op.operands[1]);
                if first.is_some() {
                    // `A[0, 0] = sqrt(A[0, 0])` runs even when the loop does not.
                    let one = b.int(1, "i64");
                    n = b.bin("arith.maxsi", n, one);
                }
                let mut call = Op::new(name).with_operands(arrays.into_iter().chain([n])).with_loc(op.loc.clone());
                call.set_attr("lower", "1");
                if cpu && name == "appy.potrf" {
                    // The loops run when the library did not factorise the matrix.
                    let ok = b.m.value("i1");
                    call.results = vec![ok];
                    b.push(call);
                    let t = b.int(1, "i1");
                    let failed = b.bin("arith.xori", ok, t);
                    let mut fallback: Vec<Op> = first_op.into_iter().collect();
                    fallback.push(op);
                    fallback.push(appy_ir::build::Builder::yield_op(&[]));
                    b.if_op(failed, fallback, None);
                } else {
                    b.push(call);
                }
                out.extend(b.end());
            }
            Ok(out)
        })
    }
}

/// The library call that the loop `op` computes, if any: the op's name, its array
/// operands (the loop's upper bound comes last), and the position in `before` (the
/// block's ops so far) of a store that belongs to the computation (the first element of
/// the row-by-row Cholesky).
fn recognise(
    defs: &HashMap<Value, Op>,
    before: &[Op],
    op: &Op,
    types: &dyn Fn(Value) -> Option<(DType, usize)>,
) -> Option<(&'static str, Vec<Value>, Option<usize>)> {
    let mut cx = Cx::new(defs, op);
    let float_matrix = |a: &Value| matches!(types(*a), Some((DType::F32 | DType::F64, 2)));
    if let Some(t) = cx.trsv(op).filter(|t| t.types_ok(types)) {
        return Some(("appy.trsv", vec![t.l, t.x, t.b], None));
    }
    // The row-by-row form starts with a store just before the loop.
    if let Some(k) = before.iter().rposition(|o| !is_read_only(o))
        && let Some(a) = cx.potrf_rows(&before[k], op).filter(float_matrix)
    {
        return Some(("appy.potrf", vec![a], Some(k)));
    }
    cx.potrf(op).filter(float_matrix).map(|a| ("appy.potrf", vec![a], None))
}

/// A symbol of an affine index.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash)]
pub enum Var {
    /// An SSA value that is not understood further (loop variables, arguments).
    V(Value),
    /// The content of a scalar slot (`memref.alloca`) that the loop nest never stores to.
    Slot(Value),
    /// A statement dimension (the `k` of a slice or of a reduction).
    Dim(usize),
}

/// An affine index: `c + Σ coeff · var` (the project's affine form over [`Var`]).
pub type Aff = Affine<Var>;

/// A statement's value as a symbolic expression.
#[derive(Clone, PartialEq, Debug)]
pub enum Sym {
    /// `mem[idx...]`.
    Load(Value, Vec<Aff>),
    /// A floating-point constant.
    Num(f64),
    /// `a + b` (operands in canonical order).
    Add(Box<Sym>, Box<Sym>),
    /// `a - b`.
    Sub(Box<Sym>, Box<Sym>),
    /// `a * b` (operands in canonical order).
    Mul(Box<Sym>, Box<Sym>),
    /// `a / b`.
    Div(Box<Sym>, Box<Sym>),
    /// `sqrt(a)`.
    Sqrt(Box<Sym>),
    /// `Σ_{Dim(k) in [0, extent)} body`.
    Sum(usize, Aff, Box<Sym>),
    /// Anything else.
    Opaque(Value),
}

/// `a * b` with its operands in canonical order; `a * (1 / c)` is `a / c`.
fn mul(a: Sym, b: Sym) -> Sym {
    match (a, b) {
        (x, Sym::Div(n, d)) | (Sym::Div(n, d), x) if *n == Sym::Num(1.0) => Sym::Div(Box::new(x), d),
        (a, b) => {
            let (a, b) = canon(a, b);
            Sym::Mul(Box::new(a), Box::new(b))
        }
    }
}

fn canon(a: Sym, b: Sym) -> (Sym, Sym) {
    if format!("{a:?}") <= format!("{b:?}") { (a, b) } else { (b, a) }
}

fn load(m: Value, idx: &[&Aff]) -> Sym {
    Sym::Load(m, idx.iter().map(|a| (*a).clone()).collect())
}

/// The matching context of one loop nest: the defining ops, the scalar slots the nest
/// stores to, and the lower bounds of the loop variables (for `max(x, 0)`).
struct Cx<'a> {
    defs: &'a HashMap<Value, Op>,
    stored: HashSet<Value>,
    lower: HashMap<Value, Aff>,
}

impl<'a> Cx<'a> {
    fn new(defs: &'a HashMap<Value, Op>, nest: &Op) -> Cx<'a> {
        let mut stored = HashSet::new();
        nest.walk(&mut |o| match effects::effects(o).writes {
            Access::None => {}
            Access::Operands(ix) => stored.extend(ix.iter().filter_map(|i| o.operands.get(*i).copied())),
            // Unknown side effects: no slot it sees is trusted.
            Access::Any => stored.extend(o.operands.iter().copied()),
        });
        Cx {
            defs,
            stored,
            lower: HashMap::new(),
        }
    }

    fn aff(&self, v: Value) -> Aff {
        let Some(op) = self.defs.get(&v) else {
            return Aff::var(Var::V(v));
        };
        let o = &op.operands;
        match op.name.as_str() {
            "arith.constant" => match op.attr("value").and_then(|t| parse_constant(t, "")) {
                Some(Scalar::Int(c)) => Aff::constant(c),
                _ => Aff::var(Var::V(v)),
            },
            "arith.index_cast" | "arith.index_castui" | "arith.extsi" if o.len() == 1 => self.aff(o[0]),
            "arith.addi" if o.len() == 2 => self.aff(o[0]).checked_add(&self.aff(o[1])).unwrap_or_else(|| Aff::var(Var::V(v))),
            "arith.subi" if o.len() == 2 => self.aff(o[0]).checked_sub(&self.aff(o[1])).unwrap_or_else(|| Aff::var(Var::V(v))),
            "arith.muli" if o.len() == 2 => self.aff(o[0]).checked_mul(self.aff(o[1])).unwrap_or_else(|| Aff::var(Var::V(v))),
            "arith.maxsi" if o.len() == 2 => {
                let (a, b) = (self.aff(o[0]), self.aff(o[1]));
                if b.as_const() == Some(0) && self.nonneg(&a) {
                    a
                } else if a.as_const() == Some(0) && self.nonneg(&b) {
                    b
                } else {
                    Aff::var(Var::V(v))
                }
            }
            // Python's slice normalisation, `select(x < 0, x + n, x)`: x itself when x ≥ 0.
            "arith.select" if o.len() == 3 => {
                let x = self.aff(o[2]);
                let negative_test = self.defs.get(&o[0]).is_some_and(|c| {
                    c.name == "arith.cmpi"
                        && c.attr("predicate").and_then(CmpIPredicate::parse) == Some(CmpIPredicate::Slt)
                        && c.operands.first() == Some(&o[2])
                        && self.aff(c.operands[1]).as_const() == Some(0)
                });
                if negative_test && self.nonneg(&x) { x } else { Aff::var(Var::V(v)) }
            }
            // A slice bound clamped to an array's extent, `min(x, dim)`: x itself when it
            // is in bounds, which the library call checks at run time (an out-of-bounds
            // slice is an error there).
            "arith.minsi" if o.len() == 2 => {
                let is_dim = |x: Value| {
                    let mut x = x;
                    while let Some(d) = self.defs.get(&x) {
                        match d.name.as_str() {
                            "arith.index_cast" | "arith.index_castui" => x = d.operands[0],
                            "memref.dim" => return true,
                            _ => return false,
                        }
                    }
                    false
                };
                if is_dim(o[1]) {
                    self.aff(o[0])
                } else if is_dim(o[0]) {
                    self.aff(o[1])
                } else {
                    Aff::var(Var::V(v))
                }
            }
            "memref.load" if o.len() == 1 => {
                let slot = o[0];
                if self.defs.get(&slot).is_some_and(|d| d.name == "memref.alloca") && !self.stored.contains(&slot) {
                    Aff::var(Var::Slot(slot))
                } else {
                    Aff::var(Var::V(v))
                }
            }
            _ => Aff::var(Var::V(v)),
        }
    }

    /// Whether `a` is known to be ≥ 0 (loop variables count with their lower bounds).
    fn nonneg(&self, a: &Aff) -> bool {
        a.c >= 0
            && a.terms.iter().all(|(v, k)| {
                *k > 0
                    && match v {
                        Var::V(x) => self.lower.get(x).is_some_and(|l| self.nonneg(l)),
                        Var::Dim(_) => true,
                        Var::Slot(_) => false,
                    }
            })
    }

    /// The symbolic value of `v` in a statement whose dimensions have extents `exts`.
    fn sym(&self, v: Value, exts: &[Value]) -> Sym {
        let Some(op) = self.defs.get(&v) else {
            return Sym::Opaque(v);
        };
        let o = &op.operands;
        let name = match op.name.as_str() {
            "appy.ew" => op.attr("op").unwrap_or("").trim_matches('"'),
            n => n,
        };
        let bin = |f: fn(Box<Sym>, Box<Sym>) -> Sym| f(Box::new(self.sym(o[0], exts)), Box::new(self.sym(o[1], exts)));
        match name {
            "appy.view" => {
                let dims = op.attr("dims").map(int_array).unwrap_or_default();
                if dims.len() + 1 != o.len() || op.has_attr("steps") {
                    return Sym::Opaque(v);
                }
                let idx = dims
                    .iter()
                    .zip(&o[1..])
                    .map(|(d, off)| {
                        let base = self.aff(*off);
                        if *d >= 0 {
                            base.checked_add(&Aff::var(Var::Dim(*d as usize)))
                        } else {
                            Some(base)
                        }
                    })
                    .collect::<Option<Vec<Aff>>>();
                match idx {
                    Some(idx) => Sym::Load(o[0], idx),
                    None => Sym::Opaque(v),
                }
            }
            "appy.reduce" => {
                let rd = reduced_dims(op);
                match rd.as_slice() {
                    [k] if reduction(op).ok() == Some(Reduction::Sum) && *k < exts.len() => {
                        Sym::Sum(*k, self.aff(exts[*k]), Box::new(self.sym(o[0], exts)))
                    }
                    _ => Sym::Opaque(v),
                }
            }
            "memref.load" if o.len() > 1 => Sym::Load(o[0], o[1..].iter().map(|x| self.aff(*x)).collect()),
            "arith.constant" => match op.attr("value").and_then(|t| parse_constant(t, "")) {
                Some(Scalar::Float(x)) => Sym::Num(x),
                _ => Sym::Opaque(v),
            },
            "arith.addf" if o.len() == 2 => {
                let (x, y) = canon(self.sym(o[0], exts), self.sym(o[1], exts));
                Sym::Add(Box::new(x), Box::new(y))
            }
            "arith.subf" if o.len() == 2 => bin(Sym::Sub),
            "arith.divf" if o.len() == 2 => bin(Sym::Div),
            "arith.mulf" if o.len() == 2 => mul(self.sym(o[0], exts), self.sym(o[1], exts)),
            "math.sqrt" if o.len() == 1 => Sym::Sqrt(Box::new(self.sym(o[0], exts))),
            // A constant converted to the statement's type (`1.0 / x` with float32 x).
            "arith.truncf" | "arith.extf" if o.len() == 1 => match self.sym(o[0], exts) {
                Sym::Num(x) if name == "arith.extf" || (x as f32) as f64 == x => Sym::Num(x),
                _ => Sym::Opaque(v),
            },
            _ => Sym::Opaque(v),
        }
    }

    /// A loop `for iv in range(lb, ub)` with step 1 and no loop-carried values: (iv, lb,
    /// ub, body ops without the terminator).
    fn simple_loop<'o>(&mut self, op: &'o Op) -> Option<(Value, Aff, Aff, &'o [Op])> {
        let single = match op.name.as_str() {
            "scf.for" => op.operands.len() == 3,
            "scf.parallel" => op.operands.len() == 3 && op.has_mark(Mark::Parallel),
            _ => false,
        };
        if !single || !op.results.is_empty() || op.regions.len() != 1 || op.regions[0].blocks.len() != 1 {
            return None;
        }
        let blk = &op.regions[0].blocks[0];
        let [iv] = blk.args.as_slice() else { return None };
        if self.aff(op.operands[2]).as_const() != Some(1) {
            return None;
        }
        let lb = self.aff(op.operands[0]);
        self.lower.insert(*iv, lb.clone());
        let (last, body) = blk.ops.split_last()?;
        let term_ok = match op.name.as_str() {
            "scf.for" => last.name == "scf.yield" && last.operands.is_empty(),
            _ => last.name == "scf.reduce" && last.operands.is_empty(),
        };
        term_ok.then(|| (*iv, lb, self.aff(op.operands[1]), body))
    }

    /// A scalar statement `target[idx...] = value` (no slice, no atomic): its parts.
    fn scalar_stmt(&self, op: &Op) -> Option<(Value, Vec<Aff>, Sym)> {
        let a = Assign::of(op).ok()?;
        if a.atomic.is_some() || a.dims.iter().any(|d| *d >= 0) {
            return None;
        }
        let idx = a.idx.iter().map(|v| self.aff(*v)).collect();
        Some((a.target, idx, self.sym(a.value, &a.exts)))
    }

    /// A statement `A[idx] = e` followed by a store `A[idx] = f(A[idx], ...)` that reads
    /// the element back: the element's final value, `f` with that read replaced by `e`.
    /// (Other reads of `A` in `f` are the caller's to check.)
    fn composed(&self, assign: &Op, store: &Op) -> Option<(Value, Vec<Aff>, Sym)> {
        let (t, idx, e) = self.scalar_stmt(assign)?;
        if store.name != "memref.store" || store.operands.len() < 3 || store.operands[1] != t {
            return None;
        }
        let sidx: Vec<Aff> = store.operands[2..].iter().map(|x| self.aff(*x)).collect();
        if sidx != idx {
            return None;
        }
        let f = self.sym(store.operands[0], &[]);
        let read = Sym::Load(t, idx.clone());
        Some((t, idx, subst(f, &read, &e)))
    }

    /// NPBench's row-by-row Cholesky: `first` is the store just before the loop.
    ///
    /// ```python
    /// A[0, 0] = np.sqrt(A[0, 0])
    /// for i in range(1, N):
    ///     for j in range(i):
    ///         A[i, j] -= np.dot(A[i, :j], A[j, :j])
    ///         A[i, j] /= A[j, j]
    ///     A[i, i] -= np.dot(A[i, :i], A[i, :i])
    ///     A[i, i] = np.sqrt(A[i, i])
    /// ```
    ///
    /// The dot products and divisions are those of the column-by-column form. In the
    /// row loop, the read of `A[j, j]` after the write of `A[i, j]` is a different element
    /// (j < i).
    fn potrf_rows(&mut self, first: &Op, op: &Op) -> Option<Value> {
        if first.name != "memref.store" || first.operands.len() != 4 {
            return None;
        }
        let a = first.operands[1];
        let zero = Aff::constant(0);
        if first.operands[2..].iter().any(|x| self.aff(*x) != zero)
            || self.sym(first.operands[0], &[]) != Sym::Sqrt(Box::new(load(a, &[&zero, &zero])))
        {
            return None;
        }
        let (iv, lb, _, body) = self.simple_loop(op)?;
        if lb.as_const() != Some(1) {
            return None;
        }
        let i = Aff::var(Var::V(iv));
        let eff = effects(body)?;
        let [inner, diag, diag_store] = eff.as_slice() else { return None };
        let dot = |s: &Sym, r: &Aff, c: &Aff| -> bool {
            let Sym::Sum(k, ext, prod) = s else { return false };
            let d = Aff::var(Var::Dim(*k));
            ext == c && **prod == mul(load(a, &[r, &d]), load(a, &[c, &d]))
        };
        let (a1, idx1, v1) = self.composed(diag, diag_store)?;
        if a1 != a || idx1 != [i.clone(), i.clone()] {
            return None;
        }
        let Sym::Sqrt(v1) = v1 else { return None };
        let Sym::Sub(aii, sum) = *v1 else { return None };
        if *aii != load(a, &[&i, &i]) || !dot(&sum, &i, &i) {
            return None;
        }
        let (jv, jlb, jub, jbody) = self.simple_loop(inner)?;
        if jlb.as_const() != Some(0) || jub != i {
            return None;
        }
        let j = Aff::var(Var::V(jv));
        let eff2 = effects(jbody)?;
        let [upd, upd_store] = eff2.as_slice() else { return None };
        let (a2, idx2, v2) = self.composed(upd, upd_store)?;
        if a2 != a || idx2 != [i.clone(), j.clone()] {
            return None;
        }
        let Sym::Div(num, den) = v2 else { return None };
        let Sym::Sub(aij, sum2) = *num else { return None };
        (*den == load(a, &[&j, &j]) && *aij == load(a, &[&i, &j]) && dot(&sum2, &i, &j)).then_some(a)
    }

    /// `for i in range(0, N): x[i] = (b[i] - Σ_k<i L[i, k] x[k]) / L[i, i]`.
    fn trsv(&mut self, op: &Op) -> Option<Trsv> {
        let (iv, lb, _, body) = self.simple_loop(op)?;
        if lb.as_const() != Some(0) {
            return None;
        }
        let eff = effects(body)?;
        let [s] = eff.as_slice() else { return None };
        let (x, idx, val) = self.scalar_stmt(s)?;
        let i = Aff::var(Var::V(iv));
        if idx != [i.clone()] {
            return None;
        }
        let Sym::Div(num, den) = val else { return None };
        let Sym::Load(l, ref lidx) = *den else { return None };
        if lidx[..] != [i.clone(), i.clone()] || l == x {
            return None;
        }
        let Sym::Sub(bi, sum) = *num else { return None };
        let Sym::Load(bm, ref bidx) = *bi else { return None };
        if bidx[..] != [i.clone()] || bm == l {
            return None;
        }
        let Sym::Sum(k, ext, prod) = *sum else { return None };
        let d = Aff::var(Var::Dim(k));
        (ext == i && *prod == mul(load(l, &[&i, &d]), load(x, &[&d]))).then_some(Trsv { l, x, b: bm })
    }

    /// The column-by-column Cholesky loop nest over `A` (see the module docs).
    fn potrf(&mut self, op: &Op) -> Option<Value> {
        let (jv, lb, n, body) = self.simple_loop(op)?;
        if lb.as_const() != Some(0) {
            return None;
        }
        // The diagonal statement, then the loop over the rows.
        let eff = effects(body)?;
        let [s1, inner] = eff.as_slice() else { return None };
        let (a, idx, val) = self.scalar_stmt(s1)?;
        let j = Aff::var(Var::V(jv));
        if idx != [j.clone(), j.clone()] {
            return None;
        }
        let dot = |s: &Sym, r: &Aff| -> bool {
            let Sym::Sum(k, ext, prod) = s else { return false };
            let d = Aff::var(Var::Dim(*k));
            *ext == j && **prod == mul(load(a, &[r, &d]), load(a, &[&j, &d]))
        };
        let Sym::Sqrt(inner_val) = val else { return None };
        let Sym::Sub(ajj, sum) = *inner_val else { return None };
        if *ajj != load(a, &[&j, &j]) || !dot(&sum, &j) {
            return None;
        }
        let (iv, ilb, iub, ibody) = self.simple_loop(inner)?;
        if Some(ilb) != j.clone().checked_add(&Aff::constant(1)) || iub != n {
            return None;
        }
        let ieff = effects(ibody)?;
        let [s2] = ieff.as_slice() else { return None };
        let (a2, idx2, val2) = self.scalar_stmt(s2)?;
        let i = Aff::var(Var::V(iv));
        if a2 != a || idx2 != [i.clone(), j.clone()] {
            return None;
        }
        let Sym::Div(num, den) = val2 else { return None };
        let Sym::Sub(aij, sum2) = *num else { return None };
        (*den == load(a, &[&j, &j]) && *aij == load(a, &[&i, &j]) && dot(&sum2, &i)).then_some(a)
    }
}

/// The ops of a loop body with effects, in order (statements, scalar stores to
/// arrays, loops); `None` if any other op has effects.
fn effects(body: &[Op]) -> Option<Vec<&Op>> {
    let mut out = vec![];
    for o in body {
        let n = o.name.as_str();
        if is_read_only(o) {
            continue;
        }
        let array_store = n == "memref.store" && o.operands.len() > 2;
        if !(n == "appy.assign" || array_store || n == "scf.for" || n == "scf.parallel") {
            return None;
        }
        out.push(o);
    }
    Some(out)
}

/// `s` with every occurrence of `from` replaced by `to`.
fn subst(s: Sym, from: &Sym, to: &Sym) -> Sym {
    if s == *from {
        return to.clone();
    }
    let b = |x: Box<Sym>| Box::new(subst(*x, from, to));
    match s {
        Sym::Add(x, y) => Sym::Add(b(x), b(y)),
        Sym::Sub(x, y) => Sym::Sub(b(x), b(y)),
        Sym::Mul(x, y) => Sym::Mul(b(x), b(y)),
        Sym::Div(x, y) => Sym::Div(b(x), b(y)),
        Sym::Sqrt(x) => Sym::Sqrt(b(x)),
        Sym::Sum(k, e, x) => Sym::Sum(k, e, b(x)),
        other => other,
    }
}

/// A recognised forward substitution.
struct Trsv {
    l: Value,
    x: Value,
    b: Value,
}

impl Trsv {
    /// L is a float matrix, x and b vectors of its element type.
    fn types_ok(&self, ty: &dyn Fn(Value) -> Option<(DType, usize)>) -> bool {
        match (ty(self.l), ty(self.x), ty(self.b)) {
            (Some((dl @ (DType::F32 | DType::F64), 2)), Some((dx, 1)), Some((db, 1))) => dl == dx && dl == db,
            _ => false,
        }
    }
}
