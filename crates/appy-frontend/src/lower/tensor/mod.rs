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
pub(super) use crate::sema::shape::has_slices;

mod assign;
mod expr;
mod views;

/// A positional axis of a tensor value: a statement dimension (union-find node) or a
/// broadcast axis of length one (`None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::lower) enum Ax {
    D(usize),
    One,
}

#[derive(Clone, Debug)]
pub(in crate::lower) struct Tensor {
    v: Value,
    axes: Vec<Ax>,
    t: STy,
}

#[derive(Clone, Debug)]
pub(in crate::lower) enum TV {
    S(Value, STy),
    T(Tensor),
}

/// How a tensor value was made (to compute its dimensions after unification).
#[derive(Clone, Debug)]
pub(in crate::lower) enum Made {
    View(Vec<usize>),
    Ew(Vec<Value>),
    Reduce(Value, Vec<usize>, &'static str, Span),
}

/// The target of a tensor statement.
pub(in crate::lower) enum TTarget<'e> {
    /// An array subscript: a slice, a row, an element range (`a[1:]`, `A[i, :]`).
    Array(&'e Expr),
    /// The whole of an array or view (`B *= alpha`).
    Whole(view::View, Span),
    /// A scalar variable (`s = np.sum(a)`).
    Scalar(&'e Expr),
    /// A new array of the value's shape and type, allocated by the statement.
    New,
}

/// What a tensor statement leaves to do after its `appy.assign`.
pub(in crate::lower) enum Post {
    /// Nothing.
    None,
    /// Assign the result slot to a scalar variable.
    Scalar(String, Value, STy, Span),
    /// The new array the statement allocated.
    New(V),
}

/// An array operand or target of a statement: the memref, its element type, the
/// positional axes of the tensor, and per axis of the memref the statement dimension
/// (`None` for a scalar index), the i64 lower bound or index, and the step.
#[derive(Clone, Debug)]
pub(in crate::lower) struct Sliced {
    m: Value,
    dt: DType,
    axes: Vec<Ax>,
    dims: Vec<Option<usize>>,
    ops: Vec<Value>,
    steps: Vec<i64>,
}

impl Sliced {
    /// The element type as a scalar type.
    fn elem(&self) -> STy {
        STy::strong(self.dt)
    }
}

/// Per-statement state: the dimension nodes (union-find), their extents and names.
#[derive(Default)]
pub(in crate::lower) struct TStmt {
    parent: Vec<usize>,
    ext: Vec<Value>,
    text: Vec<String>,
    span: Vec<Span>,
    made: Vec<(Value, Made, String)>,
    bounds: HashMap<String, Value>,
    /// Normalised slices by their text and axis, so that the same slice of the same
    /// array in one statement is the same values (the tensor passes compare them).
    slices: HashMap<String, (Value, Value)>,
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

fn norm_slice(lo: &str, hi: &str) -> String {
    let lo: String = lo.split_whitespace().collect();
    let hi: String = hi.split_whitespace().collect();
    let lo = if lo == "0" { String::new() } else { lo };
    format!("{lo}:{hi}")
}
