//! Element types and function signatures shared by the compiler and the runtime.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An element type (NumPy dtype) supported by appy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum DType {
    /// `bool` (stored as a byte, as NumPy stores it).
    Bool,
    /// `np.int32`
    I32,
    /// `np.int64` (also Python `int`)
    I64,
    /// `np.float32`
    F32,
    /// `np.float64` (also Python `float`)
    F64,
    /// `np.int8`
    I8,
    /// `np.int16`
    I16,
    /// `np.uint8`
    U8,
    /// `np.uint16`
    U16,
    /// `np.uint32`
    U32,
    /// `np.uint64`
    U64,
    /// `np.float16` (IEEE binary16): stored as 16 bits, each operation computed in
    /// float32 and rounded back, as NumPy computes it.
    F16,
    /// bfloat16 (`torch.bfloat16`, `jnp.bfloat16`): the same rule as float16.
    BF16,
    /// `np.complex64`: two float32 (real, imaginary), as NumPy stores it. Compiled
    /// code sees a complex array as a float32 array with a last axis of 2
    /// ([`ArgType::abi`]); the frontend splits complex values into their parts.
    C64,
    /// `np.complex128` (also Python `complex`): two float64.
    C128,
}

impl DType {
    /// Every dtype.
    pub const ALL: [DType; 13] = [
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];
    /// The complex dtypes (not in [`DType::ALL`]: no scalar of them crosses the ABI).
    pub const COMPLEX: [DType; 2] = [DType::C64, DType::C128];
    /// Whether this is `complex64` or `complex128`.
    pub fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }
    /// The type of a complex dtype's parts (`float32` for `complex64`); other dtypes are
    /// their own.
    pub fn real_part(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            d => d,
        }
    }
    /// The MLIR type. Integers are signless in MLIR: `uint8` is `i8` like `int8`, and
    /// the operations on it say how its bits are read (`arith.divui`, `arith.extui`).
    pub fn mlir(self) -> &'static str {
        match self {
            DType::Bool => "i1",
            DType::I8 | DType::U8 => "i8",
            DType::I16 | DType::U16 => "i16",
            DType::I32 | DType::U32 => "i32",
            DType::I64 | DType::U64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::C64 => "complex<f32>",
            DType::C128 => "complex<f64>",
        }
    }
    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }
    /// The 16-bit float format of float16 and bfloat16.
    pub fn half(self) -> Option<crate::half::Half> {
        match self {
            DType::F16 => Some(crate::half::Half::F16),
            DType::BF16 => Some(crate::half::Half::BF16),
            _ => None,
        }
    }
    /// Whether this is an integer type (not bool), signed or unsigned.
    pub fn is_int(self) -> bool {
        !self.is_float() && !self.is_complex() && self != DType::Bool
    }
    /// Whether this is an unsigned integer type.
    pub fn is_unsigned(self) -> bool {
        matches!(self, DType::U8 | DType::U16 | DType::U32 | DType::U64)
    }
    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }
    /// Bit width.
    pub fn bits(self) -> u32 {
        match self {
            DType::Bool => 1,
            d => d.size() as u32 * 8,
        }
    }
    /// The signed integer type of `bits` bits.
    pub fn signed(bits: u32) -> Option<DType> {
        Some(match bits {
            8 => DType::I8,
            16 => DType::I16,
            32 => DType::I32,
            64 => DType::I64,
            _ => return None,
        })
    }
    /// The unsigned integer type of `bits` bits.
    pub fn unsigned(bits: u32) -> Option<DType> {
        Some(match bits {
            8 => DType::U8,
            16 => DType::U16,
            32 => DType::U32,
            64 => DType::U64,
            _ => return None,
        })
    }
    /// NumPy's name (`float32`, ...).
    pub fn numpy(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }
    /// The array interface's type string (`<f4`, `|u1`, `|b1`).
    pub fn typestr(self) -> &'static str {
        match self {
            DType::Bool => "|b1",
            DType::I8 => "|i1",
            DType::I16 => "<i2",
            DType::I32 => "<i4",
            DType::I64 => "<i8",
            DType::U8 => "|u1",
            DType::U16 => "<u2",
            DType::U32 => "<u4",
            DType::U64 => "<u8",
            DType::F16 => "<f2",
            // NumPy has no bfloat16 (ml_dtypes' is a 2-byte void type to NumPy).
            DType::BF16 => "<V2",
            DType::F32 => "<f4",
            DType::F64 => "<f8",
            DType::C64 => "<c8",
            DType::C128 => "<c16",
        }
    }
    /// The dtype of an array interface kind (`b`, `i`, `u`, `f`) and item size in bytes.
    pub fn from_kind(kind: u8, size: usize) -> Option<DType> {
        Some(match (kind, size) {
            (b'b', 1) => DType::Bool,
            (b'i', n) => DType::signed(n as u32 * 8)?,
            (b'u', n) => DType::unsigned(n as u32 * 8)?,
            (b'f', 2) => DType::F16,
            (b'f', 4) => DType::F32,
            (b'f', 8) => DType::F64,
            (b'c', 8) => DType::C64,
            (b'c', 16) => DType::C128,
            _ => return None,
        })
    }
    /// DLPack's type code and bit width (`kDLInt` 0, `kDLUInt` 1, `kDLFloat` 2,
    /// `kDLBfloat` 4, `kDLComplex` 5, `kDLBool` 6).
    pub fn dlpack(self) -> (u8, u8) {
        let code = match self {
            DType::Bool => 6,
            DType::BF16 => 4,
            DType::C64 | DType::C128 => 5,
            d if d.is_float() => 2,
            d if d.is_unsigned() => 1,
            _ => 0,
        };
        (code, if self == DType::Bool { 8 } else { self.bits() as u8 })
    }
    /// The dtype of a DLPack type code and bit width (one lane).
    pub fn from_dlpack(code: u8, bits: u8) -> Option<DType> {
        Some(match (code, bits) {
            (6, 8) => DType::Bool,
            (0, b) => DType::signed(b as u32)?,
            (1, b) => DType::unsigned(b as u32)?,
            (2, 16) => DType::F16,
            (4, 16) => DType::BF16,
            (2, 32) => DType::F32,
            (2, 64) => DType::F64,
            (5, 64) => DType::C64,
            (5, 128) => DType::C128,
            _ => return None,
        })
    }
    /// An integer of this type from the low bits of `raw`, as this type reads them:
    /// sign-extended for signed types, zero-extended for unsigned ones (a `uint64` keeps
    /// its 64 bits in the `i64`), 0 or 1 for bool.
    pub fn int_from_bits(self, raw: u64) -> i64 {
        match self {
            DType::Bool => (raw & 1) as i64,
            DType::I8 => raw as i8 as i64,
            DType::I16 => raw as i16 as i64,
            DType::I32 => raw as i32 as i64,
            DType::U8 => raw as u8 as i64,
            DType::U16 => raw as u16 as i64,
            DType::U32 => raw as u32 as i64,
            _ => raw as i64,
        }
    }
    /// The smallest value of a signed integer type of this width (`-128` for int8);
    /// as bits, the top bit alone (what flipping the sign bit xors with).
    pub fn signed_min(self) -> i64 {
        i64::MIN >> (64 - self.bits().clamp(1, 64))
    }
    /// Whether the integer `k` is a value of this integer type (`-1` is not a uint8).
    pub fn holds(self, k: i64) -> bool {
        let b = self.bits();
        if self.is_unsigned() {
            k >= 0 && (b >= 64 || k < 1i64 << b)
        } else {
            b >= 64 || (k >= self.signed_min() && k <= !self.signed_min())
        }
    }
    /// The bits an integer of this type is passed as (its low bits, zero above).
    pub fn int_to_bits(self, v: i64) -> u64 {
        match self.bits() {
            1 => (v & 1) as u64,
            64 => v as u64,
            b => (v as u64) & ((1u64 << b) - 1),
        }
    }
    /// An integer of this type as an `f64` (a `uint64` read unsigned).
    pub fn int_to_f64(self, v: i64) -> f64 {
        if self == DType::U64 { v as u64 as f64 } else { v as f64 }
    }
    /// Parses a MLIR element type (integers are read as signed).
    pub fn from_mlir(s: &str) -> Option<DType> {
        Some(match s {
            "i1" => DType::Bool,
            "i8" => DType::I8,
            "i16" => DType::I16,
            "i32" => DType::I32,
            "i64" => DType::I64,
            "f16" => DType::F16,
            "bf16" => DType::BF16,
            "f32" => DType::F32,
            "f64" => DType::F64,
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.numpy())
    }
}

/// The type of one argument (or result) of a jitted function; a function is
/// specialised for each distinct list of argument types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ArgType {
    /// A NumPy array of the given element type and rank (C-contiguous).
    Array {
        /// Element type.
        dtype: DType,
        /// Number of dimensions.
        rank: usize,
    },
    /// A scalar: Python `int`/`float`/`bool` (`weak`, NumPy's NEP 50 rules) or a
    /// NumPy scalar (strong).
    Scalar {
        /// Its type.
        dtype: DType,
        /// Python scalar (weakly typed) rather than a NumPy scalar.
        weak: bool,
    },
}

impl ArgType {
    /// The type compiled code takes for this argument: a complex array of rank `r` is a
    /// float array of rank `r + 1` whose last axis (of 2) holds the real and imaginary
    /// parts, the layout NumPy stores it in; everything else is itself.
    pub fn abi(&self) -> ArgType {
        match *self {
            ArgType::Array { dtype, rank } if dtype.is_complex() => ArgType::Array {
                dtype: dtype.real_part(),
                rank: rank + 1,
            },
            t => t,
        }
    }
    /// The MLIR type of the argument as a function parameter.
    pub fn mlir(&self) -> String {
        match self.abi() {
            ArgType::Array { dtype, rank } => memref_type(dtype, rank),
            ArgType::Scalar { dtype, .. } => dtype.mlir().to_string(),
        }
    }
}

impl fmt::Display for ArgType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgType::Array { dtype, rank } => write!(f, "{dtype}[{}]", vec![":"; *rank].join(",")),
            ArgType::Scalar { dtype, weak: true } => {
                write!(
                    f,
                    "{}",
                    if dtype.is_float() {
                        "float"
                    } else if dtype.is_int() {
                        "int"
                    } else if dtype.is_complex() {
                        "complex"
                    } else {
                        "bool"
                    }
                )
            }
            ArgType::Scalar { dtype, .. } => write!(f, "{dtype}"),
        }
    }
}

/// Whether the MLIR type `ty` is a float type (`f16`, `bf16`, `f32`, `f64`).
pub fn is_float_type(ty: &str) -> bool {
    matches!(ty, "f16" | "bf16" | "f32" | "f64")
}

/// `memref<?x?xf32>` for rank 2, `memref<f32>` for rank 0. Booleans are stored as
/// bytes (`i8`, as NumPy stores them).
pub fn memref_type(dtype: DType, rank: usize) -> String {
    let mut s = String::from("memref<");
    for _ in 0..rank {
        s.push_str("?x");
    }
    s.push_str(if dtype == DType::Bool { "i8" } else { dtype.mlir() });
    s.push('>');
    s
}

/// Parses `memref<?x?xf32>` into element type and rank.
pub fn parse_memref(ty: &str) -> Option<(DType, usize)> {
    MemRefType::parse(ty).map(|m| (m.elem, m.rank()))
}

/// A parsed memref type: element type and shape (`None` for a dynamic size `?`).
/// Booleans are stored as bytes: an `i8` element is [`DType::Bool`]. Layouts and memory
/// spaces (`memref<4xf32, 3>`) are ignored.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MemRefType {
    /// The element type.
    pub elem: DType,
    /// Per dimension: its static size, or `None` for `?`.
    pub shape: Vec<Option<usize>>,
}

impl MemRefType {
    /// Parses `memref<?x4xf64>` (`None` for anything else).
    pub fn parse(ty: &str) -> Option<MemRefType> {
        let inner = ty.trim().strip_prefix("memref<")?.strip_suffix('>')?;
        let inner = inner.split(',').next()?.trim();
        let mut parts: Vec<&str> = inner.split('x').collect();
        let last = parts.pop()?;
        let elem = if last == "i8" { DType::Bool } else { DType::from_mlir(last)? };
        let shape = parts
            .iter()
            .map(|p| if *p == "?" { Some(None) } else { p.parse::<usize>().ok().map(Some) })
            .collect::<Option<Vec<_>>>()?;
        Some(MemRefType { elem, shape })
    }
    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
    /// Number of dynamic dimensions (the operands of `memref.alloc`).
    pub fn dynamic_dims(&self) -> usize {
        self.shape.iter().filter(|d| d.is_none()).count()
    }
}

impl fmt::Display for MemRefType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("memref<")?;
        for d in &self.shape {
            match d {
                Some(n) => write!(f, "{n}x")?,
                None => f.write_str("?x")?,
            }
        }
        f.write_str(if self.elem == DType::Bool { "i8" } else { self.elem.mlir() })?;
        f.write_str(">")
    }
}

// ----- scalar types with NumPy's promotion rules (NEP 50: Python scalars are "weak") -----

/// A scalar type: a dtype, and whether it is a weakly-typed Python scalar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct STy {
    /// The element type.
    pub dt: DType,
    /// Python `int`/`float` (weak) rather than a NumPy scalar.
    pub weak: bool,
}

impl STy {
    /// A strongly typed scalar.
    pub const fn strong(dt: DType) -> Self {
        STy { dt, weak: false }
    }
    /// Python `int`.
    pub const INT: STy = STy {
        dt: DType::I64,
        weak: true,
    };
    /// Python `float`.
    pub const FLOAT: STy = STy {
        dt: DType::F64,
        weak: true,
    };
    /// Python `bool`.
    pub const BOOL: STy = STy {
        dt: DType::Bool,
        weak: true,
    };
    /// MLIR type.
    pub fn mlir(self) -> &'static str {
        self.dt.mlir()
    }
    /// Whether float.
    pub fn is_float(self) -> bool {
        self.dt.is_float()
    }
    /// The float type this becomes under true division or a math function.
    pub fn to_float(self) -> STy {
        if self.is_float() {
            self
        } else if self.weak || self.dt == DType::Bool {
            STy::FLOAT
        } else {
            STy::strong(DType::F64)
        }
    }
}

fn kind(dt: DType) -> u8 {
    match dt {
        DType::Bool => 0,
        d if d.is_float() => 2,
        _ => 1,
    }
}

/// The result type of a binary arithmetic operation on `a` and `b` (NumPy ≥ 2 rules).
pub fn promote(a: STy, b: STy) -> STy {
    if a.dt == b.dt {
        return STy {
            dt: a.dt,
            weak: a.weak && b.weak,
        };
    }
    let (ka, kb) = (kind(a.dt), kind(b.dt));
    match (a.weak, b.weak) {
        (true, true) => {
            if ka >= kb {
                a
            } else {
                b
            }
        }
        (true, false) | (false, true) => {
            let (w, s) = if a.weak { (a, b) } else { (b, a) };
            if kind(w.dt) <= kind(s.dt) {
                s
            } else if kind(w.dt) == 2 {
                // Python float with an integer or bool array element → float64.
                STy::strong(DType::F64)
            } else {
                // Python int with a bool → int64.
                STy::strong(DType::I64)
            }
        }
        (false, false) => {
            if ka == 1 && kb == 1 {
                STy::strong(promote_ints(a.dt, b.dt))
            } else if ka == 2 && kb == 2 && a.dt.bits() == b.dt.bits() {
                // float16 with bfloat16: float32 (torch's rule; neither holds the other).
                STy::strong(DType::F32)
            } else if ka == kb {
                STy::strong(if a.dt.bits() >= b.dt.bits() { a.dt } else { b.dt })
            } else if ka == 0 || kb == 0 {
                if ka > kb { a } else { b }
            } else {
                // An integer and a float: the narrowest float, at least the float's
                // type, that holds the integer exactly (int8 + float16 is float16,
                // int16 + float16 float32, int32 + float32 float64).
                let (i, f) = if ka == 1 { (a, b) } else { (b, a) };
                let need = match i.dt.bits() {
                    0..=8 => 16,
                    9..=16 => 32,
                    _ => 64,
                };
                if f.dt.bits() >= need {
                    f
                } else if need == 32 {
                    STy::strong(DType::F32)
                } else {
                    STy::strong(DType::F64)
                }
            }
        }
    }
}

/// NumPy's promotion of two integer types: the wider of two of the same signedness; of
/// a signed and an unsigned one, the signed type that holds both (`int8` + `uint8` is
/// `int16`), and float64 when none does (`int64` + `uint64`).
fn promote_ints(a: DType, b: DType) -> DType {
    if a.is_unsigned() == b.is_unsigned() {
        return if a.bits() >= b.bits() { a } else { b };
    }
    let (s, u) = if a.is_unsigned() { (b, a) } else { (a, b) };
    if s.bits() > u.bits() {
        s
    } else {
        DType::signed(u.bits() * 2).unwrap_or(DType::F64)
    }
}

/// Parses a comma-separated signature such as `f32[:,:],f64[:],int` (commas inside
/// brackets belong to the type).
pub fn parse_signature(s: &str) -> Result<Vec<ArgType>, String> {
    let mut parts = vec![];
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '[' => depth += 1,
            ']' if depth == 0 => return Err(format!("`{s}`: `]` without a matching `[`")),
            ']' => depth -= 1,
            _ => {}
        }
        if c == ',' && depth == 0 {
            parts.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    if depth != 0 {
        return Err(format!("`{s}`: `[` without a matching `]`"));
    }
    parts.push(cur);
    // `f32[:],int` and nothing else: a trailing comma is allowed, an empty signature
    // means no arguments.
    if parts.last().is_some_and(|p| p.trim().is_empty()) && parts.len() > 1 {
        parts.pop();
    }
    if parts.len() == 1 && parts[0].trim().is_empty() {
        return Ok(vec![]);
    }
    parts
        .iter()
        .enumerate()
        .map(|(k, p)| {
            if p.trim().is_empty() {
                Err(format!("`{s}`: argument {} has no type", k + 1))
            } else {
                ArgType::parse(p).map_err(|e| format!("argument {}: {e}", k + 1))
            }
        })
        .collect()
}

impl ArgType {
    /// Parses `f32[:,:]`, `float64[:]`, `int`, `float`, `bool`, `i32`, `np.float32`, ...
    pub fn parse(s: &str) -> Result<ArgType, String> {
        let s = s.trim();
        let (base, rank) = match s.find('[') {
            Some(i) => {
                let Some(inner) = s[i + 1..].strip_suffix(']').filter(|x| !x.contains(['[', ']'])) else {
                    return Err(format!("`{s}`: an array type is a dtype and one `:` per dimension, e.g. f32[:,:]"));
                };
                let rank = if inner.trim().is_empty() {
                    0
                } else {
                    let dims: Vec<&str> = inner.split(',').map(str::trim).collect();
                    if dims.iter().any(|d| *d != ":") {
                        return Err(format!(
                            "`{s}`: array dimensions are written `:`, one per dimension (e.g. f32[:,:])"
                        ));
                    }
                    dims.len()
                };
                (&s[..i], Some(rank))
            }
            None => (s, None),
        };
        let base = base.trim().trim_start_matches("np.").trim_start_matches("numpy.");
        let (dtype, weak) = match base {
            "f32" | "float32" => (DType::F32, false),
            "f64" | "float64" => (DType::F64, false),
            "i32" | "int32" => (DType::I32, false),
            "i64" | "int64" => (DType::I64, false),
            "i8" | "int8" => (DType::I8, false),
            "i16" | "int16" => (DType::I16, false),
            "u8" | "uint8" => (DType::U8, false),
            "u16" | "uint16" => (DType::U16, false),
            "u32" | "uint32" => (DType::U32, false),
            "u64" | "uint64" => (DType::U64, false),
            "f16" | "float16" => (DType::F16, false),
            "bf16" | "bfloat16" => (DType::BF16, false),
            "c64" | "complex64" => (DType::C64, false),
            "c128" | "complex128" => (DType::C128, false),
            "complex" => (DType::C128, true),
            "int" => (DType::I64, true),
            "float" => (DType::F64, true),
            "bool" => (DType::Bool, true),
            _ => return Err(format!("unknown type `{s}` (expected e.g. f32[:,:], f64[:], int, float, i32)")),
        };
        Ok(match rank {
            Some(rank) => ArgType::Array { dtype, rank },
            None => ArgType::Scalar { dtype, weak },
        })
    }
}

#[cfg(test)]
mod sty_tests {
    use super::*;

    #[test]
    fn signatures() {
        let f32_1 = ArgType::Array {
            dtype: DType::F32,
            rank: 1,
        };
        let int = ArgType::Scalar {
            dtype: DType::I64,
            weak: true,
        };
        assert_eq!(parse_signature("f32[:], f32[:] ,int"), Ok(vec![f32_1, f32_1, int]));
        assert_eq!(parse_signature("f32[:],int,"), Ok(vec![f32_1, int]));
        assert_eq!(
            parse_signature("f64[:,:]"),
            Ok(vec![ArgType::Array {
                dtype: DType::F64,
                rank: 2
            }])
        );
        assert_eq!(parse_signature(""), Ok(vec![]));
        // Malformed signatures used to be accepted with another arity (and reported as
        // "takes 4 arguments but 2 were given") or another rank.
        for (bad, want) in [
            ("f32[:],f32[:", "without a matching `]`"),
            ("f32[:]],int", "without a matching `[`"),
            ("f32[:],,int", "argument 2 has no type"),
            ("f32[:]x,int", "argument 1: `f32[:]x`"),
            ("f32[abc],int", "dimensions are written `:`"),
            ("f32[:,2]", "dimensions are written `:`"),
            ("floaty", "unknown type"),
        ] {
            let e = parse_signature(bad).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn memref_types() {
        let m = MemRefType::parse("memref<?x4xf32>").unwrap();
        assert_eq!((m.elem, m.shape.clone(), m.dynamic_dims()), (DType::F32, vec![None, Some(4)], 1));
        assert_eq!(m.to_string(), "memref<?x4xf32>");
        assert_eq!(MemRefType::parse(&memref_type(DType::Bool, 2)).unwrap().elem, DType::Bool);
        assert_eq!(parse_memref("memref<f64>"), Some((DType::F64, 0)));
        assert_eq!(MemRefType::parse("memref<2xf64, 3>").unwrap().rank(), 1);
        assert!(MemRefType::parse("tensor<?xf64>").is_none());
    }

    #[test]
    fn nep50() {
        let f32 = STy::strong(DType::F32);
        let i32 = STy::strong(DType::I32);
        assert_eq!(promote(STy::FLOAT, f32), f32);
        assert_eq!(promote(STy::INT, f32), f32);
        assert_eq!(promote(STy::INT, i32), i32);
        assert_eq!(promote(STy::FLOAT, i32), STy::strong(DType::F64));
        assert_eq!(promote(i32, f32), STy::strong(DType::F64));
        assert_eq!(promote(STy::INT, STy::FLOAT), STy::FLOAT);
        assert_eq!(promote(STy::strong(DType::I64), i32), STy::strong(DType::I64));
        // The small and unsigned integers (checked against NumPy 2's result_type).
        let s = STy::strong;
        for (a, b, want) in [
            (DType::I8, DType::U8, DType::I16),
            (DType::I64, DType::U64, DType::F64),
            (DType::U32, DType::I32, DType::I64),
            (DType::U8, DType::I16, DType::I16),
            (DType::U16, DType::F32, DType::F32),
            (DType::I16, DType::F32, DType::F32),
            (DType::U32, DType::F32, DType::F64),
            (DType::U8, DType::U64, DType::U64),
            (DType::Bool, DType::U8, DType::U8),
            (DType::F16, DType::F32, DType::F32),
            (DType::F16, DType::BF16, DType::F32),
            (DType::I8, DType::F16, DType::F16),
            (DType::I16, DType::F16, DType::F32),
            (DType::I32, DType::F16, DType::F64),
            (DType::U8, DType::BF16, DType::BF16),
        ] {
            assert_eq!(promote(s(a), s(b)), s(want), "{a} + {b}");
            assert_eq!(promote(s(b), s(a)), s(want), "{b} + {a}");
        }
        assert_eq!(promote(STy::INT, s(DType::U8)), s(DType::U8));
        assert_eq!(promote(STy::FLOAT, s(DType::U8)), s(DType::F64));
        assert_eq!(promote(STy::FLOAT, s(DType::F16)), s(DType::F16));
        assert_eq!(promote(STy::INT, s(DType::BF16)), s(DType::BF16));
    }

    #[test]
    fn integer_bits() {
        assert_eq!(DType::U8.int_from_bits(0xC8), 200);
        assert_eq!(DType::I8.int_from_bits(0xC8), -56);
        assert_eq!(DType::U8.int_to_bits(-56), 0xC8);
        assert_eq!(DType::U64.int_to_f64(-1), 18446744073709551615.0);
        assert_eq!(DType::I8.signed_min(), -128);
        assert_eq!(DType::I64.signed_min(), i64::MIN);
        assert!(DType::I8.holds(127) && DType::I8.holds(-128) && !DType::I8.holds(128) && !DType::I8.holds(-129));
        assert!(DType::U8.holds(255) && !DType::U8.holds(256) && !DType::U8.holds(-1));
        assert!(DType::U64.holds(i64::MAX) && !DType::U64.holds(-1) && DType::I64.holds(i64::MIN));
        for d in DType::ALL {
            if d != DType::BF16 {
                assert_eq!(DType::from_kind(d.typestr().as_bytes()[1], d.size()), Some(d));
            }
            let (c, b) = d.dlpack();
            assert_eq!(DType::from_dlpack(c, b), Some(d));
        }
    }
}
