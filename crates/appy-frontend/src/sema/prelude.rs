//! NumPy functions that appy compiles from Python source: `np.argmax`, `np.argmin`,
//! `np.any`, `np.all` (of an array of any rank), `np.linalg.norm` (of a 1-D array or slice), `np.searchsorted`
//! (of one value, `side='left'`), `np.interp` (of one value), and `np.cumsum` of a 1-D
//! array or slice assigned to a row or slice (`desugar` makes `t = np.cumsum(a)` a call
//! of [`CUMSUM_INTO`]). A call is inlined like
//! a call of the file's own helpers (`desugar`), so each works in host code and inside
//! parallel loops, sequentially within an iteration. The bodies follow NumPy's
//! definitions, NaN handling and ties included (see each function); their spans are
//! moved to the call, so that a diagnostic inside one points at the call.
//!
//! The bodies reach NumPy through the reserved alias [`ALIAS`], which every function's
//! imports include (`resolve::Imports`).

use crate::ast::*;
use appy_ir::diag::{SourceFile, Span};
use std::collections::HashMap;
use std::sync::OnceLock;

/// The alias under which the bodies name NumPy.
pub(crate) const ALIAS: &str = "_appy_np";

const SOURCE: &str = r#"import numpy as _appy_np
import appy

# The first index of the largest value; the first NaN if there is one.
@appy.jit
def argmax(a):
    best = a[0]
    arg = 0
    for k in range(1, a.shape[0]):
        if best != best:
            break
        x = a[k]
        if x > best or x != x:
            best = x
            arg = k
    return _appy_np.int64(arg)

# The first index of the smallest value; the first NaN if there is one.
@appy.jit
def argmin(a):
    best = a[0]
    arg = 0
    for k in range(1, a.shape[0]):
        if best != best:
            break
        x = a[k]
        if x < best or x != x:
            best = x
            arg = k
    return _appy_np.int64(arg)

# Whether an element is not zero (NaN is not zero), of an array of any rank: a count,
# so that it is one reduction (a group's threads together on the GPU).
@appy.jit
def any(a):
    return _appy_np.sum(a != 0) > 0

# Whether no element is zero (NaN is not zero), of an array of any rank.
@appy.jit
def all(a):
    return _appy_np.sum(a == 0) == 0

# The 2-norm of a vector: the square root of the sum of squares, in float64 for
# integer vectors, in the vector's float type otherwise.
@appy.jit
def norm(a):
    s = 0.0
    for k in range(a.shape[0]):
        x = a[k] * 1.0
        s += x * x
    return _appy_np.sqrt(s)

# The first index i with not a[i] < v (side='left'); NaN sorts last, as NumPy sorts it.
@appy.jit
def searchsorted(a, v):
    lo = 0
    hi = a.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        x = a[mid]
        if x < v or (v != v and x == x):
            lo = mid + 1
        else:
            hi = mid
    return _appy_np.int64(lo)

# NumPy's arr_interp for one value: fp[0] left of xp, fp[-1] right of it, else the
# line between the two points around x (fp[j] when x == xp[j]).
@appy.jit
def interp(x, xp, fp):
    n = xp.shape[0]
    if x > xp[n - 1]:
        return float(fp[n - 1])
    if x < xp[0]:
        return float(fp[0])
    lo = 0
    hi = n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if xp[mid] <= x:
            lo = mid
        else:
            hi = mid
    if lo == n - 1 or xp[lo] == x:
        return float(fp[lo])
    slope = (float(fp[lo + 1]) - float(fp[lo])) / (float(xp[lo + 1]) - float(xp[lo]))
    r = slope * (x - float(xp[lo])) + float(fp[lo])
    if r != r:
        r = slope * (x - float(xp[lo + 1])) + float(fp[lo + 1])
        if r != r and fp[lo] == fp[lo + 1]:
            r = float(fp[lo])
    return r

# `out = np.cumsum(a)` for a row or slice `out` of a's length: the running sums, in
# NumPy's type for them (int64 for small signed ints and bools, uint64 for unsigned).
@appy.jit
def cumsum_into(out, a):
    s = _appy_sum_zero(a[0])
    for k in range(a.shape[0]):
        s += a[k]
        out[k] = s
"#;

/// `_appy_sum_zero(x)`: zero of the type `np.sum` gives for elements like `x` (int64
/// for bools and small signed ints, uint64 for unsigned ints, the type itself for
/// floats): the prelude's accumulators start from it. `x` is only typed, not read.
pub(crate) const SUM_ZERO: &str = "_appy_sum_zero";

/// The callee that `desugar` gives `t = np.cumsum(a)` when `t` is a subscript:
/// `_appy_cumsum_into(t, a)`.
pub(crate) const CUMSUM_INTO: &str = "_appy_cumsum_into";

/// What each function computes, for docs/SUBSET.md's table.
pub(crate) const DOCS: &[(&str, &str)] = &[
    (
        "np.argmax",
        "the first index of the largest element of a 1-D array or slice (of the first NaN if any); written in Python, inlined",
    ),
    (
        "np.argmin",
        "the first index of the smallest element (of the first NaN if any); written in Python, inlined",
    ),
    (
        "np.any",
        "whether an element of an array or slice (any rank) is not zero; a count of the nonzero elements, inlined",
    ),
    (
        "np.all",
        "whether no element of an array or slice (any rank) is zero; a count of the zero elements, inlined",
    ),
    (
        "np.linalg.norm",
        "the 2-norm of a 1-D array or slice (summed in order: within rounding of NumPy's); written in Python, inlined",
    ),
    (
        "np.searchsorted",
        "where one value goes in a sorted 1-D array (`side='left'`, NaN last); written in Python, inlined",
    ),
    (
        "np.interp",
        "linear interpolation of one value in increasing sample points, as NumPy's; written in Python, inlined",
    ),
    (
        "np.cumsum",
        "the running sums of a 1-D array or slice, assigned to a row or slice of its length (`out[i, :] = np.cumsum(a[i, :])`); written in Python, inlined",
    ),
];

/// The NumPy function each prelude function implements.
const FUNCTIONS: &[(&str, &str)] = &[
    ("numpy.argmax", "argmax"),
    ("numpy.argmin", "argmin"),
    ("numpy.any", "any"),
    ("numpy.all", "all"),
    ("numpy.linalg.norm", "norm"),
    ("numpy.searchsorted", "searchsorted"),
    ("numpy.interp", "interp"),
    ("builtins._appy_cumsum_into", "cumsum_into"),
];

/// The prelude's function for the NumPy function `qualified` (`numpy.argmax`), if any.
pub(crate) fn helper(qualified: &str) -> Option<&'static Helper> {
    static HELPERS: OnceLock<HashMap<&'static str, Helper>> = OnceLock::new();
    let map = HELPERS.get_or_init(|| {
        let file = SourceFile::new("<appy prelude>", SOURCE);
        FUNCTIONS
            .iter()
            .map(|(q, name)| {
                let p = crate::parse_function(&file, name).unwrap_or_else(|d| panic!("the prelude does not parse: {}", d.render()));
                (
                    *q,
                    Helper {
                        name: name.to_string(),
                        span: Span::default(),
                        function: Ok(p.function),
                    },
                )
            })
            .collect()
    });
    map.get(qualified)
}

/// Whether `h` is one of the prelude's functions.
pub(crate) fn is_prelude(h: &Helper) -> bool {
    h.span == Span::default() && FUNCTIONS.iter().any(|(_, n)| *n == h.name)
}

/// Moves every span of `stmts` to `at`.
pub(crate) fn move_spans(stmts: &mut [Stmt], at: Span) {
    fn expr(e: &mut Expr, at: Span) {
        e.span = at;
        if let ExprKind::Attribute { attr, .. } = &mut e.kind {
            attr.span = at;
        }
        if let ExprKind::Subscript { indices, .. } = &mut e.kind {
            for i in indices.iter_mut() {
                match i {
                    Index::Slice { span, .. } | Index::NewAxis(span) => *span = at,
                    Index::Expr(_) => {}
                }
            }
        }
        e.for_each_child_mut(&mut |c| expr(c, at));
    }
    for s in stmts {
        s.span = at;
        match &mut s.kind {
            StmtKind::Assign { targets, value } => {
                targets.iter_mut().for_each(|t| expr(t, at));
                expr(value, at);
            }
            StmtKind::AugAssign { target, value, .. } => {
                expr(target, at);
                expr(value, at);
            }
            StmtKind::For { var, iter, body, .. } => {
                var.span = at;
                expr(iter, at);
                move_spans(body, at);
            }
            StmtKind::While { cond, body } => {
                expr(cond, at);
                move_spans(body, at);
            }
            StmtKind::If { cond, then, orelse } => {
                expr(cond, at);
                move_spans(then, at);
                move_spans(orelse, at);
            }
            StmtKind::Return(Some(e)) | StmtKind::Expr(e) => expr(e, at),
            _ => {}
        }
    }
}
