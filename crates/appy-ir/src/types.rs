//! Element types and function signatures shared by the compiler and the runtime.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An element type (NumPy dtype) supported by appy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum DType {
    /// `bool` (scalars only).
    Bool,
    /// `np.int32`
    I32,
    /// `np.int64` (also Python `int`)
    I64,
    /// `np.float32`
    F32,
    /// `np.float64` (also Python `float`)
    F64,
}

impl DType {
    /// The MLIR type.
    pub fn mlir(self) -> &'static str {
        match self {
            DType::Bool => "i1",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }
    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }
    /// Whether this is an integer type (not bool).
    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::I64)
    }
    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }
    /// Bit width.
    pub fn bits(self) -> u32 {
        match self {
            DType::Bool => 1,
            d => d.size() as u32 * 8,
        }
    }
    /// NumPy's name (`float32`, ...).
    pub fn numpy(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }
    /// Parses a MLIR element type.
    pub fn from_mlir(s: &str) -> Option<DType> {
        Some(match s {
            "i1" => DType::Bool,
            "i32" => DType::I32,
            "i64" => DType::I64,
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
    /// The MLIR type of the argument as a function parameter.
    pub fn mlir(&self) -> String {
        match self {
            ArgType::Array { dtype, rank } => memref_type(*dtype, *rank),
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
                    } else {
                        "bool"
                    }
                )
            }
            ArgType::Scalar { dtype, .. } => write!(f, "{dtype}"),
        }
    }
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
        DType::I32 | DType::I64 => 1,
        DType::F32 | DType::F64 => 2,
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
            if ka == kb {
                STy::strong(if a.dt.bits() >= b.dt.bits() { a.dt } else { b.dt })
            } else if ka == 0 || kb == 0 {
                if ka > kb { a } else { b }
            } else {
                // int and float: float64 unless an int32 meets... NumPy: int32+float32 → float64.
                let (i, f) = if ka == 1 { (a, b) } else { (b, a) };
                let _ = i;
                if f.dt == DType::F64 { f } else { STy::strong(DType::F64) }
            }
        }
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
    }
}
