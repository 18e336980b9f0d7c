//! Types of values: the typing rules that lowering applies as it emits each operation
//! (NumPy 2 / NEP 50 promotion, [`appy_ir::types::promote`]), and [`type_of`], which
//! applies the same rules to an expression without emitting anything, so that
//! semantic analysis ([`super::analysis`]) knows every variable's type before lowering
//! starts.
//!
//! Element-wise operations on arrays are typed as the scalar operation on their element
//! types (lowering lifts the scalar operation, see `lower/tensor`); reductions and
//! matrix products add the rules of [`reduced`].

use super::Reduction;
use super::catalog::{self, Cast, Op, Rule};
use super::resolve::qualify;
use super::shape::{self, Kind, Names};
use crate::ast::*;
use appy_ir::types::{DType, STy, promote};

// ----- rules shared with lowering ---------------------------------------------------

/// The element type of `np.dot`/`@`: the operands' promoted type, as NumPy keeps it
/// (int8 stays int8, wrapping; two bool arrays give bool).
pub(crate) fn dot_result(a: STy, b: STy) -> STy {
    if a.dt == DType::Bool && b.dt == DType::Bool {
        STy::strong(DType::Bool)
    } else {
        binary(BinOp::Mul, a, b)
    }
}

/// The type of `a op b`: the type both operands are converted to and the result's
/// (true division gives a float, arithmetic on booleans an integer).
pub(crate) fn binary(op: BinOp, a: STy, b: STy) -> STy {
    let mut t = promote(a, b);
    if matches!(op, BinOp::Div) {
        t = t.to_float();
    }
    if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::FloorDiv | BinOp::Mod | BinOp::Pow) && t.dt == DType::Bool {
        t = if a.weak && b.weak { STy::INT } else { STy::strong(DType::I64) };
    }
    t
}

/// What is known at compile time of the sign of an integer exponent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sign {
    /// A constant (`-2`, `-(1 + 1)`).
    Const(i64),
    /// Never negative (a loop variable of `range(n)`, `len(a)`, `abs(k)`, ...).
    NonNeg,
    /// Either.
    Unknown,
}

/// How `x ** y` is computed when both are integers (or booleans): Python's `int ** int`
/// is an int for an exponent `>= 0` and a float for a negative one; NumPy's integer
/// power of a negative exponent raises `ValueError`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Power {
    /// Not an integer power: a float `**` (the type of [`binary`]).
    Float,
    /// An integer power with a non-negative exponent: an int (of [`binary`]'s type).
    Int,
    /// Python int `**` a negative constant: a Python float, `float(x) ** float(y)`.
    PyNegative,
    /// Python int `**` an exponent of unknown sign: computed as a float64 (the int
    /// result converted, or the float one); lowering accepts it only where the value is
    /// used as a float, where both give the same type (`x * 2 ** k` with a float `x`).
    PyUnknownSign,
    /// A NumPy integer `**` a negative constant: an error (NumPy raises).
    NumpyNegative,
    /// A NumPy integer `**` an exponent of unknown sign: an int, with a run-time check
    /// that the exponent is not negative (an error, as NumPy raises).
    NumpyUnknownSign,
}

/// The kind of `x ** y` for operands of types `a`, `b`, the exponent's sign `sign`;
/// `numpy`: `np.power(x, y)`, whose integers are NumPy's even when they are Python
/// ints.
pub(crate) fn power(a: STy, b: STy, sign: Sign, numpy: bool) -> Power {
    let t = binary(BinOp::Pow, a, b);
    if t.is_float() {
        return Power::Float;
    }
    let sign = if b.dt == DType::Bool || b.dt.is_unsigned() {
        Sign::NonNeg
    } else {
        sign
    };
    let python = t.weak && !numpy;
    match (sign, python) {
        (Sign::NonNeg, _) => Power::Int,
        (Sign::Const(k), _) if k >= 0 => Power::Int,
        (Sign::Const(_), true) => Power::PyNegative,
        (Sign::Const(_), false) => Power::NumpyNegative,
        (Sign::Unknown, true) => Power::PyUnknownSign,
        (Sign::Unknown, false) => Power::NumpyUnknownSign,
    }
}

/// The type of `x ** y` computed as `p` ([`power`]).
pub(crate) fn power_type(p: Power, a: STy, b: STy) -> STy {
    match p {
        Power::PyNegative | Power::PyUnknownSign => STy::FLOAT,
        _ => binary(BinOp::Pow, a, b),
    }
}

/// The sign of the integer expression `e`: constants are folded (`-(d + 1)` with a
/// constant `d`); `nonneg` tells the names that are never negative.
pub(crate) fn sign_of(e: &Expr, nonneg: &dyn Fn(&str) -> bool) -> Sign {
    match fold_int(e) {
        Some(k) => Sign::Const(k),
        None if is_nonneg(e, nonneg) => Sign::NonNeg,
        None => Sign::Unknown,
    }
}

/// The value of a constant integer expression (literals, `True`, unary `-`/`+`, and
/// `+ - *` of them).
pub(crate) fn fold_int(e: &Expr) -> Option<i64> {
    match &e.kind {
        ExprKind::Int(i) => Some(*i),
        ExprKind::Bool(b) => Some(*b as i64),
        ExprKind::Unary { op: UnaryOp::Neg, operand } => fold_int(operand)?.checked_neg(),
        ExprKind::Unary { op: UnaryOp::Pos, operand } => fold_int(operand),
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (fold_int(lhs)?, fold_int(rhs)?);
            match op {
                BinOp::Add => a.checked_add(b),
                BinOp::Sub => a.checked_sub(b),
                BinOp::Mul => a.checked_mul(b),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether the integer expression `e` is never negative.
fn is_nonneg(e: &Expr, nonneg: &dyn Fn(&str) -> bool) -> bool {
    if let Some(k) = fold_int(e) {
        return k >= 0;
    }
    match &e.kind {
        ExprKind::Name(n) => nonneg(n),
        ExprKind::Binary {
            op: BinOp::Add | BinOp::Mul | BinOp::FloorDiv | BinOp::Pow,
            lhs,
            rhs,
        } => is_nonneg(lhs, nonneg) && is_nonneg(rhs, nonneg),
        // Python's `%` takes the sign of the divisor.
        ExprKind::Binary { op: BinOp::Mod, rhs, .. } => fold_int(rhs).is_some_and(|k| k > 0),
        ExprKind::Call { func, args, .. } => {
            matches!(&func.kind, ExprKind::Name(f) if f == "len" || f == "abs")
                || matches!(&func.kind, ExprKind::Name(f) if f == "max" && args.iter().any(|a| is_nonneg(a, nonneg)))
        }
        ExprKind::Attribute { attr, .. } => matches!(attr.name.as_str(), "size" | "ndim"),
        // `a.shape[k]`
        ExprKind::Subscript { value, .. } => matches!(&value.kind, ExprKind::Attribute { attr, .. } if attr.name == "shape"),
        _ => false,
    }
}

/// The names of `body` that are never negative: variables of `range(...)` /
/// `prange(...)` loops whose start is never negative and whose step is a positive
/// constant, that nothing else assigns (`params`: the function's parameters, never
/// such names).
pub(crate) fn nonneg_names(body: &[Stmt], params: &[Ident]) -> std::collections::HashSet<String> {
    fn loops_of<'a>(stmts: &'a [Stmt], out: &mut Vec<(&'a str, &'a Expr)>) {
        for s in stmts {
            match &s.kind {
                StmtKind::For { var, iter, body, .. } => {
                    out.push((&var.name, iter));
                    loops_of(body, out);
                }
                StmtKind::While { body, .. } => loops_of(body, out),
                StmtKind::If { then, orelse, .. } => {
                    loops_of(then, out);
                    loops_of(orelse, out);
                }
                _ => {}
            }
        }
    }
    let mut loops = vec![];
    loops_of(body, &mut loops);
    // A loop variable is assigned once per loop; any other binding makes it a variable.
    let mut assigned = vec![];
    super::names::ast_names_assigned(body, &mut assigned);
    let mut others: std::collections::HashMap<&str, isize> = Default::default();
    for (n, _) in &assigned {
        *others.entry(n.as_str()).or_default() += 1;
    }
    for (n, _) in &loops {
        *others.entry(n).or_default() -= 1;
    }
    let mut set: std::collections::HashSet<String> = loops
        .iter()
        .filter(|(n, _)| others.get(n) == Some(&0) && !params.iter().any(|p| p.name == *n))
        .map(|(n, _)| n.to_string())
        .collect();
    // A start may use another loop variable: drop the names of loops that do not
    // qualify until none is left.
    loop {
        let bad: Vec<String> = loops
            .iter()
            .filter(|(n, iter)| set.contains(*n) && !nonneg_range(iter, &|m| set.contains(m)))
            .map(|(n, _)| n.to_string())
            .collect();
        if bad.is_empty() {
            return set;
        }
        for n in bad {
            set.remove(&n);
        }
    }
}

/// Whether every value of the loop's iterable (`range(...)`) is `>= 0`.
fn nonneg_range(iter: &Expr, nonneg: &dyn Fn(&str) -> bool) -> bool {
    let ExprKind::Call { func, args, kwargs } = &iter.kind else {
        return false;
    };
    let is_range = match &func.kind {
        ExprKind::Name(f) => f == "range" || f == "prange",
        ExprKind::Attribute { attr, .. } => attr.name == "prange",
        _ => false,
    };
    if !is_range || !kwargs.is_empty() {
        return false;
    }
    match args.as_slice() {
        [_] => true,
        [start, _] => is_nonneg(start, nonneg),
        [start, _, step] => is_nonneg(start, nonneg) && fold_int(step).is_some_and(|k| k > 0),
        _ => false,
    }
}

/// The type of `op x` for an operand of type `t`.
pub(crate) fn unary(op: UnaryOp, t: STy) -> STy {
    match op {
        UnaryOp::Pos | UnaryOp::Invert => t,
        UnaryOp::Neg if t.dt == DType::Bool => STy::INT,
        UnaryOp::Neg => t,
        UnaryOp::Not => STy::BOOL,
    }
}

/// The type the operands of an element-wise function (`Rule::Float`, `Same` or
/// `Pred`) are converted to: their promotion, made a float for NumPy's float
/// functions and predicates, an integer for booleans under `abs`, `sign`, ...
pub(crate) fn elementwise(rule: Rule, op: Op, args: &[STy]) -> STy {
    let mut t = args.iter().skip(1).fold(args[0], |acc, t| promote(acc, *t));
    if matches!(rule, Rule::Float(_) | Rule::Pred(_)) {
        // NumPy's float functions compute bools (`np.sqrt(True)` too) and int8/uint8 in
        // float16, int16/uint16 in float32.
        t = match t.dt {
            DType::Bool => STy::strong(DType::F16),
            DType::I8 | DType::U8 if !t.weak => STy::strong(DType::F16),
            DType::I16 | DType::U16 if !t.weak => STy::strong(DType::F32),
            _ => t.to_float(),
        };
    }
    if matches!(rule, Rule::Same(_)) && t.dt == DType::Bool && !matches!(op, Op::Round) {
        t = if t.weak { STy::INT } else { STy::strong(DType::I64) };
    }
    t
}

/// The result type of the scalar operation `op` on operands of type `t`.
pub(crate) fn op_result(op: Op, t: STy) -> STy {
    match op {
        Op::IsNan | Op::IsInf | Op::IsFinite => STy::strong(DType::Bool),
        _ => t,
    }
}

/// The result type of a `math`-module function (computed on Python floats).
pub(crate) fn math_result(op: Op) -> STy {
    match op {
        Op::Unary("math.floor" | "math.ceil" | "math.trunc") => STy::INT,
        op => op_result(op, STy::FLOAT),
    }
}

/// The type a cast (`np.float32(x)`, `float(x)`, ...) gives.
pub(crate) fn cast(c: Cast) -> STy {
    match c {
        Cast::Np(d) => STy::strong(d),
        Cast::PyFloat => STy::FLOAT,
        Cast::PyInt => STy::INT,
        Cast::PyBool => STy::BOOL,
    }
}

/// The element type a reduction of elements of type `t` computes in: sums of booleans
/// and signed integers are int64, of unsigned ones uint64, as NumPy's are.
pub(crate) fn reduced(op: Reduction, t: STy) -> STy {
    if t.dt.half().is_some() {
        // float16 stays float16 (accumulated in float32: [`accumulator`]).
        t
    } else if matches!(op, Reduction::Sum | Reduction::Prod) && t.dt.is_unsigned() {
        // NumPy sums and multiplies unsigned integers in uint64.
        STy::strong(DType::U64)
    } else if op == Reduction::Prod && matches!(t.dt, DType::I8 | DType::I16 | DType::I32) {
        STy::strong(DType::I64)
    } else if op == Reduction::Sum && !t.is_float() && t != STy::INT {
        // np.sum of booleans and signed integers is a NumPy int64 (strong: with a
        // float32 it gives float64).
        STy::strong(DType::I64)
    } else {
        t
    }
}

/// The element type a mean is computed in: float64 for integer input, float32 for
/// 16-bit floats (rounded back at the end), as in NumPy.
pub(crate) fn mean_input(t: STy) -> STy {
    if t.dt.half().is_some() {
        STy::strong(DType::F32)
    } else if t.is_float() {
        t
    } else {
        STy::strong(DType::F64)
    }
}

/// The type a reduction of elements of type `t` accumulates in: [`reduced`], but
/// float32 for 16-bit floats (NumPy sums float16 in float32 and rounds the result).
pub(crate) fn accumulator(op: Reduction, t: STy) -> STy {
    if t.dt.half().is_some() {
        STy::strong(DType::F32)
    } else {
        reduced(op, t)
    }
}

/// The dtype a qualified name denotes (`numpy.float32`, `builtins.int`, `torch.long`).
pub(crate) fn named_dtype(q: &str) -> Option<DType> {
    match q {
        "numpy.float32" | "numpy.single" | "torch.float32" | "torch.float" => Some(DType::F32),
        "numpy.float64" | "numpy.double" | "builtins.float" | "torch.float64" | "torch.double" => Some(DType::F64),
        "numpy.int32" | "numpy.intc" | "torch.int32" | "torch.int" => Some(DType::I32),
        "numpy.int64" | "numpy.intp" | "builtins.int" | "torch.int64" | "torch.long" => Some(DType::I64),
        "numpy.bool_" | "numpy.bool" | "builtins.bool" | "torch.bool" => Some(DType::Bool),
        "numpy.int8" | "numpy.byte" | "torch.int8" => Some(DType::I8),
        "numpy.int16" | "numpy.short" | "torch.int16" | "torch.short" => Some(DType::I16),
        "numpy.uint8" | "numpy.ubyte" | "torch.uint8" => Some(DType::U8),
        "numpy.uint16" | "numpy.ushort" | "torch.uint16" => Some(DType::U16),
        "numpy.uint32" | "numpy.uintc" | "torch.uint32" => Some(DType::U32),
        "numpy.uint64" | "numpy.uintp" | "torch.uint64" => Some(DType::U64),
        "numpy.float16" | "numpy.half" | "torch.float16" | "torch.half" | "jax.numpy.float16" => Some(DType::F16),
        "torch.bfloat16" | "jax.numpy.bfloat16" | "ml_dtypes.bfloat16" => Some(DType::BF16),
        _ => None,
    }
}

/// The dtype a string denotes (`'float32'`, `'f4'`, `'<i8'`).
pub(crate) fn dtype_str(s: &str) -> Option<DType> {
    match s.trim().trim_start_matches(['<', '=', '|']) {
        "float32" | "f4" | "single" => Some(DType::F32),
        "float64" | "f8" | "float" | "double" | "d" => Some(DType::F64),
        "int32" | "i4" | "intc" => Some(DType::I32),
        "int64" | "i8" | "int" | "long" | "intp" => Some(DType::I64),
        "bool" | "?" | "b1" => Some(DType::Bool),
        "int8" | "i1" | "b" | "byte" => Some(DType::I8),
        "int16" | "i2" | "h" | "short" => Some(DType::I16),
        "uint8" | "u1" | "B" | "ubyte" => Some(DType::U8),
        "uint16" | "u2" | "H" | "ushort" => Some(DType::U16),
        "uint32" | "u4" | "I" | "uintc" => Some(DType::U32),
        "uint64" | "u8" | "uintp" => Some(DType::U64),
        "float16" | "f2" | "e" | "half" => Some(DType::F16),
        "bfloat16" => Some(DType::BF16),
        _ => None,
    }
}

/// The dtype of a new array when none is given: NumPy allocates float64, torch float32.
pub(crate) fn default_dtype(torch: bool) -> DType {
    if torch { DType::F32 } else { DType::F64 }
}

/// How a type is named in messages (`int`, `float`, `float32`).
pub(crate) fn tyname(t: STy) -> String {
    if t.weak {
        match t.dt {
            DType::Bool => "bool".into(),
            DType::I64 => "int".into(),
            _ => "float".into(),
        }
    } else {
        t.dt.numpy().to_string()
    }
}

// ----- types of expressions ---------------------------------------------------------

/// The type of a value, as far as semantic analysis can tell (`None` inside: a type it
/// cannot tell, which lowering then takes from the value it computes).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ty {
    /// A scalar.
    S(Option<STy>),
    /// An array-valued expression, or an array or view bound to a name. `elem` is the
    /// element type (weak for some computed values, e.g. a sum of integers); `view`
    /// (for names) whether the name shows another array's elements.
    Arr { elem: Option<STy>, rank: usize, view: bool },
    /// A tuple (`a.shape`).
    Tuple(Vec<Ty>),
    /// A dtype (`a.dtype`).
    DType(Option<DType>),
    /// A vector of indices (`appy.vidx(...)`).
    Vidx,
    /// Not a value lowering accepts.
    Invalid,
}

impl Ty {
    /// The scalar type of a value used as a scalar (a rank-0 array result is computed
    /// into one).
    pub(crate) fn scalar(&self) -> Option<STy> {
        match self {
            Ty::S(t) | Ty::Arr { elem: t, rank: 0, .. } => *t,
            _ => None,
        }
    }

    /// What a name bound to this value is, for [`shape`].
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Ty::S(_) | Ty::Invalid => Kind::Scalar,
            Ty::Arr { rank, .. } => Kind::Array(*rank),
            Ty::Tuple(xs) => Kind::Tuple(xs.len()),
            Ty::DType(_) => Kind::DType,
            Ty::Vidx => Kind::Vidx,
        }
    }

    /// The type of an element of an array as read from memory (its dtype).
    pub(crate) fn element(&self) -> Option<STy> {
        match self {
            Ty::Arr { elem, .. } => elem.map(|t| STy::strong(t.dt)),
            _ => None,
        }
    }

    /// The rank of an array value.
    fn rank(&self) -> Option<usize> {
        match self {
            Ty::Arr { rank, .. } => Some(*rank),
            _ => None,
        }
    }

    /// The element type of an array, or the type of a scalar.
    fn elem(&self) -> Option<STy> {
        match self {
            Ty::Arr { elem, .. } | Ty::S(elem) => *elem,
            _ => None,
        }
    }
}

/// The bindings [`type_of`] consults.
pub(crate) trait Env: Names {
    /// The value `name` is bound to (`None` when unbound or private to an ended loop).
    fn value(&self, name: &str) -> Option<Ty>;
    /// Whether `name` is an integer that is never negative ([`nonneg_names`]).
    fn nonneg(&self, _name: &str) -> bool {
        false
    }
}

/// The type of `e`, by the rules lowering applies to it.
pub(crate) fn type_of(env: &dyn Env, e: &Expr) -> Ty {
    match &e.kind {
        ExprKind::Int(_) => Ty::S(Some(STy::INT)),
        ExprKind::Float(_) => Ty::S(Some(STy::FLOAT)),
        ExprKind::Bool(_) => Ty::S(Some(STy::BOOL)),
        ExprKind::None | ExprKind::Str(_) | ExprKind::FString(_) | ExprKind::Imag(_) => Ty::Invalid,
        ExprKind::Name(n) => match env.value(n) {
            Some(t) => t,
            None if env.kind(n) == Kind::Unbound && qualify(env.imports(), e).as_deref() == Some("appy.MVL") => Ty::S(Some(STy::INT)),
            None => Ty::Invalid,
        },
        ExprKind::Attribute { value, attr } => attribute(env, e, value, &attr.name),
        ExprKind::Subscript { value, indices } => match type_of(env, value) {
            Ty::Tuple(vs) => match indices.as_slice() {
                [Index::Expr(ix)] => match const_int(ix) {
                    Some(k) => {
                        let k = if k < 0 { k + vs.len() as i64 } else { k };
                        usize::try_from(k).ok().and_then(|k| vs.get(k).cloned()).unwrap_or(Ty::Invalid)
                    }
                    None => Ty::Invalid,
                },
                _ => Ty::Invalid,
            },
            v @ Ty::Arr { .. } => match shape::subscript_rank(env, v.rank(), indices) {
                // A slice of a view or a computed array keeps the element type.
                Some(rank) => Ty::Arr {
                    elem: v.elem(),
                    rank,
                    view: false,
                },
                // An element is read from memory: a value of the array's dtype.
                None => Ty::S(v.element()),
            },
            _ => Ty::Invalid,
        },
        ExprKind::Tuple(es) => Ty::Tuple(es.iter().map(|x| type_of(env, x)).collect()),
        ExprKind::Unary { op, operand } => match type_of(env, operand) {
            Ty::Arr { elem, rank, .. } => Ty::Arr {
                elem: elem.map(|t| unary(*op, t)),
                rank,
                view: false,
            },
            v => Ty::S(v.scalar().map(|t| unary(*op, t))),
        },
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (type_of(env, lhs), type_of(env, rhs));
            match shape::binary_rank(*op, a.rank(), b.rank()) {
                Some(rank) => Ty::Arr {
                    elem: tensor_binary(*op, &a, &b),
                    rank,
                    view: false,
                },
                None if *op == BinOp::MatMul => Ty::Invalid,
                None if *op == BinOp::Pow => Ty::S(a.scalar().zip(b.scalar()).map(|(x, y)| {
                    let sign = sign_of(rhs, &|n| env.nonneg(n));
                    power_type(power(x, y, sign, false), x, y)
                })),
                None => Ty::S(a.scalar().zip(b.scalar()).map(|(x, y)| binary(*op, x, y))),
            }
        }
        ExprKind::Compare { first, rest } => {
            let ranks = std::iter::once(&**first)
                .chain(rest.iter().map(|(_, x)| x))
                .map(|x| type_of(env, x).rank());
            match ranks.flatten().max() {
                Some(rank) => Ty::Arr {
                    elem: Some(STy::BOOL),
                    rank,
                    view: false,
                },
                None => Ty::S(Some(STy::BOOL)),
            }
        }
        ExprKind::BoolOp { .. } => Ty::S(Some(STy::BOOL)),
        ExprKind::IfExp { then, orelse, .. } => {
            let (a, b) = (type_of(env, then).scalar(), type_of(env, orelse).scalar());
            Ty::S(a.zip(b).map(|(x, y)| promote(x, y)))
        }
        ExprKind::Call { func, args, kwargs } => call(env, func, args, kwargs),
    }
}

/// The element type of `a op b` where one operand is an array: the scalar operation
/// on the element types; a matrix product sums products; an array divided by a scalar
/// is multiplied by its reciprocal (as lowering computes it).
fn tensor_binary(op: BinOp, a: &Ty, b: &Ty) -> Option<STy> {
    let (x, y) = (a.elem()?, b.elem()?);
    Some(match (op, b) {
        (BinOp::MatMul, _) => reduced(Reduction::Sum, binary(BinOp::Mul, x, y)),
        (BinOp::Div, Ty::S(_)) => binary(BinOp::Mul, x, binary(BinOp::Div, STy::FLOAT, y)),
        _ => binary(op, x, y),
    })
}

fn attribute(env: &dyn Env, e: &Expr, value: &Expr, attr: &str) -> Ty {
    let q = qualify(env.imports(), e).unwrap_or_default();
    match q.as_str() {
        "appy.MVL" => return Ty::S(Some(STy::INT)),
        "numpy.nan" | "math.nan" | "numpy.NaN" | "numpy.inf" | "math.inf" | "numpy.Inf" | "numpy.pi" | "math.pi" | "numpy.e" | "math.e" => {
            return Ty::S(Some(STy::FLOAT));
        }
        _ => {}
    }
    match attr {
        "dtype" => Ty::DType(dtype_of(env, e)),
        "T" => match type_of(env, value) {
            Ty::Arr { elem, rank, .. } => Ty::Arr { elem, rank, view: false },
            v => v,
        },
        "shape" | "size" | "ndim" => match type_of(env, value) {
            Ty::Arr { rank, .. } if attr == "shape" => Ty::Tuple(vec![Ty::S(Some(STy::INT)); rank]),
            Ty::Arr { .. } => Ty::S(Some(STy::INT)),
            _ => Ty::Invalid,
        },
        _ => Ty::Invalid,
    }
}

/// The type of a call: a scalar function, or an array-valued call (a reduction, an
/// allocation, an element-wise function of arrays, ...).
fn call(env: &dyn Env, func: &Expr, args: &[Expr], kwargs: &[(Ident, Expr)]) -> Ty {
    // The prelude's zero of `np.sum`'s type for an element (see `prelude::SUM_ZERO`).
    if matches!(&func.kind, ExprKind::Name(n) if n == super::prelude::SUM_ZERO) {
        return match args {
            [x] => Ty::S(type_of(env, x).scalar().map(|t| reduced(Reduction::Sum, t))),
            _ => Ty::Invalid,
        };
    }
    let Some((f, recv)) = shape::callee(env, func) else {
        return Ty::Invalid;
    };
    let all: Vec<&Expr> = recv.into_iter().chain(args.iter()).collect();
    let rank = shape::call_rank(env, func, args, kwargs);
    if recv.is_none() && rank.is_none() {
        let tys: Vec<Option<STy>> = args.iter().map(|a| type_of(env, a).scalar()).collect();
        return scalar_call(f.rule, &tys);
    }
    let Some(rank) = rank else { return Ty::Invalid };
    let elem = match f.rule {
        Rule::Alloc { .. } | Rule::Like(_) => {
            return Ty::Arr {
                elem: alloc_dtype(env, f.rule, args, kwargs).map(STy::strong),
                rank,
                view: false,
            };
        }
        _ => array_call(env, f.rule, &all, args, kwargs),
    };
    Ty::Arr { elem, rank, view: false }
}

/// The result of a call on scalars of types `tys` (`float('inf')` is a float, as
/// `float(x)` is).
fn scalar_call(rule: Rule, tys: &[Option<STy>]) -> Ty {
    let all = |n: usize| -> Option<Vec<STy>> { (tys.len() >= n).then(|| tys.iter().copied().collect()).flatten() };
    let t = match rule {
        Rule::Float(op) | Rule::Same(op) | Rule::Pred(op) => all(1).map(|ts| match (rule, op) {
            (Rule::Same(_), Op::Pow) if !elementwise(rule, op, &ts).is_float() && ts.len() == 2 => binary(BinOp::Pow, ts[0], ts[1]),
            _ => op_result(op, elementwise(rule, op, &ts)),
        }),
        Rule::Math(op) => Some(math_result(op)),
        Rule::MaxMin { .. } => all(2).map(|ts| ts.iter().skip(1).fold(ts[0], |a, t| promote(a, *t))),
        Rule::Where => all(3).map(|ts| promote(ts[1], ts[2])),
        Rule::Clip => all(3).map(|ts| promote(promote(ts[0], ts[1]), ts[2])),
        Rule::Cast(c) => Some(cast(c)),
        Rule::Len => Some(STy::INT),
        Rule::Vidx => return Ty::Vidx,
        _ => return Ty::Invalid,
    };
    Ty::S(t)
}

/// The element type of an array-valued call (`all`: the receiver of a method, then
/// the arguments).
fn array_call(env: &dyn Env, rule: Rule, all: &[&Expr], args: &[Expr], kwargs: &[(Ident, Expr)]) -> Option<STy> {
    let elem = |x: &Expr| type_of(env, x).elem();
    let red = match rule {
        Rule::Reduce(op) => Some(op),
        Rule::Mean | Rule::BuiltinSum => Some(Reduction::Sum),
        Rule::MaxMin { max, numpy: false } if all.len() == 1 => Some(if max { Reduction::Max } else { Reduction::Min }),
        _ => None,
    };
    if let Some(op) = red {
        let [x] = all else { return None };
        let t = elem(x)?;
        if rule == Rule::Mean {
            if t.dt.half().is_some() {
                return Some(t);
            }
            return Some(binary(BinOp::Div, reduced(op, mean_input(t)), STy::INT));
        }
        return Some(reduced(op, t));
    }
    match (rule, all) {
        (Rule::Dot, [a, b]) => Some(dot_result(elem(a)?, elem(b)?)),
        (Rule::Transpose | Rule::Copy, [a]) => elem(a),
        (Rule::AsType, [_, d]) => dtype_of(env, d).map(STy::strong),
        (Rule::Cast(c), [_]) => Some(STy::strong(cast(c).dt)),
        (Rule::Arange, _) => {
            let d = kwargs.iter().find(|(k, _)| k.name == "dtype").map(|(_, v)| dtype_of(env, v));
            d.unwrap_or(Some(DType::I64)).map(STy::strong)
        }
        (Rule::Float(_) | Rule::Same(_) | Rule::Pred(_) | Rule::Where | Rule::Clip | Rule::MaxMin { .. }, _) => {
            let tys: Vec<Option<STy>> = args.iter().map(elem).collect();
            scalar_call(rule, &tys).scalar()
        }
        _ => None,
    }
}

/// The dtype of an allocation (`np.zeros(n, dtype=...)`, `np.full(n, v)`,
/// `np.empty_like(a)`).
fn alloc_dtype(env: &dyn Env, rule: Rule, args: &[Expr], kwargs: &[(Ident, Expr)]) -> Option<DType> {
    let (fill, torch, like) = match rule {
        Rule::Alloc { fill, torch } => (fill, torch, false),
        Rule::Like(fill) => (fill, false, true),
        _ => return None,
    };
    let mut dtype: Option<Option<DType>> = None;
    let mut rest = if like {
        dtype = Some(type_of(env, args.first()?).elem().map(|t| t.dt));
        &args[1..]
    } else {
        &args[shape::alloc_sizes(rule, args)..]
    };
    if fill == catalog::Fill::Full {
        let v = rest.first()?;
        if dtype.is_none() {
            dtype = Some(type_of(env, v).scalar().map(|t| t.dt));
        }
        rest = &rest[1..];
    }
    if let Some(t) = rest.first() {
        dtype = Some(dtype_of(env, t));
    }
    for (k, v) in kwargs {
        if k.name == "dtype" {
            dtype = Some(dtype_of(env, v));
        }
    }
    dtype.unwrap_or(Some(default_dtype(torch)))
}

/// The dtype an expression names: `np.float32`, `float`, `'float32'`, `x.dtype`,
/// `torch.float32`, or a variable bound to one of them.
pub(crate) fn dtype_of(env: &dyn Env, e: &Expr) -> Option<DType> {
    if let ExprKind::Attribute { value, attr } = &e.kind
        && attr.name == "dtype"
        && let Some(t) = type_of(env, value).elem()
    {
        return Some(t.dt);
    }
    if let ExprKind::Name(n) = &e.kind
        && let Some(Ty::DType(d)) = env.value(n)
    {
        return d;
    }
    if let Some(d) = qualify(env.imports(), e).as_deref().and_then(named_dtype) {
        return Some(d);
    }
    match &e.kind {
        ExprKind::Str(s) => dtype_str(s),
        _ => None,
    }
}

/// The value of an integer literal (`3`, `-1`).
pub(crate) fn const_int(e: &Expr) -> Option<i64> {
    match &e.kind {
        ExprKind::Int(i) => Some(*i),
        ExprKind::Unary { op: UnaryOp::Neg, operand } => const_int(operand).map(|v| -v),
        _ => None,
    }
}
