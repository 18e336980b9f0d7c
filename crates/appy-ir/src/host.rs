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

use crate::attrs::{AtomicKind, CmpFPredicate, CmpIPredicate, Scalar};
use crate::bundle::KernelInfo;
use crate::diag::IrError;
use crate::ir::{Module, Op, Value};
use crate::ops::{AtomicRmw, CmpF, CmpI, Constant, Gemm, LaunchFunc, MemrefAlloc, MemrefLoad, MemrefStore, Potrf, ScfFor, ScfIf, Trsv};
use crate::types::{DType, MemRefType};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

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
        /// The result's width (1, 32 or 64).
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
    /// `arith.fptosi`.
    FloatToInt {
        /// Result width.
        bits: u8,
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

/// Numbers values densely and decodes ops.
struct Lowering<'m> {
    m: &'m Module,
    slots: HashMap<Value, Slot>,
    kernels: &'m HashMap<&'m str, u32>,
}

/// The width of an integer (or `index`) type: 1, 32 or 64.
fn bits_of(ty: &str) -> u8 {
    match ty {
        "i1" => 1,
        "i32" | "f32" => 32,
        _ => 64,
    }
}

impl Lowering<'_> {
    fn slot(&mut self, v: Value) -> Slot {
        let n = self.slots.len() as Slot;
        *self.slots.entry(v).or_insert(n)
    }
    fn slots(&mut self, vs: &[Value]) -> Vec<Slot> {
        vs.iter().map(|v| self.slot(*v)).collect()
    }
    fn ty(&self, v: Value) -> &str {
        self.m.ty(v)
    }
    fn is_f32(&self, v: Value) -> bool {
        self.ty(v) == "f32"
    }

    fn block(&mut self, ops: &[Op]) -> Block {
        let mut out = Block::default();
        for op in ops {
            if matches!(op.name.as_str(), "func.return" | "scf.yield" | "gpu.return") {
                out.yields = self.slots(&op.operands);
                break;
            }
            out.ops.push(self.op(op));
        }
        out
    }

    fn other(&mut self, op: &Op) -> HostOp {
        let results = self.slots(&op.results);
        let regions = op
            .regions
            .iter()
            .map(|r| {
                r.blocks
                    .iter()
                    .map(|b| {
                        let args = self.slots(&b.args);
                        (args, self.block(&b.ops))
                    })
                    .collect()
            })
            .collect();
        HostOp::Other {
            name: op.name.clone(),
            results,
            regions,
        }
    }

    fn op(&mut self, op: &Op) -> HostOp {
        self.typed(op).unwrap_or_else(|| self.other(op))
    }

    /// The typed op, or `None` for an op kept as [`HostOp::Other`].
    fn typed(&mut self, op: &Op) -> Option<HostOp> {
        let o = &op.operands;
        let n = op.name.as_str();
        let dst = op.results.first().copied();
        let un = |s: &mut Self| -> Option<(Slot, Slot)> { Some((s.slot(dst?), s.slot(*o.first()?))) };
        let bin = |s: &mut Self| -> Option<(Slot, Slot, Slot)> {
            if o.len() != 2 {
                return None;
            }
            Some((s.slot(dst?), s.slot(o[0]), s.slot(o[1])))
        };
        if let Some(c) = Constant::of(op, self.m) {
            return Some(HostOp::Const {
                dst: self.slot(c.result),
                value: c.value,
            });
        }
        if let Some(op_) = IntBinOp::from_name(n) {
            let bits = bits_of(self.ty(dst?));
            let (dst, a, b) = bin(self)?;
            return Some(HostOp::IntBin { op: op_, bits, dst, a, b });
        }
        if let Some(op_) = FloatBinOp::from_name(n) {
            let f32 = self.is_f32(dst?);
            let (dst, a, b) = bin(self)?;
            return Some(HostOp::FloatBin { op: op_, f32, dst, a, b });
        }
        if let Some(op_) = FloatUnOp::from_name(n) {
            let f32 = self.is_f32(dst?);
            let (dst, a) = un(self)?;
            return Some(HostOp::FloatUn { op: op_, f32, dst, a });
        }
        if let Some(op_) = FloatClassOp::from_name(n) {
            let (dst, a) = un(self)?;
            return Some(HostOp::FloatClass { op: op_, dst, a });
        }
        if let Some(op_) = IntCastOp::from_name(n) {
            let (from, to) = (bits_of(self.ty(*o.first()?)), bits_of(self.ty(dst?)));
            let (dst, a) = un(self)?;
            return Some(HostOp::IntCast { op: op_, from, to, dst, a });
        }
        if let Some(op_) = GpuIdOp::from_name(n) {
            return Some(HostOp::GpuId {
                op: op_,
                dst: self.slot(dst?),
            });
        }
        if let Some(c) = CmpI::of(op) {
            return Some(HostOp::CmpI {
                pred: c.pred,
                dst: self.slot(dst?),
                a: self.slot(c.lhs),
                b: self.slot(c.rhs),
            });
        }
        if let Some(c) = CmpF::of(op) {
            return Some(HostOp::CmpF {
                pred: c.pred,
                dst: self.slot(dst?),
                a: self.slot(c.lhs),
                b: self.slot(c.rhs),
            });
        }
        Some(match n {
            "math.fma" if o.len() == 3 => HostOp::Fma {
                f32: self.is_f32(dst?),
                dst: self.slot(dst?),
                a: self.slot(o[0]),
                b: self.slot(o[1]),
                c: self.slot(o[2]),
            },
            "math.fpowi" => {
                let f32 = self.is_f32(dst?);
                let (dst, a, b) = bin(self)?;
                HostOp::FPowI { f32, dst, a, b }
            }
            "math.absi" => {
                let bits = bits_of(self.ty(dst?));
                let (dst, a) = un(self)?;
                HostOp::AbsI { bits, dst, a }
            }
            "arith.select" if o.len() == 3 => HostOp::Select {
                dst: self.slot(dst?),
                cond: self.slot(o[0]),
                t: self.slot(o[1]),
                f: self.slot(o[2]),
            },
            "arith.sitofp" | "arith.uitofp" => {
                let (from, f32) = (bits_of(self.ty(*o.first()?)), self.is_f32(dst?));
                let (dst, a) = un(self)?;
                HostOp::IntToFloat {
                    unsigned: n == "arith.uitofp",
                    from,
                    f32,
                    dst,
                    a,
                }
            }
            "arith.fptosi" => {
                let bits = bits_of(self.ty(dst?));
                let (dst, a) = un(self)?;
                HostOp::FloatToInt { bits, dst, a }
            }
            "arith.extf" => {
                let (dst, a) = un(self)?;
                HostOp::ExtF { dst, a }
            }
            "arith.truncf" => {
                let (dst, a) = un(self)?;
                HostOp::TruncF { dst, a }
            }
            "arith.bitcast" => {
                let op_ = BitcastOp::of(self.ty(*o.first()?), self.ty(dst?))?;
                let (dst, a) = un(self)?;
                HostOp::Bitcast { op: op_, dst, a }
            }
            "appy.print" => HostOp::Print {
                pieces: op.attr("pieces").and_then(crate::pyfmt::parse_pieces)?,
                values: self.slots(o),
            },
            "scf.if" => {
                let v = ScfIf::of(op)?;
                HostOp::If {
                    cond: self.slot(v.cond),
                    then: self.block(v.then),
                    orelse: v.orelse.map(|e| self.block(e)),
                    results: self.slots(v.results),
                }
            }
            "scf.for" => {
                let v = ScfFor::of(op)?;
                HostOp::For {
                    lb: self.slot(v.lb),
                    ub: self.slot(v.ub),
                    step: self.slot(v.step),
                    inits: self.slots(v.inits),
                    iv: self.slot(v.iv),
                    iter_args: self.slots(v.iter_args),
                    body: self.block(v.body),
                    results: self.slots(v.results),
                }
            }
            "memref.alloc" | "memref.alloca" => {
                let v = MemrefAlloc::of(op, self.m)?;
                let mut sizes = v.sizes.iter();
                let shape =
                    v.ty.shape
                        .iter()
                        .map(|d| match d {
                            Some(n) => Some(Extent::Static(*n)),
                            None => sizes.next().map(|s| Extent::Dynamic(self.slot(*s))),
                        })
                        .collect::<Option<Vec<_>>>()?;
                HostOp::Alloc {
                    dst: self.slot(v.result),
                    dtype: v.ty.elem,
                    shape,
                    stack: v.stack,
                }
            }
            "memref.dealloc" if o.len() == 1 => HostOp::Dealloc { mem: self.slot(o[0]) },
            "memref.dim" if o.len() == 2 => HostOp::Dim {
                dst: self.slot(dst?),
                mem: self.slot(o[0]),
                index: self.slot(o[1]),
            },
            "memref.load" => {
                let v = MemrefLoad::of(op)?;
                HostOp::Load {
                    dst: self.slot(v.result),
                    mem: self.slot(v.memref),
                    indices: self.slots(v.indices),
                }
            }
            "memref.store" => {
                let v = MemrefStore::of(op)?;
                HostOp::Store {
                    value: self.slot(v.value),
                    mem: self.slot(v.memref),
                    indices: self.slots(v.indices),
                }
            }
            "memref.atomic_rmw" => {
                let v = AtomicRmw::of(op)?;
                HostOp::AtomicRmw {
                    kind: v.kind,
                    dst: self.slot(v.result),
                    value: self.slot(v.value),
                    mem: self.slot(v.memref),
                    indices: self.slots(v.indices),
                }
            }
            "gpu.launch_func" => {
                let v = LaunchFunc::of(op)?;
                let kernel = *self.kernels.get(v.kernel)?;
                HostOp::Launch {
                    kernel,
                    grid: v.grid.map(|g| self.slot(g)),
                    block: v.block.map(|b| self.slot(b)),
                    args: self.slots(v.args),
                }
            }
            "appy.gemm" => {
                let g = Gemm::of(op)?;
                HostOp::Gemm {
                    mems: g.mems.map(|v| self.slot(v)),
                    offsets: g.offsets.map(|v| self.slot(v)),
                    sizes: g.sizes.map(|v| self.slot(v)),
                    alpha: self.slot(g.alpha),
                    beta: self.slot(g.beta),
                    trans_a: g.trans_a,
                    trans_b: g.trans_b,
                    vec: g.vec,
                }
            }
            "appy.trsv" => {
                let t = Trsv::of(op)?;
                HostOp::Trsv {
                    mems: t.mems.map(|v| self.slot(v)),
                    n: self.slot(t.n),
                }
            }
            "appy.potrf" => {
                let p = Potrf::of(op)?;
                HostOp::Potrf {
                    a: self.slot(p.a),
                    n: self.slot(p.n),
                }
            }
            _ => return None,
        })
    }
}

/// Lowers the host function of a `gpu`-level module (and the bodies of its kernels
/// `kernels`, for the access analysis) to a [`HostProgram`].
pub fn lower(m: &Module, kernels: &[KernelInfo]) -> Result<HostProgram, IrError> {
    let func = m
        .body()
        .iter()
        .find(|o| o.name == "func.func" && !o.regions.is_empty())
        .ok_or_else(|| IrError::new("the module has no host function"))?;
    let index: HashMap<&str, u32> = kernels.iter().enumerate().map(|(k, i)| (i.name.as_str(), k as u32)).collect();
    let mut l = Lowering {
        m,
        slots: HashMap::new(),
        kernels: &index,
    };
    let entry = func.regions[0]
        .blocks
        .first()
        .ok_or_else(|| IrError::at(func, "the host function has no body"))?;
    let params = l.slots(&entry.args);
    let body = l.block(&entry.ops);
    let slots = l.slots.len() as u32;
    let quoted: HashMap<String, &Op> = m
        .body()
        .iter()
        .filter(|o| o.name == "gpu.module")
        .flat_map(|g| g.regions.iter().flat_map(|r| r.blocks.iter()).flat_map(|b| b.ops.iter()))
        .filter(|f| f.name == "gpu.func")
        .filter_map(|f| Some((f.attr("sym_name")?.trim_matches('"').to_string(), f)))
        .collect();
    let kernels = kernels
        .iter()
        .map(|k| {
            let mut kl = Lowering {
                m,
                slots: HashMap::new(),
                kernels: &index,
            };
            let ir = quoted.get(&k.name).and_then(|f| f.regions.first()?.blocks.first());
            let args = ir.map(|b| kl.slots(&b.args)).unwrap_or_default();
            let body = ir.map(|b| kl.block(&b.ops));
            KernelProgram {
                name: k.name.clone(),
                params: k.params.iter().map(|t| Param::of(t)).collect(),
                slots: kl.slots.len() as u32,
                args,
                body,
            }
        })
        .collect();
    Ok(HostProgram {
        slots,
        params,
        body,
        kernels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{Builder, IPred};
    use crate::ir::Region;

    #[test]
    fn names_round_trip() {
        for op in [IntBinOp::DivUI, IntBinOp::AddI, IntBinOp::IPowI] {
            assert_eq!(IntBinOp::from_name(op.name()), Some(op));
        }
        assert_eq!(FloatUnOp::from_name("math.sqrt"), Some(FloatUnOp::Sqrt));
        assert_eq!(FloatBinOp::from_name("math.sqrt"), None);
    }

    /// Values get dense slots; ops are decoded with their widths; an op the runner
    /// does not know is kept with its name.
    #[test]
    fn lowers_a_host_function() {
        let mut b = Builder::new();
        let a = b.m.value("i32");
        b.begin();
        let c = b.int(3, "i32");
        let s = b.bin("arith.divui", a, c);
        let p = b.cmpi(IPred::Ult, s, c);
        b.op0("test.unknown", &[p], &[]);
        b.push(Op::new("func.return").with_operands([s]));
        let ops = b.end();
        b.m.body_mut()
            .push(Op::new("func.func").with_region(Region::single(crate::ir::Block { args: vec![a], ops })));
        let prog = lower(&b.m, &[]).unwrap();
        assert_eq!(prog.params, vec![0]);
        assert_eq!(prog.slots, 4);
        assert_eq!(prog.body.yields, vec![2]);
        assert_eq!(
            prog.body.ops[1],
            HostOp::IntBin {
                op: IntBinOp::DivUI,
                bits: 32,
                dst: 2,
                a: 0,
                b: 1
            }
        );
        assert!(matches!(
            &prog.body.ops[2],
            HostOp::CmpI {
                pred: CmpIPredicate::Ult,
                ..
            }
        ));
        assert!(matches!(&prog.body.ops[3], HostOp::Other { name, .. } if name == "test.unknown"));
    }
}
