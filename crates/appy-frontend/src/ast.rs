//! The abstract syntax tree of the APPy Python subset. Every node carries a [`Span`].
//!
//! The tree is produced by [`crate::parse_function`] and is deliberately close to Python's own
//! `ast` module, restricted to what APPy programs use. Pragmas (`#pragma ...` comment
//! lines) are attached to the statement that follows them.

use appy_ir::diag::SourceFile;
pub use appy_ir::diag::Span;

/// An identifier as Python reads it: NFKC-normalised (PEP 3131), so `ｘ` (fullwidth)
/// and `x` are one name, as are `ﬁ` and `fi`. Spans keep pointing at the text as
/// written; only the name is normalised.
pub fn normalize_ident(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    if s.is_ascii() { s.to_string() } else { s.nfkc().collect() }
}

/// The function an `assert` calls when its condition is false: `assert c` is parsed
/// as `if not c: _appy_assert_failed()`, which reports an `AssertionError` at the
/// `assert` through the status buffer.
pub const ASSERT_FAILED: &str = "_appy_assert_failed";

/// An identifier with its location.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where it was written.
    pub span: Span,
}

/// A module-level import that the compiled function may use.
#[derive(Clone, Debug, PartialEq)]
pub enum Import {
    /// `import numpy as np` (alias = "np"), `import appy` (alias = "appy").
    Module {
        /// Dotted module path, e.g. `numpy`.
        module: String,
        /// Name bound in the module namespace.
        alias: String,
        /// The whole import line.
        span: Span,
    },
    /// `from appy import jit, prange as pr` → names [("jit","jit"), ("prange","pr")].
    From {
        /// Dotted module path.
        module: String,
        /// (imported name, bound alias) pairs.
        names: Vec<(String, String)>,
        /// The whole import line.
        span: Span,
    },
}

/// A parsed source file: its module-level imports and one jitted function.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// Every module-level `import`/`from ... import` line of the file, in order.
    pub imports: Vec<Import>,
    /// The function that was asked for.
    pub function: Function,
    /// The file's other module-level functions (calls to them are inlined).
    pub helpers: Vec<Helper>,
    /// The file it was parsed from (to turn spans into lines and columns).
    pub source: Source,
}

/// Another module-level function of the file, which the jitted function may call.
#[derive(Clone, Debug)]
pub struct Helper {
    /// Its name.
    pub name: String,
    /// Where its name is written.
    pub span: Span,
    /// The parsed function, or why it does not parse (an error only if it is called).
    pub function: Result<Function, Box<appy_ir::diag::Diagnostic>>,
}

impl PartialEq for Helper {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.span == other.span && self.function.as_ref().ok() == other.function.as_ref().ok()
    }
}

/// The [`SourceFile`] a [`Program`] comes from; two are equal if their names and texts are.
#[derive(Clone, Debug)]
pub struct Source(pub SourceFile);

impl PartialEq for Source {
    fn eq(&self, other: &Self) -> bool {
        self.0.name() == other.0.name() && self.0.text() == other.0.text()
    }
}

impl Source {
    /// 1-based `(line, column)` of byte offset `pos`.
    pub fn line_col(&self, pos: usize) -> (usize, usize) {
        self.0.line_col(pos)
    }
}

/// A function decorated with `@appy.jit` / `@appy.jit(...)` / `@jit`.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// Its name.
    pub name: Ident,
    /// Positional parameters (no `*args`).
    pub params: Vec<Ident>,
    /// Each parameter's default value, if it has one (`def f(a, n=10)`). Compiled code
    /// takes every parameter: callers bind defaults (the Python package, `appy run`).
    pub defaults: Vec<Option<Expr>>,
    /// Keyword options of the decorator, e.g. `auto_simd=True`.
    pub options: Vec<(Ident, Expr)>,
    /// The body.
    pub body: Vec<Stmt>,
    /// From `def` to the end of the body.
    pub span: Span,
}

/// A statement, with the pragma written on the comment line(s) right before it.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// What it is.
    pub kind: StmtKind,
    /// The statement's source (for compound statements: the header line).
    pub span: Span,
    /// `#pragma ...` on the line(s) directly above, if any.
    pub pragma: Option<Pragma>,
}

/// Statement kinds.
#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `t = v`, `a, b = x, y` (target is an [`ExprKind::Tuple`]), `a = b = v` (several targets).
    Assign {
        /// Targets, left to right.
        targets: Vec<Expr>,
        /// The assigned value.
        value: Expr,
    },
    /// `t op= v`.
    AugAssign {
        /// Target (a name or subscript).
        target: Expr,
        /// The operator.
        op: BinOp,
        /// Right-hand side.
        value: Expr,
    },
    /// `for var in iter:` — `iter` is any expression (usually a `range(...)`/`prange(...)` call).
    For {
        /// Loop variable.
        var: Ident,
        /// The iterated expression.
        iter: Expr,
        /// Loop body.
        body: Vec<Stmt>,
        /// The flag that a desugared `break` sets: the loop stops before its next
        /// iteration once the flag is true (`None` when the body cannot break).
        stop: Option<String>,
    },
    /// `while cond:` (a `break` in its body, and in `for` loops, is removed by the
    /// frontend's desugaring).
    While {
        /// Condition, evaluated before each iteration.
        cond: Expr,
        /// Loop body.
        body: Vec<Stmt>,
    },
    /// `if c: ... elif c2: ... else: ...` (an `elif` is an `If` alone in `orelse`).
    If {
        /// Condition.
        cond: Expr,
        /// Then branch.
        then: Vec<Stmt>,
        /// Else branch (empty if none).
        orelse: Vec<Stmt>,
    },
    /// `return`, `return x`, `return x, y` (a tuple).
    Return(Option<Expr>),
    /// `pass`.
    Pass,
    /// `continue` (removed by the frontend's desugaring before lowering).
    Continue,
    /// `break` (removed by the frontend's desugaring before lowering).
    Break,
    /// An expression statement (a call, or a docstring).
    Expr(Expr),
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where.
    pub span: Span,
}

/// Expression kinds.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// Integer literal (decimal, hex, with `_` separators).
    Int(i64),
    /// Float literal (`1.0`, `1e-3`, `.5`).
    Float(f64),
    /// An imaginary literal (`2j`): a Python `complex` with this imaginary part.
    Imag(f64),
    /// `True` / `False`.
    Bool(bool),
    /// `None` (valid only as a subscript index, meaning a new axis, or as a value).
    None,
    /// A string literal (only meaningful in `float('inf')` and docstrings).
    Str(String),
    /// A variable reference.
    Name(String),
    /// `-x`, `+x`, `not x`, `~x`.
    Unary {
        /// Operator.
        op: UnaryOp,
        /// Operand.
        operand: Box<Expr>,
    },
    /// `a op b`.
    Binary {
        /// Operator.
        op: BinOp,
        /// Left.
        lhs: Box<Expr>,
        /// Right.
        rhs: Box<Expr>,
    },
    /// `a < b`, chained `a < b <= c` (Python semantics: pairwise, combined with `and`).
    Compare {
        /// First operand.
        first: Box<Expr>,
        /// Following (operator, operand) pairs; at least one.
        rest: Vec<(CmpOp, Expr)>,
    },
    /// `a and b and c` / `a or b`.
    BoolOp {
        /// `And` or `Or`.
        op: BoolOpKind,
        /// Two or more operands.
        values: Vec<Expr>,
    },
    /// `a if c else b`.
    IfExp {
        /// Condition.
        cond: Box<Expr>,
        /// Value if true.
        then: Box<Expr>,
        /// Value if false.
        orelse: Box<Expr>,
    },
    /// `f(a, b, k=v)`.
    Call {
        /// Callee (a name or attribute chain such as `np.exp`).
        func: Box<Expr>,
        /// Positional arguments.
        args: Vec<Expr>,
        /// Keyword arguments.
        kwargs: Vec<(Ident, Expr)>,
    },
    /// `x.attr` (e.g. `np.float32`, `a.shape`, `appy.MVL`).
    Attribute {
        /// The object.
        value: Box<Expr>,
        /// The attribute name.
        attr: Ident,
    },
    /// `a[i, j:k, None]`.
    Subscript {
        /// The subscripted value.
        value: Box<Expr>,
        /// One entry per comma-separated index.
        indices: Vec<Index>,
    },
    /// `(a, b)` or `a, b` where a tuple is allowed (return values, tuple assignment, shapes).
    Tuple(Vec<Expr>),
    /// An f-string, `f"x = {x:.3f}"` (only meaningful in `print(...)`).
    FString(Vec<FPart>),
}

/// A part of an f-string.
#[derive(Clone, Debug, PartialEq)]
pub enum FPart {
    /// Literal text.
    Lit(String),
    /// `{expr!conv:spec}`.
    Field {
        /// The expression.
        expr: Box<Expr>,
        /// `!r`, `!s` or `!a`, if written.
        conv: Option<char>,
        /// The format spec after `:` (empty if none).
        spec: String,
    },
}

impl Expr {
    /// Calls `f` on each direct sub-expression, in source order (call: callee, arguments,
    /// keyword values; subscript: value, then index expressions and slice bounds).
    pub fn for_each_child<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        match &self.kind {
            ExprKind::Unary { operand, .. } => f(operand),
            ExprKind::Binary { lhs, rhs, .. } => {
                f(lhs);
                f(rhs);
            }
            ExprKind::Compare { first, rest } => {
                f(first);
                rest.iter().for_each(|(_, x)| f(x));
            }
            ExprKind::BoolOp { values, .. } | ExprKind::Tuple(values) => values.iter().for_each(f),
            ExprKind::FString(parts) => parts.iter().for_each(|p| {
                if let FPart::Field { expr, .. } = p {
                    f(expr)
                }
            }),
            ExprKind::IfExp { cond, then, orelse } => {
                f(cond);
                f(then);
                f(orelse);
            }
            ExprKind::Call { func, args, kwargs } => {
                f(func);
                args.iter().for_each(&mut *f);
                kwargs.iter().for_each(|(_, x)| f(x));
            }
            ExprKind::Attribute { value, .. } => f(value),
            ExprKind::Subscript { value, indices } => {
                f(value);
                for i in indices {
                    match i {
                        Index::Expr(x) => f(x),
                        Index::Slice { lower, upper, step, .. } => [lower, upper, step].into_iter().flatten().for_each(|x| f(x)),
                        Index::NewAxis(_) => {}
                    }
                }
            }
            _ => {}
        }
    }

    /// Calls `f` on each direct sub-expression, mutably (same order as
    /// [`Expr::for_each_child`]).
    pub fn for_each_child_mut(&mut self, f: &mut impl FnMut(&mut Expr)) {
        match &mut self.kind {
            ExprKind::Unary { operand, .. } => f(operand),
            ExprKind::Binary { lhs, rhs, .. } => {
                f(lhs);
                f(rhs);
            }
            ExprKind::Compare { first, rest } => {
                f(first);
                rest.iter_mut().for_each(|(_, x)| f(x));
            }
            ExprKind::BoolOp { values, .. } | ExprKind::Tuple(values) => values.iter_mut().for_each(f),
            ExprKind::FString(parts) => parts.iter_mut().for_each(|p| {
                if let FPart::Field { expr, .. } = p {
                    f(expr)
                }
            }),
            ExprKind::IfExp { cond, then, orelse } => {
                f(cond);
                f(then);
                f(orelse);
            }
            ExprKind::Call { func, args, kwargs } => {
                f(func);
                args.iter_mut().for_each(&mut *f);
                kwargs.iter_mut().for_each(|(_, x)| f(x));
            }
            ExprKind::Attribute { value, .. } => f(value),
            ExprKind::Subscript { value, indices } => {
                f(value);
                for i in indices {
                    match i {
                        Index::Expr(x) => f(x),
                        Index::Slice { lower, upper, step, .. } => [lower, upper, step].into_iter().flatten().for_each(|x| f(x)),
                        Index::NewAxis(_) => {}
                    }
                }
            }
            _ => {}
        }
    }
}

/// One index of a subscript.
#[derive(Clone, Debug, PartialEq)]
pub enum Index {
    /// A scalar (or vector) index expression.
    Expr(Expr),
    /// `lower:upper:step`, each part optional.
    Slice {
        /// Start, if written.
        lower: Option<Box<Expr>>,
        /// Stop, if written.
        upper: Option<Box<Expr>>,
        /// Step, if written.
        step: Option<Box<Expr>>,
        /// The whole slice text.
        span: Span,
    },
    /// `None`: a new axis of length 1 (broadcast).
    NewAxis(Span),
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `+x`
    Pos,
    /// `not x`
    Not,
    /// `~x`
    Invert,
}

/// Binary operators (also used by augmented assignment).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (true division)
    Div,
    /// `//`
    FloorDiv,
    /// `%` (Python modulo: result has the sign of the divisor)
    Mod,
    /// `**`
    Pow,
    /// `@`
    MatMul,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `<<`
    LShift,
    /// `>>`
    RShift,
}

impl BinOp {
    /// The operator as Python writes it (`+`, `//`, `**`).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::MatMul => "@",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::LShift => "<<",
            BinOp::RShift => ">>",
        }
    }
}

/// Comparison operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

/// `and` / `or`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolOpKind {
    /// `and`
    And,
    /// `or`
    Or,
}

/// A parsed `#pragma` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Pragma {
    /// What it says.
    pub kind: PragmaKind,
    /// The text after `#pragma`, trimmed.
    pub text: String,
    /// The pragma's location (the `#pragma ...` comment).
    pub span: Span,
}

/// Pragma kinds (seed 001 §3 and §4.2).
#[derive(Clone, Debug, PartialEq)]
pub enum PragmaKind {
    /// `#pragma parallel for [simd] [shared(a, b)]` (clauses in any order after `for`).
    ParallelFor {
        /// `simd` clause present.
        simd: bool,
        /// Variables named in `shared(...)` clauses.
        shared: Vec<Ident>,
        /// The loop transforms of `transform(...)` clauses, in order.
        transforms: Vec<Transform>,
    },
    /// `#pragma simd`.
    Simd,
    /// `#pragma sequential for`.
    SequentialFor,
    /// `#pragma atomic`.
    Atomic,
    /// `#pragma {slice}=>{prop},{prop} {slice}=>...` (tensor pragma).
    Tensor(Vec<TensorDim>),
}

/// A loop transform of a `transform(...)` clause: `split(j, 4, inner=unr)` or
/// `tag(j, unr)`, addressing a loop of the annotated nest by its variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Transform {
    /// The loop variable of the loop it transforms (for `prefetch`, the array; the loop
    /// is the annotated one).
    pub var: Ident,
    /// What it does.
    pub kind: TransformKind,
    /// The transform's text.
    pub span: Span,
}

/// What a [`Transform`] does.
#[derive(Clone, Debug, PartialEq)]
pub enum TransformKind {
    /// `split(var, factor, outer=TAG, inner=TAG)`: Loopy's `split_iname`.
    Split {
        /// Iterations per chunk (the first of `tune` when it has values).
        factor: i64,
        /// `split(j, tune(4, 8, 16))`: the factors to choose from by autotuning (empty:
        /// `factor` alone). Tuning candidate k takes the k-th value of every such list
        /// (its last when the list is shorter).
        tune: Vec<i64>,
        /// The tag of the loop over chunks (default: `g.0` for a parallel loop, `for`
        /// otherwise).
        outer: Option<appy_ir::schedule::Tag>,
        /// The tag of the loop inside a chunk (default: `l.0` for a parallel loop, `for`
        /// otherwise).
        inner: Option<appy_ir::schedule::Tag>,
    },
    /// `tag(var, TAG)`: Loopy's `tag_inames`.
    Tag(appy_ir::schedule::Tag),
    /// `reorder(var, inner)`: the loop over `var` and the loop directly inside it
    /// (over `inner`) interchanged.
    Reorder(Ident),
    /// `join(var, inner)`: the parallel loop over `var` and the parallel loop directly
    /// inside it (over `inner`) joined into one.
    Join(Ident),
    /// `prefetch(array)`: the reads of the array parameter `var` that a group's threads
    /// share, loaded once into shared memory (Loopy's `add_prefetch`).
    Prefetch,
    /// `assume(var, multiple=K)`: the trip count of the loop over `var` is a multiple of
    /// `K` (Loopy's `assume`; checked at run time).
    Assume(i64),
    /// `privatize(tmp)`: the temporary array `var`, used by each iteration of the
    /// annotated loop only at its own element, becomes a scalar of the iteration.
    Privatize,
}

/// One `slice=>props` entry of a tensor pragma, e.g. `1:M-1=>parallel`.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDim {
    /// The slice as written before `=>` (lower/upper expressions, parsed).
    pub lower: Option<Expr>,
    /// Upper bound expression.
    pub upper: Option<Expr>,
    /// The slice text, whitespace removed (for matching against statement slices).
    pub text: String,
    /// Properties after `=>`.
    pub props: Vec<TensorProp>,
    /// The entry's location.
    pub span: Span,
}

/// A property of a tensor-pragma dimension.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorProp {
    /// `parallel`
    Parallel,
    /// `simd`
    Simd,
    /// `reduce(op:var)` / `reduction(op:var)`; op is `sum`, `max`, `min` or `+`, `*`.
    Reduce {
        /// Reduction operator as written.
        op: String,
        /// Reduced variable.
        var: Ident,
    },
    /// `le(c)`: the dimension's extent is at most `c`.
    Le(i64),
}
