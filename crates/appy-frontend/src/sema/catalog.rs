//! The one list of functions and methods appy accepts, under every spelling users
//! write (`np.exp`, `math.exp`, `from math import exp`, `from appy import exp`,
//! `torch.exp`, `scipy.special.erf`, ...). Lowering dispatches on it, the "supported:"
//! hints are generated from it, and `docs/SUBSET.md`'s function table is generated from
//! it too (a test compares the two).

use super::Reduction;
use appy_ir::types::DType;

/// How a function's result is typed and computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    /// An element-wise function (a NumPy ufunc): arrays broadcast; `int`/`bool`
    /// operands give float64, float32 stays float32.
    Float(Op),
    /// An element-wise function that keeps integer types (`abs`, `sign`, `round`, ...).
    Same(Op),
    /// An element-wise predicate: the result is bool (`isnan`, ...).
    Pred(Op),
    /// A `math`-module function: scalars only, the result is a Python float (an int for
    /// `floor/ceil/trunc`, a bool for `isnan/isinf/isfinite`).
    Math(Op),
    /// `max/min` of two or more values (builtins) or `maximum/minimum` (NumPy); one
    /// array argument reduces it (builtins: over the first axis).
    MaxMin { max: bool, numpy: bool },
    /// A reduction over `axis=` (all axes by default); `mean` divides by the count.
    Reduce(Reduction),
    /// The arithmetic mean over `axis=`.
    Mean,
    /// The builtin `sum` (over the first axis of an array).
    BuiltinSum,
    /// A matrix product: `np.dot`, `np.matmul`, `mv`.
    Dot,
    /// `np.transpose`.
    Transpose,
    /// `np.where(cond, x, y)` / `appy.where`.
    Where,
    /// `np.clip(a, lo, hi)`.
    Clip,
    /// `np.arange([start,] stop[, step], dtype=)`.
    Arange,
    /// `np.copy(a)`, `a.copy()`: a new array.
    Copy,
    /// `a.astype(dtype)`: a new array of another type.
    AsType,
    /// `np.copyto(dst, src)`, `a.fill(v)`: writes into an existing array.
    CopyTo,
    /// Array allocation: `np.empty/zeros/ones/full(shape[, fill], dtype=)`,
    /// `torch.empty/zeros/ones/full(*shape, dtype=, device=)`.
    Alloc { fill: Fill, torch: bool },
    /// `np.empty_like/zeros_like/ones_like/full_like(a[, fill], dtype=)`.
    Like(Fill),
    /// A cast to a dtype: `np.float32(x)`, `float(x)`, `int(x)`, `bool(x)`.
    Cast(Cast),
    /// `len(a)`: the length of the first axis.
    Len,
    /// `range(...)` / `prange(...)` (only as a loop's iterable).
    Range,
    /// `print(...)`.
    Print,
    /// `appy.vidx(start, length, bound)`.
    Vidx,
    /// `appy.atomic_add/max/min(a, index, value)`.
    Atomic(Reduction),
}

/// The scalar operation of an element-wise function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// An MLIR `math`/`arith` op applied to one operand (after conversion).
    Unary(&'static str),
    /// An MLIR op applied to two operands of the promoted type.
    Binary(&'static str),
    /// `abs`.
    Abs,
    /// `sign`.
    Sign,
    /// `round`/`rint`/`around` (half to even).
    Round,
    /// `square`.
    Square,
    /// `hypot`.
    Hypot,
    /// `cbrt` (the C library's, refined by a Newton step).
    Cbrt,
    /// `power`/`pow`.
    Pow,
    /// `fmod` (the sign of the dividend).
    Fmod,
    /// `isnan`.
    IsNan,
    /// `isinf`.
    IsInf,
    /// `isfinite`.
    IsFinite,
}

/// The fill value of an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fill {
    /// `empty`: uninitialised (appy fills nothing).
    Empty,
    /// `zeros`.
    Zeros,
    /// `ones`.
    Ones,
    /// `full`: the value is an argument.
    Full,
    /// `appy.buffer(size, dtype)`: a parallel iteration's scratchpad (uninitialised;
    /// shared memory of the group on the GPU).
    Buffer,
}

/// The target of a cast.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cast {
    /// `np.float32(x)`, `np.uint8(x)`, ...: a NumPy scalar of that dtype.
    Np(DType),
    /// `float(x)` (a Python float).
    PyFloat,
    /// `int(x)` (a Python int).
    PyInt,
    /// `bool(x)` (a Python bool).
    PyBool,
}

/// A supported function: its canonical name, every qualified spelling that means it,
/// its rule, and a line for the documentation.
pub(crate) struct Func {
    /// Qualified spellings (`numpy.exp`, `torch.exp`, ...); the first is canonical.
    pub names: &'static [&'static str],
    /// Method names on arrays that mean this function (`a.sum()`).
    pub methods: &'static [&'static str],
    /// How it is typed and lowered.
    pub rule: Rule,
    /// The documentation's description.
    pub doc: &'static str,
}

macro_rules! f {
    ([$($n:expr),*], [$($m:expr),*], $rule:expr, $doc:expr) => {
        Func { names: &[$($n),*], methods: &[$($m),*], rule: $rule, doc: $doc }
    };
}

use Op::*;
use Rule::*;

/// Element-wise float functions: NumPy, `math`, the `appy` re-exports of the paper's
/// listings, torch and scipy spellings.
macro_rules! ufunc {
    ($np:expr, $op:expr, [$($alias:expr),*], $doc:expr) => {
        f!([concat!("numpy.", $np), concat!("appy.", $np), concat!("torch.", $np) $(, $alias)*], [], Float($op), $doc)
    };
}

/// Every supported function. Order is the documentation's order.
pub(crate) static FUNCS: &[Func] = &[
    // ---- element-wise math (NumPy ufuncs; f32 stays f32) ----
    ufunc!("exp", Unary("math.exp"), [], "e**x"),
    ufunc!("exp2", Unary("math.exp2"), [], "2**x"),
    ufunc!("expm1", Unary("math.expm1"), [], "e**x - 1, accurate near 0"),
    ufunc!("log", Unary("math.log"), [], "natural logarithm"),
    ufunc!("log2", Unary("math.log2"), [], "base-2 logarithm"),
    ufunc!("log10", Unary("math.log10"), [], "base-10 logarithm"),
    ufunc!("log1p", Unary("math.log1p"), [], "log(1 + x), accurate near 0"),
    ufunc!("sqrt", Unary("math.sqrt"), [], "square root"),
    ufunc!("cbrt", Cbrt, [], "cube root"),
    ufunc!("sin", Unary("math.sin"), [], "sine"),
    ufunc!("cos", Unary("math.cos"), [], "cosine"),
    ufunc!("tan", Unary("math.tan"), [], "tangent"),
    ufunc!("arcsin", Unary("math.asin"), ["torch.asin"], "inverse sine"),
    ufunc!("arccos", Unary("math.acos"), ["torch.acos"], "inverse cosine"),
    ufunc!("arctan", Unary("math.atan"), ["torch.atan"], "inverse tangent"),
    ufunc!("sinh", Unary("math.sinh"), [], "hyperbolic sine"),
    ufunc!("cosh", Unary("math.cosh"), [], "hyperbolic cosine"),
    ufunc!("tanh", Unary("math.tanh"), [], "hyperbolic tangent"),
    ufunc!("arcsinh", Unary("math.asinh"), ["torch.asinh"], "inverse hyperbolic sine"),
    ufunc!("arccosh", Unary("math.acosh"), ["torch.acosh"], "inverse hyperbolic cosine"),
    ufunc!("arctanh", Unary("math.atanh"), ["torch.atanh"], "inverse hyperbolic tangent"),
    ufunc!(
        "erf",
        Unary("math.erf"),
        ["scipy.special.erf", "torch.special.erf"],
        "error function"
    ),
    ufunc!(
        "erfc",
        Unary("math.erfc"),
        ["scipy.special.erfc", "torch.special.erfc"],
        "complementary error function"
    ),
    ufunc!("floor", Unary("math.floor"), [], "largest integer value ≤ x (a float)"),
    ufunc!("ceil", Unary("math.ceil"), [], "smallest integer value ≥ x (a float)"),
    ufunc!("trunc", Unary("math.trunc"), [], "x rounded toward zero (a float)"),
    ufunc!(
        "arctan2",
        Binary("math.atan2"),
        ["torch.atan2"],
        "atan(y / x) in the right quadrant"
    ),
    ufunc!("hypot", Hypot, [], "sqrt(x*x + y*y) without overflow"),
    ufunc!("copysign", Binary("math.copysign"), [], "|x| with the sign of y"),
    f!(
        ["numpy.fmod", "appy.fmod", "torch.fmod"],
        [],
        Same(Fmod),
        "remainder with the sign of the dividend (C's fmod)"
    ),
    f!(["numpy.power", "appy.power", "torch.pow"], [], Same(Pow), "x**y"),
    f!(
        ["numpy.abs", "numpy.absolute", "appy.abs", "torch.abs", "builtins.abs"],
        [],
        Same(Abs),
        "absolute value"
    ),
    f!(["numpy.fabs", "appy.fabs"], [], Float(Abs), "absolute value (a float)"),
    f!(
        ["numpy.sign", "appy.sign", "torch.sign"],
        [],
        Same(Sign),
        "-1, 0 or 1 (NaN for NaN)"
    ),
    f!(
        ["numpy.round", "numpy.around", "numpy.rint", "appy.round", "torch.round"],
        [],
        Same(Round),
        "nearest integer value, halves to even"
    ),
    f!(["numpy.square", "appy.square", "torch.square"], [], Same(Square), "x*x"),
    f!(["numpy.isnan", "appy.isnan", "torch.isnan"], [], Pred(IsNan), "x is NaN"),
    f!(["numpy.isinf", "appy.isinf", "torch.isinf"], [], Pred(IsInf), "x is ±inf"),
    f!(
        ["numpy.isfinite", "appy.isfinite", "torch.isfinite"],
        [],
        Pred(IsFinite),
        "x is neither NaN nor ±inf"
    ),
    // ---- the math module: scalars, Python float results ----
    f!(["math.exp"], [], Math(Unary("math.exp")), "e**x"),
    f!(["math.exp2"], [], Math(Unary("math.exp2")), "2**x"),
    f!(["math.expm1"], [], Math(Unary("math.expm1")), "e**x - 1"),
    f!(["math.log"], [], Math(Unary("math.log")), "natural logarithm"),
    f!(["math.log2"], [], Math(Unary("math.log2")), "base-2 logarithm"),
    f!(["math.log10"], [], Math(Unary("math.log10")), "base-10 logarithm"),
    f!(["math.log1p"], [], Math(Unary("math.log1p")), "log(1 + x)"),
    f!(["math.sqrt"], [], Math(Unary("math.sqrt")), "square root"),
    f!(["math.cbrt"], [], Math(Cbrt), "cube root"),
    f!(["math.sin"], [], Math(Unary("math.sin")), "sine"),
    f!(["math.cos"], [], Math(Unary("math.cos")), "cosine"),
    f!(["math.tan"], [], Math(Unary("math.tan")), "tangent"),
    f!(["math.asin"], [], Math(Unary("math.asin")), "inverse sine"),
    f!(["math.acos"], [], Math(Unary("math.acos")), "inverse cosine"),
    f!(["math.atan"], [], Math(Unary("math.atan")), "inverse tangent"),
    f!(["math.sinh"], [], Math(Unary("math.sinh")), "hyperbolic sine"),
    f!(["math.cosh"], [], Math(Unary("math.cosh")), "hyperbolic cosine"),
    f!(["math.tanh"], [], Math(Unary("math.tanh")), "hyperbolic tangent"),
    f!(["math.asinh"], [], Math(Unary("math.asinh")), "inverse hyperbolic sine"),
    f!(["math.acosh"], [], Math(Unary("math.acosh")), "inverse hyperbolic cosine"),
    f!(["math.atanh"], [], Math(Unary("math.atanh")), "inverse hyperbolic tangent"),
    f!(["math.erf"], [], Math(Unary("math.erf")), "error function"),
    f!(["math.erfc"], [], Math(Unary("math.erfc")), "complementary error function"),
    f!(["math.floor"], [], Math(Unary("math.floor")), "floor, as an int"),
    f!(["math.ceil"], [], Math(Unary("math.ceil")), "ceiling, as an int"),
    f!(["math.trunc"], [], Math(Unary("math.trunc")), "rounded toward zero, as an int"),
    f!(["math.fabs"], [], Math(Abs), "absolute value"),
    f!(["math.atan2"], [], Math(Binary("math.atan2")), "atan(y / x) in the right quadrant"),
    f!(["math.hypot"], [], Math(Hypot), "sqrt(x*x + y*y)"),
    f!(["math.copysign"], [], Math(Binary("math.copysign")), "|x| with the sign of y"),
    f!(["math.fmod"], [], Math(Fmod), "C's fmod"),
    f!(["math.pow"], [], Math(Pow), "x**y (a float)"),
    f!(["math.isnan"], [], Math(IsNan), "x is NaN"),
    f!(["math.isinf"], [], Math(IsInf), "x is ±inf"),
    f!(["math.isfinite"], [], Math(IsFinite), "x is neither NaN nor ±inf"),
    // ---- max / min ----
    f!(
        ["builtins.max"],
        [],
        MaxMin { max: true, numpy: false },
        "largest of the arguments, or of an array's first axis"
    ),
    f!(
        ["builtins.min"],
        [],
        MaxMin { max: false, numpy: false },
        "smallest of the arguments, or of an array's first axis"
    ),
    f!(
        ["numpy.maximum", "numpy.fmax", "appy.maximum", "torch.maximum"],
        [],
        MaxMin { max: true, numpy: true },
        "element-wise maximum (NaN propagates)"
    ),
    f!(
        ["numpy.minimum", "numpy.fmin", "appy.minimum", "torch.minimum"],
        [],
        MaxMin { max: false, numpy: true },
        "element-wise minimum (NaN propagates)"
    ),
    // ---- reductions ----
    f!(
        ["numpy.sum", "appy.sum", "torch.sum"],
        ["sum"],
        Reduce(Reduction::Sum),
        "sum over `axis=` (all axes by default)"
    ),
    f!(
        ["numpy.prod", "appy.prod", "torch.prod"],
        ["prod"],
        Reduce(Reduction::Prod),
        "product over `axis=`"
    ),
    f!(
        ["numpy.max", "numpy.amax", "appy.max", "torch.amax"],
        ["max"],
        Reduce(Reduction::Max),
        "maximum over `axis=`"
    ),
    f!(
        ["numpy.min", "numpy.amin", "appy.min", "torch.amin"],
        ["min"],
        Reduce(Reduction::Min),
        "minimum over `axis=`"
    ),
    f!(
        ["numpy.mean", "appy.mean", "torch.mean"],
        ["mean"],
        Mean,
        "arithmetic mean over `axis=`"
    ),
    f!(["builtins.sum"], [], BuiltinSum, "sum over an array's first axis"),
    // ---- products, shapes, selection ----
    f!(
        ["numpy.dot", "numpy.matmul", "builtins.mv", "appy.mv", "torch.matmul", "torch.mv"],
        [],
        Dot,
        "matrix products (also `@`)"
    ),
    f!(
        ["numpy.transpose", "builtins.transpose", "appy.transpose"],
        [],
        Transpose,
        "reversed axes (also `.T`)"
    ),
    f!(
        ["numpy.where", "appy.where", "torch.where"],
        [],
        Where,
        "element-wise `x if cond else y`"
    ),
    f!(
        ["numpy.clip", "appy.clip", "torch.clamp", "torch.clip"],
        [],
        Clip,
        "values limited to [lo, hi]"
    ),
    f!(["numpy.arange", "torch.arange"], [], Arange, "evenly spaced values, a new array"),
    f!(
        ["numpy.copy", "torch.clone", "appy.np_shared.copy"],
        ["copy", "clone"],
        Copy,
        "a new array with the same values"
    ),
    f!([], ["astype"], AsType, "a new array converted to a dtype"),
    f!(
        ["numpy.copyto"],
        ["fill"],
        CopyTo,
        "writes values into an existing array (`a.fill(v)`)"
    ),
    // ---- allocation ----
    f!(
        ["appy.buffer"],
        [],
        Alloc {
            fill: Fill::Buffer,
            torch: false
        },
        "a parallel iteration's scratchpad of a constant size (uninitialised; the group's shared memory on the GPU), in a parallel loop's body"
    ),
    f!(
        ["numpy.empty", "appy.np_shared.empty"],
        [],
        Alloc {
            fill: Fill::Empty,
            torch: false
        },
        "a new uninitialised array of a shape"
    ),
    f!(
        ["numpy.zeros", "appy.np_shared.zeros"],
        [],
        Alloc {
            fill: Fill::Zeros,
            torch: false
        },
        "a new array of zeros"
    ),
    f!(
        ["numpy.ones"],
        [],
        Alloc {
            fill: Fill::Ones,
            torch: false
        },
        "a new array of ones"
    ),
    f!(
        ["numpy.full"],
        [],
        Alloc {
            fill: Fill::Full,
            torch: false
        },
        "a new array filled with a value"
    ),
    f!(
        ["torch.empty"],
        [],
        Alloc {
            fill: Fill::Empty,
            torch: true
        },
        "as `np.empty` (`device=` is ignored)"
    ),
    f!(
        ["torch.zeros"],
        [],
        Alloc {
            fill: Fill::Zeros,
            torch: true
        },
        "as `np.zeros` (`device=` is ignored)"
    ),
    f!(
        ["torch.ones"],
        [],
        Alloc {
            fill: Fill::Ones,
            torch: true
        },
        "as `np.ones` (`device=` is ignored)"
    ),
    f!(
        ["torch.full"],
        [],
        Alloc {
            fill: Fill::Full,
            torch: true
        },
        "as `np.full` (`device=` is ignored)"
    ),
    f!(
        ["numpy.empty_like", "torch.empty_like", "appy.np_shared.empty_like"],
        [],
        Like(Fill::Empty),
        "a new array of another's shape and dtype"
    ),
    f!(
        ["numpy.zeros_like", "torch.zeros_like"],
        [],
        Like(Fill::Zeros),
        "zeros of another's shape and dtype"
    ),
    f!(
        ["numpy.ones_like", "torch.ones_like"],
        [],
        Like(Fill::Ones),
        "ones of another's shape and dtype"
    ),
    f!(
        ["numpy.full_like", "torch.full_like"],
        [],
        Like(Fill::Full),
        "a value in another's shape and dtype"
    ),
    // ---- casts ----
    f!(
        ["numpy.float32", "numpy.single"],
        [],
        Cast(self::Cast::Np(DType::F32)),
        "converted to float32"
    ),
    f!(
        ["numpy.float64", "numpy.double"],
        [],
        Cast(self::Cast::Np(DType::F64)),
        "converted to float64"
    ),
    f!(["numpy.int32"], [], Cast(self::Cast::Np(DType::I32)), "converted to int32"),
    f!(
        ["numpy.int64", "numpy.intp"],
        [],
        Cast(self::Cast::Np(DType::I64)),
        "converted to int64"
    ),
    f!(["numpy.int8"], [], Cast(self::Cast::Np(DType::I8)), "converted to int8 (wrapping)"),
    f!(
        ["numpy.int16"],
        [],
        Cast(self::Cast::Np(DType::I16)),
        "converted to int16 (wrapping)"
    ),
    f!(
        ["numpy.uint8"],
        [],
        Cast(self::Cast::Np(DType::U8)),
        "converted to uint8 (wrapping)"
    ),
    f!(
        ["numpy.uint16"],
        [],
        Cast(self::Cast::Np(DType::U16)),
        "converted to uint16 (wrapping)"
    ),
    f!(
        ["numpy.uint32"],
        [],
        Cast(self::Cast::Np(DType::U32)),
        "converted to uint32 (wrapping)"
    ),
    f!(["numpy.uint64"], [], Cast(self::Cast::Np(DType::U64)), "converted to uint64"),
    f!(
        ["numpy.float16", "numpy.half"],
        [],
        Cast(self::Cast::Np(DType::F16)),
        "converted to float16 (rounded to nearest)"
    ),
    f!(["numpy.bool_"], [], Cast(self::Cast::Np(DType::Bool)), "converted to bool"),
    f!(
        ["builtins.float"],
        [],
        Cast(self::Cast::PyFloat),
        "a Python float (also `float('inf')`)"
    ),
    f!(["builtins.int"], [], Cast(self::Cast::PyInt), "a Python int (truncated)"),
    f!(["builtins.bool"], [], Cast(self::Cast::PyBool), "a Python bool"),
    // ---- the rest ----
    f!(["builtins.len"], [], Len, "the length of an array's first axis"),
    f!(["builtins.range", "appy.prange", "numba.prange"], [], Range, "a loop's iterable"),
    f!(["builtins.print"], [], Print, "prints scalars and strings from the host code"),
    f!(["appy.vidx"], [], Vidx, "a vector of indices (assembly level)"),
    f!(["appy.atomic_add"], [], Atomic(Reduction::Sum), "`a[index] += value`, atomically"),
    f!(
        ["appy.atomic_max"],
        [],
        Atomic(Reduction::Max),
        "`a[index] = max(a[index], value)`, atomically"
    ),
    f!(
        ["appy.atomic_min"],
        [],
        Atomic(Reduction::Min),
        "`a[index] = min(a[index], value)`, atomically"
    ),
];

/// The function a qualified name (`numpy.exp`, `builtins.abs`) refers to.
pub(crate) fn lookup(qualified: &str) -> Option<&'static Func> {
    let q = qualified.strip_prefix("np.").map(|r| format!("numpy.{r}"));
    let q = q.as_deref().unwrap_or(qualified);
    FUNCS.iter().find(|f| f.names.contains(&q))
}

/// The function an array method (`a.sum`) refers to.
pub(crate) fn method(name: &str) -> Option<&'static Func> {
    FUNCS.iter().find(|f| f.methods.contains(&name))
}

/// A summary of the supported functions, for "supported:" hints.
pub(crate) fn hint() -> String {
    let short = |f: &Func| {
        f.names
            .first()
            .map(|n| n.replace("numpy.", "np.").replace("builtins.", ""))
            .unwrap_or_default()
    };
    let pick = |keep: &dyn Fn(&Rule) -> bool| -> Vec<String> {
        let mut v: Vec<String> = vec![];
        for f in FUNCS.iter().filter(|f| keep(&f.rule)) {
            let s = short(f);
            if !s.is_empty() && !v.contains(&s) {
                v.push(s);
            }
        }
        v
    };
    let ew = pick(&|r| matches!(r, Rule::Float(_) | Rule::Same(_) | Rule::Pred(_)));
    let ew: Vec<String> = ew.iter().map(|s| s.trim_start_matches("np.").to_string()).collect();
    let red = pick(&|r| matches!(r, Rule::Reduce(_) | Rule::Mean));
    let mut other = pick(&|r| {
        !matches!(
            r,
            Rule::Float(_) | Rule::Same(_) | Rule::Pred(_) | Rule::Math(_) | Rule::Reduce(_) | Rule::Mean | Rule::Range
        )
    });
    other.extend(super::prelude::DOCS.iter().map(|(n, _)| n.to_string()));
    format!(
        "element-wise np.{{{}}} (also math.*, torch.*, `from appy import ...`); reductions {} (also as methods, `a.sum(axis=0)`); {}; see docs/SUBSET.md",
        ew.join(","),
        red.join(", "),
        other.join(", ")
    )
}

/// The array methods (`a.sum(axis=0)`, `a.copy()`, ...), for the "supported:" hint of an
/// unknown one.
pub(crate) fn method_hint() -> String {
    let mut v: Vec<String> = vec![];
    for m in FUNCS.iter().flat_map(|f| f.methods) {
        let s = format!(".{m}()");
        if !v.contains(&s) {
            v.push(s);
        }
    }
    format!("array methods {}; see docs/SUBSET.md", v.join(", "))
}

/// The Markdown table of `docs/SUBSET.md` (generated; a test keeps the file current).
pub fn markdown() -> String {
    let mut out = String::from("| function | also spelled | what it computes |\n|---|---|---|\n");
    for f in FUNCS {
        let short = |n: &str| n.replace("numpy.", "np.").replace("builtins.", "");
        let (first, rest) = match f.names.split_first() {
            Some((a, r)) => (
                format!("`{}`", short(a)),
                r.iter().map(|n| format!("`{}`", short(n))).collect::<Vec<_>>(),
            ),
            None => (String::new(), vec![]),
        };
        let mut also = rest;
        also.extend(f.methods.iter().map(|m| format!("`a.{m}()`")));
        let first = if first.is_empty() { also.remove(0) } else { first };
        out.push_str(&format!("| {first} | {} | {} |\n", also.join(", "), f.doc));
    }
    for (name, doc) in super::prelude::DOCS {
        out.push_str(&format!("| `{name}` |  | {doc} |\n"));
    }
    out
}

/// The reduction a two-argument max/min call performs (`max(s, x)`, `np.maximum(s, x)`,
/// `from appy import maximum`), by the callee's qualified name.
pub(crate) fn max_min(qualified: &str) -> Option<Reduction> {
    match lookup(qualified)?.rule {
        Rule::MaxMin { max: true, .. } => Some(Reduction::Max),
        Rule::MaxMin { max: false, .. } => Some(Reduction::Min),
        _ => None,
    }
}

/// The reduction of a one-argument reduction call (`sum(v)`, `np.max(v)`, `appy.sum`).
pub(crate) fn reduction(qualified: &str) -> Option<Reduction> {
    match lookup(qualified)?.rule {
        Rule::Reduce(op) => Some(op),
        Rule::BuiltinSum => Some(Reduction::Sum),
        Rule::MaxMin { max: true, numpy: false } => Some(Reduction::Max),
        Rule::MaxMin { max: false, numpy: false } => Some(Reduction::Min),
        _ => None,
    }
}
