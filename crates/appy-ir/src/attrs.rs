//! Attribute values with a meaning, parsed from and printed to their MLIR text once:
//! comparison predicates, atomic kinds, constants, integer arrays, strings and symbol
//! references. The owned mirror ([`crate::ir`]) keeps every attribute as MLIR text;
//! passes and the runtime read and write them through these types, never by splitting
//! text themselves.

use serde::{Deserialize, Serialize};

/// The leading integer of an attribute such as `2 : i64`.
fn leading_int(text: &str) -> Option<i64> {
    text.split(':').next()?.trim().parse().ok()
}

/// `arith.cmpi` predicates, numbered as MLIR numbers them (`CmpIPredicate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum CmpIPredicate {
    Eq = 0,
    Ne = 1,
    Slt = 2,
    Sle = 3,
    Sgt = 4,
    Sge = 5,
    Ult = 6,
    Ule = 7,
    Ugt = 8,
    Uge = 9,
}

impl CmpIPredicate {
    const ALL: [CmpIPredicate; 10] = [
        Self::Eq,
        Self::Ne,
        Self::Slt,
        Self::Sle,
        Self::Sgt,
        Self::Sge,
        Self::Ult,
        Self::Ule,
        Self::Ugt,
        Self::Uge,
    ];
    /// The predicate numbered `n`.
    pub fn from_i64(n: i64) -> Option<Self> {
        Self::ALL.get(usize::try_from(n).ok()?).copied()
    }
    /// Parses the `predicate` attribute (`2 : i64`).
    pub fn parse(text: &str) -> Option<Self> {
        Self::from_i64(leading_int(text)?)
    }
    /// The `predicate` attribute's text.
    pub fn attr(self) -> String {
        format!("{} : i64", self as i64)
    }
    /// Compares `a` and `b`, integers of one width held sign-extended in an `i64`
    /// (unsigned predicates compare the bit patterns, which sign extension orders the
    /// same way as the narrower type).
    pub fn eval(self, a: i64, b: i64) -> bool {
        let (ua, ub) = (a as u64, b as u64);
        match self {
            Self::Eq => a == b,
            Self::Ne => a != b,
            Self::Slt => a < b,
            Self::Sle => a <= b,
            Self::Sgt => a > b,
            Self::Sge => a >= b,
            Self::Ult => ua < ub,
            Self::Ule => ua <= ub,
            Self::Ugt => ua > ub,
            Self::Uge => ua >= ub,
        }
    }
}

/// `arith.cmpf` predicates, numbered as MLIR numbers them (`CmpFPredicate`): `O*` are
/// false when an operand is NaN, `U*` true.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum CmpFPredicate {
    AlwaysFalse = 0,
    Oeq = 1,
    Ogt = 2,
    Oge = 3,
    Olt = 4,
    Ole = 5,
    One = 6,
    Ord = 7,
    Ueq = 8,
    Ugt = 9,
    Uge = 10,
    Ult = 11,
    Ule = 12,
    Une = 13,
    Uno = 14,
    AlwaysTrue = 15,
}

impl CmpFPredicate {
    const ALL: [CmpFPredicate; 16] = [
        Self::AlwaysFalse,
        Self::Oeq,
        Self::Ogt,
        Self::Oge,
        Self::Olt,
        Self::Ole,
        Self::One,
        Self::Ord,
        Self::Ueq,
        Self::Ugt,
        Self::Uge,
        Self::Ult,
        Self::Ule,
        Self::Une,
        Self::Uno,
        Self::AlwaysTrue,
    ];
    /// The predicate numbered `n`.
    pub fn from_i64(n: i64) -> Option<Self> {
        Self::ALL.get(usize::try_from(n).ok()?).copied()
    }
    /// Parses the `predicate` attribute (`2 : i64`).
    pub fn parse(text: &str) -> Option<Self> {
        Self::from_i64(leading_int(text)?)
    }
    /// The `predicate` attribute's text.
    pub fn attr(self) -> String {
        format!("{} : i64", self as i64)
    }
    /// Compares `a` and `b`.
    pub fn eval(self, a: f64, b: f64) -> bool {
        let uno = a.is_nan() || b.is_nan();
        match self {
            Self::AlwaysFalse => false,
            Self::Oeq => !uno && a == b,
            Self::Ogt => !uno && a > b,
            Self::Oge => !uno && a >= b,
            Self::Olt => !uno && a < b,
            Self::Ole => !uno && a <= b,
            Self::One => !uno && a != b,
            Self::Ord => !uno,
            Self::Ueq => uno || a == b,
            Self::Ugt => uno || a > b,
            Self::Uge => uno || a >= b,
            Self::Ult => uno || a < b,
            Self::Ule => uno || a <= b,
            Self::Une => uno || a != b,
            Self::Uno => uno,
            Self::AlwaysTrue => true,
        }
    }
}

/// `memref.atomic_rmw` kinds, numbered as MLIR numbers them (`arith::AtomicRMWKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum AtomicKind {
    Addf = 0,
    Addi = 1,
    Andi = 2,
    Assign = 3,
    Maximumf = 4,
    Maxnumf = 5,
    Maxs = 6,
    Maxu = 7,
    Minimumf = 8,
    Minnumf = 9,
    Mins = 10,
    Minu = 11,
    Mulf = 12,
    Muli = 13,
    Ori = 14,
    Xori = 15,
}

impl AtomicKind {
    const ALL: [AtomicKind; 16] = [
        Self::Addf,
        Self::Addi,
        Self::Andi,
        Self::Assign,
        Self::Maximumf,
        Self::Maxnumf,
        Self::Maxs,
        Self::Maxu,
        Self::Minimumf,
        Self::Minnumf,
        Self::Mins,
        Self::Minu,
        Self::Mulf,
        Self::Muli,
        Self::Ori,
        Self::Xori,
    ];
    /// The kind numbered `n`.
    pub fn from_i64(n: i64) -> Option<Self> {
        Self::ALL.get(usize::try_from(n).ok()?).copied()
    }
    /// Parses the `kind` attribute (`0 : i64`).
    pub fn parse(text: &str) -> Option<Self> {
        Self::from_i64(leading_int(text)?)
    }
    /// The `kind` attribute's text.
    pub fn attr(self) -> String {
        format!("{} : i64", self as i64)
    }
    /// The `arith` op that combines the memory's value (left) with the operand
    /// (right); `None` for `assign`, which stores the operand.
    pub fn arith_op(self) -> Option<&'static str> {
        Some(match self {
            Self::Addf => "arith.addf",
            Self::Addi => "arith.addi",
            Self::Andi => "arith.andi",
            Self::Assign => return None,
            Self::Maximumf => "arith.maximumf",
            Self::Maxnumf => "arith.maxnumf",
            Self::Maxs => "arith.maxsi",
            Self::Maxu => "arith.maxui",
            Self::Minimumf => "arith.minimumf",
            Self::Minnumf => "arith.minnumf",
            Self::Mins => "arith.minsi",
            Self::Minu => "arith.minui",
            Self::Mulf => "arith.mulf",
            Self::Muli => "arith.muli",
            Self::Ori => "arith.ori",
            Self::Xori => "arith.xori",
        })
    }
}

/// A scalar constant: an integer (also `index` and `i1`) or a float.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Scalar {
    /// An integer, sign-extended to 64 bits (`i1`: 0 or 1).
    Int(i64),
    /// A float (an `f32` value held exactly in an `f64`). Serialized as its bit
    /// pattern: JSON has no infinities or NaNs (a max reduction's identity is -inf).
    Float(#[serde(with = "f64_bits")] f64),
}

/// Serde for an `f64` as its IEEE bit pattern (exact, infinities and NaNs included).
mod f64_bits {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(v.to_bits())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        u64::deserialize(d).map(f64::from_bits)
    }
}

/// Parses an `arith.constant`'s `value` attribute (`3 : i64`, `true`,
/// `0x3FF0000000000000 : f64`, `1.500000e+00 : f32`); `ty` is the result type, used when
/// the text names none. An `f32` written in decimal is rounded to `f32`.
pub fn parse_constant(text: &str, ty: &str) -> Option<Scalar> {
    let (val, t) = text.rsplit_once(" : ").unwrap_or((text, ty));
    let (val, t) = (val.trim(), t.trim());
    if t.starts_with('f') || t == "bf16" {
        let f = if let Some(h) = val.strip_prefix("0x") {
            let bits = u64::from_str_radix(h, 16).ok()?;
            if t == "f32" {
                f32::from_bits(bits as u32) as f64
            } else if let Some(half) = crate::types::DType::from_mlir(t).and_then(crate::types::DType::half) {
                half.to_f64(bits as u16)
            } else {
                f64::from_bits(bits)
            }
        } else {
            let f = val.parse::<f64>().ok()?;
            match crate::types::DType::from_mlir(t).and_then(crate::types::DType::half) {
                Some(half) => half.round(f),
                None if t == "f32" => f as f32 as f64,
                None => f,
            }
        };
        return Some(Scalar::Float(f));
    }
    Some(Scalar::Int(match val {
        "true" => 1,
        "false" => 0,
        s => s.parse::<i64>().ok()?,
    }))
}

/// Parses a dense integer array attribute (`array<i64: 1, 2>`, `array<i32: ...>`,
/// `array<i64>`).
pub fn int_array(s: &str) -> Vec<i64> {
    let inner = s.trim().trim_start_matches("array<").trim_end_matches('>');
    match inner.split_once(':') {
        Some((_, xs)) => xs.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        None => vec![],
    }
}

/// `array<i64: a, b>` (or `array<i64>` when empty).
pub fn i64_array(xs: &[i64]) -> String {
    if xs.is_empty() {
        "array<i64>".into()
    } else {
        format!("array<i64: {}>", xs.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "))
    }
}

/// A string attribute's text (`"sum"`) for `s`, escaped as MLIR prints strings
/// ([`escape_str`]).
pub fn str_attr(s: &str) -> String {
    format!("\"{}\"", escape_str(s))
}

/// `s` as the body of an MLIR string literal: printable ASCII as it is, every other byte
/// (and `"`, `\`) as `\XX` (two upper-case hex digits), as MLIR prints strings.
pub fn escape_str(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\{b:02X}"));
        }
    }
    out
}

/// The inverse of [`escape_str`] (also reads MLIR's `\n`, `\t`, `\"` and `\\`).
pub fn unescape_str(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            let hex = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok());
            match (hex, b[i + 1]) {
                (Some(v), _) => {
                    out.push(v);
                    i += 3;
                    continue;
                }
                (None, b'n') => out.push(b'\n'),
                (None, b't') => out.push(b'\t'),
                (None, c) => out.push(c),
            }
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The contents of a string attribute (`"sum"` → `sum`).
pub fn parse_str(text: &str) -> &str {
    text.trim().trim_matches('"')
}

/// The leaf of a symbol reference (`@_appy_kernels::@k` → `k`, `@f` → `f`).
pub fn symbol_leaf(text: &str) -> &str {
    text.rsplit("::@").next().unwrap_or(text).trim().trim_start_matches('@')
}

/// Whether an integer-valued flag attribute (`trans_a = 1 : i64`) is set.
pub fn flag(text: Option<&str>) -> bool {
    text.is_some_and(|v| v.trim().starts_with('1'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicates_round_trip_and_evaluate() {
        for n in 0..10 {
            let p = CmpIPredicate::from_i64(n).unwrap();
            assert_eq!(CmpIPredicate::parse(&p.attr()), Some(p));
        }
        for n in 0..16 {
            let p = CmpFPredicate::from_i64(n).unwrap();
            assert_eq!(CmpFPredicate::parse(&p.attr()), Some(p));
        }
        assert!(CmpIPredicate::parse("10 : i64").is_none());
        // -1 as i32 is 0xFFFFFFFF unsigned: above 1.
        assert!(CmpIPredicate::Ugt.eval(-1, 1) && CmpIPredicate::Slt.eval(-1, 1));
        assert!(CmpFPredicate::Une.eval(f64::NAN, 0.0) && !CmpFPredicate::One.eval(f64::NAN, 0.0));
        for n in 0..16 {
            let k = AtomicKind::from_i64(n).unwrap();
            assert_eq!(AtomicKind::parse(&k.attr()), Some(k));
        }
    }

    #[test]
    fn constants() {
        assert_eq!(parse_constant("3 : i64", "i64"), Some(Scalar::Int(3)));
        assert_eq!(parse_constant("true", "i1"), Some(Scalar::Int(1)));
        assert_eq!(parse_constant("0x3FF0000000000000 : f64", "f64"), Some(Scalar::Float(1.0)));
        // Infinities and NaNs survive JSON (bundles): as bit patterns.
        for v in [f64::NEG_INFINITY, f64::INFINITY, f64::NAN, -0.0, 0.1] {
            let text = serde_json::to_string(&Scalar::Float(v)).unwrap();
            let Scalar::Float(back) = serde_json::from_str::<Scalar>(&text).unwrap() else {
                panic!("{text}")
            };
            assert_eq!(back.to_bits(), v.to_bits(), "{text}");
        }
        assert_eq!(parse_constant("0x3F800000 : f32", "f32"), Some(Scalar::Float(1.0)));
        assert_eq!(parse_constant("1.000000e-01 : f32", "f32"), Some(Scalar::Float(0.1f32 as f64)));
        assert_eq!(int_array("array<i64: 1, -1>"), vec![1, -1]);
        assert_eq!(i64_array(&[]), "array<i64>");
        assert_eq!(symbol_leaf("@_appy_kernels::@k0"), "k0");
    }
}
