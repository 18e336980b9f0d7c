//! The host program: a bundle's `gpu`-level host function lowered at compile time into
//! typed ops over dense value slots, with kernel references resolved to indices into
//! the bundle's kernels ([`lower`]). The GPU runner executes it
//! (`appy_runtime::exec`); the access analysis (`appy_runtime::regions`) evaluates the
//! same ops, and the kernels' bodies ([`KernelProgram`]), over intervals.
//!
//! Every op keeps its MLIR meaning: the enums name MLIR ops one to one
//! (`IntBinOp::DivUI` is `arith.divui`), so the semantics are those of the `arith`,
//! `math`, `scf`, `memref` and `gpu` dialects. Ops the runner does not execute are kept
//! as [`HostOp::Other`] (with their regions, which the analysis walks): executing one
//! is an error at run time, as before the program existed.
//!
//! This file holds the program's types; `lower.rs`, the lowering from the owned mirror.

use crate::attrs::{AtomicKind, CmpFPredicate, CmpIPredicate, Scalar};
use crate::types::{DType, MemRefType};
use serde::{Deserialize, Serialize};

mod lower;
pub use lower::lower;

/// A value slot: values are numbered densely per program.
pub type Slot = u32;

/// Defines an enum of MLIR op names with `name()` and `from_name()`.
macro_rules! op_names {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $text:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[allow(missing_docs)]
        pub enum $name { $($variant),* }
        impl $name {
            /// The MLIR op's name.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text),* }
            }
            /// The variant of MLIR op `name`.
            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($text => Some($name::$variant),)* _ => None }
            }
        }
    };
}

op_names!(
    /// Binary integer ops (`index` is 64 bits wide).
    IntBinOp {
        AddI = "arith.addi",
        SubI = "arith.subi",
        MulI = "arith.muli",
        DivSI = "arith.divsi",
        RemSI = "arith.remsi",
        CeilDivSI = "arith.ceildivsi",
        FloorDivSI = "arith.floordivsi",
        MaxSI = "arith.maxsi",
        MinSI = "arith.minsi",
        AndI = "arith.andi",
        OrI = "arith.ori",
        XOrI = "arith.xori",
        ShLI = "arith.shli",
        ShRSI = "arith.shrsi",
        DivUI = "arith.divui",
        RemUI = "arith.remui",
        ShRUI = "arith.shrui",
        MaxUI = "arith.maxui",
        MinUI = "arith.minui",
        CeilDivUI = "arith.ceildivui",
        IPowI = "math.ipowi",
    }
);

op_names!(
    /// Binary float ops.
    FloatBinOp {
        AddF = "arith.addf",
        SubF = "arith.subf",
        MulF = "arith.mulf",
        DivF = "arith.divf",
        RemF = "arith.remf",
        MaximumF = "arith.maximumf",
        MinimumF = "arith.minimumf",
        MaxNumF = "arith.maxnumf",
        MinNumF = "arith.minnumf",
        PowF = "math.powf",
        Atan2 = "math.atan2",
        CopySign = "math.copysign",
    }
);

op_names!(
    /// Unary float ops.
    FloatUnOp {
        NegF = "arith.negf",
        Exp = "math.exp",
        Exp2 = "math.exp2",
        ExpM1 = "math.expm1",
        Log = "math.log",
        Log2 = "math.log2",
        Log10 = "math.log10",
        Log1p = "math.log1p",
        Sqrt = "math.sqrt",
        Rsqrt = "math.rsqrt",
        Cbrt = "math.cbrt",
        Sin = "math.sin",
        Cos = "math.cos",
        Tan = "math.tan",
        Asin = "math.asin",
        Acos = "math.acos",
        Atan = "math.atan",
        Sinh = "math.sinh",
        Cosh = "math.cosh",
        Tanh = "math.tanh",
        Asinh = "math.asinh",
        Acosh = "math.acosh",
        Atanh = "math.atanh",
        Erf = "math.erf",
        Erfc = "math.erfc",
        AbsF = "math.absf",
        Floor = "math.floor",
        Ceil = "math.ceil",
        Trunc = "math.trunc",
        Round = "math.round",
        RoundEven = "math.roundeven",
    }
);

op_names!(
    /// Float classification ops (`i1` results).
    FloatClassOp {
        IsNan = "math.isnan",
        IsInf = "math.isinf",
        IsFinite = "math.isfinite",
    }
);

op_names!(
    /// Integer-to-integer casts.
    IntCastOp {
        IndexCast = "arith.index_cast",
        IndexCastUI = "arith.index_castui",
        ExtSI = "arith.extsi",
        ExtUI = "arith.extui",
        TruncI = "arith.trunci",
    }
);

op_names!(
    /// GPU ids and dimensions (kernels).
    GpuIdOp {
        BlockId = "gpu.block_id",
        ThreadId = "gpu.thread_id",
        BlockDim = "gpu.block_dim",
        GridDim = "gpu.grid_dim",
    }
);

/// The `arith.bitcast`s host code may do: between a float and the integer of its width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BitcastOp {
    /// `f64` to `i64`.
    F64ToI64,
    /// `f32` to `i32`.
    F32ToI32,
    /// `i64` to `f64`.
    I64ToF64,
    /// `i32` to `f32`.
    I32ToF32,
}

impl BitcastOp {
    /// The bitcast from MLIR type `from` to `to`, if host code supports it.
    pub fn of(from: &str, to: &str) -> Option<BitcastOp> {
        Some(match (from, to) {
            ("f64", "i64") => BitcastOp::F64ToI64,
            ("f32", "i32") => BitcastOp::F32ToI32,
            ("i64", "f64") => BitcastOp::I64ToF64,
            ("i32", "f32") => BitcastOp::I32ToF32,
            _ => return None,
        })
    }
}

/// A sequence of ops and the values its terminator (`scf.yield`, `func.return`)
/// passes on (none when it has no terminator).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// The ops, without the terminator.
    pub ops: Vec<HostOp>,
    /// The terminator's operands.
    pub yields: Vec<Slot>,
}

impl Block {
    /// Whether a kernel launch in this block, or in one nested in it, may take slot `s`
    /// as an argument (an op kept as [`HostOp::Other`] may).
    pub fn launch_may_use(&self, s: Slot) -> bool {
        self.ops.iter().any(|op| match op {
            HostOp::Launch { args, .. } => args.contains(&s),
            HostOp::If { then, orelse, .. } => then.launch_may_use(s) || orelse.as_ref().is_some_and(|b| b.launch_may_use(s)),
            HostOp::For { body, .. } => body.launch_may_use(s),
            HostOp::While { before, after, .. } => before.launch_may_use(s) || after.launch_may_use(s),
            HostOp::Other { .. } => true,
            _ => false,
        })
    }

    /// Whether an op of this block, of a block nested in it, or its terminator may read
    /// slot `s` (an op kept as [`HostOp::Other`] may).
    pub fn uses(&self, s: Slot) -> bool {
        self.yields.contains(&s)
            || self
                .ops
                .iter()
                .any(|op| op.operands().is_none_or(|o| o.contains(&s)) || op.blocks().iter().any(|b| b.uses(s)))
    }

    /// Every op of this block and of the blocks nested in it, outer ones first.
    pub fn walk(&self) -> Vec<&HostOp> {
        let mut out = vec![];
        for op in &self.ops {
            out.push(op);
            for b in op.blocks() {
                out.extend(b.walk());
            }
        }
        out
    }
}

impl HostOp {
    /// The slots the op reads itself (not those of its nested blocks); `None` when not
    /// known (a [`HostOp::Other`] of a bundle that did not record them).
    pub fn operands(&self) -> Option<Vec<Slot>> {
        use HostOp::*;
        Some(match self {
            Const { .. } | GpuId { .. } => vec![],
            Alloc { shape, .. } => shape
                .iter()
                .filter_map(|e| match e {
                    Extent::Dynamic(s) => Some(*s),
                    Extent::Static(_) => None,
                })
                .collect(),
            IntBin { a, b, .. } | FloatBin { a, b, .. } | FPowI { a, b, .. } | CmpI { a, b, .. } | CmpF { a, b, .. } => vec![*a, *b],
            FloatUn { a, .. }
            | FloatClass { a, .. }
            | AbsI { a, .. }
            | IntCast { a, .. }
            | IntToFloat { a, .. }
            | FloatToInt { a, .. }
            | TruncHalf { a, .. }
            | ExtF { a, .. }
            | TruncF { a, .. }
            | Bitcast { a, .. } => vec![*a],
            Fma { a, b, c, .. } => vec![*a, *b, *c],
            Select { cond, t, f, .. } => vec![*cond, *t, *f],
            Print { values, .. } => values.clone(),
            If { cond, .. } => vec![*cond],
            For { lb, ub, step, inits, .. } => [*lb, *ub, *step].into_iter().chain(inits.iter().copied()).collect(),
            While { inits, .. } => inits.clone(),
            Dealloc { mem } => vec![*mem],
            Dim { mem, index, .. } => vec![*mem, *index],
            Load { mem, indices, .. } => std::iter::once(*mem).chain(indices.iter().copied()).collect(),
            Store { value, mem, indices } => [*value, *mem].into_iter().chain(indices.iter().copied()).collect(),
            AtomicRmw { value, mem, indices, .. } => [*value, *mem].into_iter().chain(indices.iter().copied()).collect(),
            Launch { grid, block, args, .. } => grid.iter().chain(block).chain(args).copied().collect(),
            Gemm {
                mems,
                offsets,
                sizes,
                alpha,
                beta,
                ..
            } => mems.iter().chain(offsets).chain(sizes).chain([alpha, beta]).copied().collect(),
            Trsv { mems, n } => mems.iter().chain([n]).copied().collect(),
            Potrf { a, n } => vec![*a, *n],
            Other { operands, .. } => return operands.clone(),
        })
    }

    /// The blocks nested in the op.
    pub fn blocks(&self) -> Vec<&Block> {
        match self {
            HostOp::If { then, orelse, .. } => std::iter::once(then).chain(orelse.as_ref()).collect(),
            HostOp::For { body, .. } => vec![body],
            HostOp::While { before, after, .. } => vec![before, after],
            HostOp::Other { regions, .. } => regions.iter().flatten().map(|(_, b)| b).collect(),
            _ => vec![],
        }
    }
}

/// A dimension of an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Extent {
    /// A static size.
    Static(usize),
    /// A size computed at run time.
    Dynamic(Slot),
}

/// A typed op of a host program (or of a kernel body, for the access analysis).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum HostOp {
    /// `arith.constant`.
    Const {
        /// Result.
        dst: Slot,
        /// Value.
        value: Scalar,
    },
    /// A binary integer op on `bits`-wide integers.
    IntBin {
        /// The op.
        op: IntBinOp,
        /// The result's width (1, 8, 16, 32 or 64).
        bits: u8,
        /// Result.
        dst: Slot,
        /// Left operand.
        a: Slot,
        /// Right operand.
        b: Slot,
    },
    /// A binary float op.
    FloatBin {
        /// The op.
        op: FloatBinOp,
        /// The result is `f32` (rounded to it).
        f32: bool,
        /// Result.
        dst: Slot,
        /// Left operand.
        a: Slot,
        /// Right operand.
        b: Slot,
    },
    /// A unary float op.
    FloatUn {
        /// The op.
        op: FloatUnOp,
        /// The result is `f32`.
        f32: bool,
        /// Result.
        dst: Slot,
        /// Operand.
        a: Slot,
    },
    /// `math.isnan` / `isinf` / `isfinite`.
    FloatClass {
        /// The op.
        op: FloatClassOp,
        /// Result.
        dst: Slot,
        /// Operand.
        a: Slot,
    },
    /// `math.fma`: `a * b + c` rounded once.
    Fma {
        /// The result is `f32`.
        f32: bool,
        /// Result.
        dst: Slot,
        /// Operands.
        a: Slot,
        /// Operands.
        b: Slot,
        /// Operands.
        c: Slot,
    },
    /// `math.fpowi`: a float to an integer power.
    FPowI {
        /// The result is `f32`.
        f32: bool,
        /// Result.
        dst: Slot,
        /// Base.
        a: Slot,
        /// Exponent.
        b: Slot,
    },
    /// `math.absi`.
    AbsI {
        /// Width.
        bits: u8,
        /// Result.
        dst: Slot,
        /// Operand.
        a: Slot,
    },
    /// `arith.cmpi`.
    CmpI {
        /// Predicate.
        pred: CmpIPredicate,
        /// Result (`i1`).
        dst: Slot,
        /// Left operand.
        a: Slot,
        /// Right operand.
        b: Slot,
    },
    /// `arith.cmpf`.
    CmpF {
        /// Predicate.
        pred: CmpFPredicate,
        /// Result (`i1`).
        dst: Slot,
        /// Left operand.
        a: Slot,
        /// Right operand.
        b: Slot,
    },
    /// `arith.select`.
    Select {
        /// Result.
        dst: Slot,
        /// Condition.
        cond: Slot,
        /// Value when true.
        t: Slot,
        /// Value when false.
        f: Slot,
    },
    /// An integer cast from `from` to `to` bits.
    IntCast {
        /// The op.
        op: IntCastOp,
        /// Operand width.
        from: u8,
        /// Result width.
        to: u8,
        /// Result.
        dst: Slot,
        /// Operand.
        a: Slot,
    },
    /// `arith.sitofp` / `arith.uitofp`.
    IntToFloat {
        /// `uitofp`.
        unsigned: bool,
        /// Operand width.
        from: u8,
        /// The result is `f32`.
        f32: bool,
        /// Result.
        dst: Slot,
        /// Operand.
        a: Slot,
    },
    /// `arith.fptosi` / `arith.fptoui`.
    FloatToInt {
        /// Result width.
        bits: u8,
        /// `fptoui`: the result is read unsigned.
        unsigned: bool,
        /// Result.
        dst: Slot,
        /// Operand.
        a: Slot,
    },
    /// `arith.truncf` to float16 or bfloat16 (rounded to nearest even).
    TruncHalf {
        /// The format.
        half: crate::half::Half,
        /// Result.
        dst: Slot,
        /// Operand.
        a: Slot,
    },
    /// `arith.extf`.
    ExtF {
        /// Result.
        dst: Slot,
        /// Operand.
        a: Slot,
    },
    /// `arith.truncf` (to `f32`).
    TruncF {
        /// Result.
        dst: Slot,
        /// Operand.
        a: Slot,
    },
    /// `arith.bitcast` between a float and the integer of its width.
    Bitcast {
        /// Which.
        op: BitcastOp,
        /// Result.
        dst: Slot,
        /// Operand.
        a: Slot,
    },
    /// `appy.print`: prints a line (Python's `print`) from host code.
    Print {
        /// The text and the value fields.
        pieces: Vec<crate::pyfmt::Piece>,
        /// The values (each the 64 bits of its representation).
        values: Vec<Slot>,
    },
    /// `scf.if`.
    If {
        /// Condition.
        cond: Slot,
        /// Then-branch.
        then: Block,
        /// Else-branch.
        orelse: Option<Block>,
        /// Results (the branch's yields).
        results: Vec<Slot>,
    },
    /// `scf.for`.
    For {
        /// Lower bound.
        lb: Slot,
        /// Upper bound (exclusive).
        ub: Slot,
        /// Step.
        step: Slot,
        /// Initial loop-carried values.
        inits: Vec<Slot>,
        /// Induction variable.
        iv: Slot,
        /// Loop-carried values in the body.
        iter_args: Vec<Slot>,
        /// Body.
        body: Block,
        /// Final loop-carried values.
        results: Vec<Slot>,
    },
    /// `scf.while`: `before` runs first; its yields are the condition and the values
    /// passed on, to `after_args` while the condition holds, else to `results`;
    /// `after`'s yields go back to `before_args`.
    While {
        /// Initial values.
        inits: Vec<Slot>,
        /// The condition region's arguments.
        before_args: Vec<Slot>,
        /// The condition region (its yields: the `i1` condition, then the values).
        before: Block,
        /// The body's arguments.
        after_args: Vec<Slot>,
        /// The body.
        after: Block,
        /// Results (the values the condition region passed on when it ended the loop).
        results: Vec<Slot>,
    },
    /// `memref.alloc` (device memory) or `memref.alloca` (a host slot).
    Alloc {
        /// Result.
        dst: Slot,
        /// Element type.
        dtype: DType,
        /// Shape.
        shape: Vec<Extent>,
        /// `memref.alloca`.
        stack: bool,
    },
    /// `memref.dealloc`.
    Dealloc {
        /// The memref.
        mem: Slot,
    },
    /// `memref.dim`.
    Dim {
        /// Result.
        dst: Slot,
        /// The memref.
        mem: Slot,
        /// The dimension.
        index: Slot,
    },
    /// `memref.load`.
    Load {
        /// Result.
        dst: Slot,
        /// The memref.
        mem: Slot,
        /// Indices.
        indices: Vec<Slot>,
    },
    /// `memref.store`.
    Store {
        /// The value.
        value: Slot,
        /// The memref.
        mem: Slot,
        /// Indices.
        indices: Vec<Slot>,
    },
    /// `memref.atomic_rmw`.
    AtomicRmw {
        /// Kind.
        kind: AtomicKind,
        /// Result (the old value).
        dst: Slot,
        /// The operand.
        value: Slot,
        /// The memref.
        mem: Slot,
        /// Indices.
        indices: Vec<Slot>,
    },
    /// `gpu.launch_func` of kernel `kernel` (an index into the bundle's kernels).
    Launch {
        /// The kernel.
        kernel: u32,
        /// Grid size.
        grid: [Slot; 3],
        /// Block size.
        block: [Slot; 3],
        /// Arguments.
        args: Vec<Slot>,
    },
    /// `appy.gemm` (see `appy.irdl.mlir`).
    Gemm {
        /// C, A, B.
        mems: [Slot; 3],
        /// Row and column offsets of C, A, B.
        offsets: [Slot; 6],
        /// m, n, k.
        sizes: [Slot; 3],
        /// alpha.
        alpha: Slot,
        /// beta.
        beta: Slot,
        /// `op(A) = Aᵀ`.
        trans_a: bool,
        /// `op(B) = Bᵀ`.
        trans_b: bool,
        /// A matrix-vector product.
        vec: bool,
    },
    /// `appy.trsv(L, x, b, n)`.
    Trsv {
        /// L, x, b.
        mems: [Slot; 3],
        /// n.
        n: Slot,
    },
    /// `appy.potrf(A, n)`.
    Potrf {
        /// A.
        a: Slot,
        /// n.
        n: Slot,
    },
    /// A GPU id or dimension (kernels).
    GpuId {
        /// The op.
        op: GpuIdOp,
        /// Result.
        dst: Slot,
    },
    /// Any other op: executing it is an error; the analysis treats its results as
    /// unknown and walks its regions.
    Other {
        /// The MLIR op's name.
        name: String,
        /// Operands (bundles written before they were recorded have none: such an op
        /// may read anything).
        #[serde(default)]
        operands: Option<Vec<Slot>>,
        /// Results.
        results: Vec<Slot>,
        /// Its regions' blocks, with their arguments.
        regions: Vec<Vec<(Vec<Slot>, Block)>>,
    },
}

/// How a kernel parameter is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Param {
    /// A memref of this rank: a descriptor (allocated and aligned pointers, offset,
    /// sizes, strides).
    Memref(usize),
    /// An `f32`.
    F32,
    /// An `f64`.
    F64,
    /// An `i32`.
    I32,
    /// A float16.
    F16,
    /// A bfloat16.
    BF16,
    /// A 64-bit integer (`i64`, `index`, and anything else).
    I64,
}

impl Param {
    /// The parameter kind of MLIR type `ty`.
    pub fn of(ty: &str) -> Param {
        if let Some(m) = MemRefType::parse(ty) {
            return Param::Memref(m.rank());
        }
        match ty {
            "f32" => Param::F32,
            "f64" => Param::F64,
            "i32" => Param::I32,
            "f16" => Param::F16,
            "bf16" => Param::BF16,
            _ => Param::I64,
        }
    }
}

/// A kernel as the access analysis sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelProgram {
    /// The kernel's name.
    pub name: String,
    /// How each parameter is passed.
    pub params: Vec<Param>,
    /// Number of value slots.
    pub slots: u32,
    /// The parameters' slots.
    pub args: Vec<Slot>,
    /// The body (present when the bundle carries the kernel's IR).
    pub body: Option<Block>,
}

/// A bundle's host program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostProgram {
    /// Number of value slots.
    pub slots: u32,
    /// The function's parameters' slots.
    pub params: Vec<Slot>,
    /// The function's body.
    pub body: Block,
    /// The kernels, in the order of the bundle's kernels.
    pub kernels: Vec<KernelProgram>,
}
