//! The scalar semantics of host code: integers held sign-extended in an `i64` at their
//! width (1, 8, 16, 32 or 64 bits), floats in an `f64` (an `f32` result is rounded to `f32`).
//! Float functions are in [`crate::hostmath`].

use crate::error::{RunError, RunResult};
use appy_ir::host::{IntBinOp, IntCastOp};

/// `v` wrapped to `bits` bits (sign-extended; `i1` is 0 or 1).
pub fn wrap(v: i64, bits: u8) -> i64 {
    match bits {
        1 => v & 1,
        8 => v as i8 as i64,
        16 => v as i16 as i64,
        32 => v as i32 as i64,
        _ => v,
    }
}

/// The bits of `v` as an unsigned number of `bits` bits.
pub fn unsigned(v: i64, bits: u8) -> u64 {
    match bits {
        1 => (v & 1) as u64,
        8 => v as u8 as u64,
        16 => v as u16 as u64,
        32 => v as u32 as u64,
        _ => v as u64,
    }
}

/// `x` rounded to `f32` when `f32`.
pub fn round(f32: bool, x: f64) -> f64 {
    if f32 { x as f32 as f64 } else { x }
}

/// A binary integer op on `bits`-wide operands; division by zero is an error.
pub fn int_bin(op: IntBinOp, bits: u8, a: i64, b: i64) -> RunResult<i64> {
    use IntBinOp::*;
    if b == 0 && matches!(op, DivSI | RemSI | CeilDivSI | FloorDivSI | DivUI | RemUI | CeilDivUI) {
        return Err(RunError::Program("integer division by zero".into()));
    }
    let (ua, ub) = (unsigned(a, bits), unsigned(b, bits));
    let r = match op {
        AddI => a.wrapping_add(b),
        SubI => a.wrapping_sub(b),
        MulI => a.wrapping_mul(b),
        DivSI => a.wrapping_div(b),
        RemSI => a.wrapping_rem(b),
        CeilDivSI => {
            let q = a.wrapping_div(b);
            if (a % b != 0) && ((a < 0) == (b < 0)) { q + 1 } else { q }
        }
        FloorDivSI => a.div_euclid(b) - if b < 0 && a.rem_euclid(b) != 0 { 1 } else { 0 },
        MaxSI => a.max(b),
        MinSI => a.min(b),
        AndI => a & b,
        OrI => a | b,
        XOrI => a ^ b,
        ShLI => a.wrapping_shl(b as u32),
        ShRSI => a.wrapping_shr(b as u32),
        DivUI => (ua / ub) as i64,
        RemUI => (ua % ub) as i64,
        CeilDivUI => ua.div_ceil(ub) as i64,
        MaxUI => ua.max(ub) as i64,
        MinUI => ua.min(ub) as i64,
        ShRUI => ua.checked_shr(ub as u32).unwrap_or(0) as i64,
        IPowI => {
            if b < 0 {
                0
            } else {
                a.wrapping_pow(b as u32)
            }
        }
    };
    Ok(wrap(r, bits))
}

/// An integer cast from `from` to `to` bits: unsigned casts (`extui`, `index_castui`)
/// zero-extend, the others sign-extend or truncate.
pub fn int_cast(op: IntCastOp, from: u8, to: u8, a: i64) -> i64 {
    let zero_extend = matches!(op, IntCastOp::ExtUI | IntCastOp::IndexCastUI) && from < to;
    if zero_extend { unsigned(a, from) as i64 } else { wrap(a, to) }
}

/// `sitofp` / `uitofp` of a `from`-bit integer.
pub fn int_to_float(unsigned_: bool, from: u8, f32: bool, a: i64) -> f64 {
    let x = if unsigned_ { unsigned(a, from) as f64 } else { a as f64 };
    round(f32, x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_semantics() {
        // Python's floor division and its remainder's sign.
        assert_eq!(int_bin(IntBinOp::FloorDivSI, 64, -7, 2).unwrap(), -4);
        assert_eq!(int_bin(IntBinOp::CeilDivSI, 64, 7, 2).unwrap(), 4);
        // i32 arithmetic wraps at 32 bits.
        assert_eq!(int_bin(IntBinOp::AddI, 32, i32::MAX as i64, 1).unwrap(), i32::MIN as i64);
        assert_eq!(int_bin(IntBinOp::DivUI, 32, -8, 3).unwrap(), (0xFFFF_FFF8u32 / 3) as i32 as i64);
        assert_eq!(int_bin(IntBinOp::ShRUI, 64, -1, 64).unwrap(), 0);
        assert!(int_bin(IntBinOp::RemUI, 64, 1, 0).is_err());
        assert_eq!(int_cast(IntCastOp::ExtUI, 1, 64, 1), 1);
        assert_eq!(int_cast(IntCastOp::ExtUI, 32, 64, -1), u32::MAX as i64);
        assert_eq!(int_cast(IntCastOp::IndexCastUI, 32, 64, -1), u32::MAX as i64);
        assert_eq!(int_cast(IntCastOp::ExtSI, 32, 64, -1), -1);
        assert_eq!(int_cast(IntCastOp::TruncI, 64, 32, 1 << 32), 0);
        assert_eq!(int_to_float(true, 32, false, -1), u32::MAX as f64);
        assert_eq!(int_to_float(false, 32, false, -1), -1.0);
    }
}
