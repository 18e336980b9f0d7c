//! The float ops of host code (the GPU runner executes the host program's scalar code):
//! float64 computations, rounded to float32 for float32 results by the caller.

use appy_ir::host::{FloatBinOp, FloatClassOp, FloatUnOp};

unsafe extern "C" {
    // The C library's functions that Rust's standard library does not have.
    fn erf(x: f64) -> f64;
    fn erfc(x: f64) -> f64;
}

/// A unary float op.
pub fn unary(op: FloatUnOp, x: f64) -> f64 {
    use FloatUnOp::*;
    match op {
        NegF => -x,
        Exp => x.exp(),
        Exp2 => x.exp2(),
        ExpM1 => x.exp_m1(),
        Log => x.ln(),
        Log2 => x.log2(),
        Log10 => x.log10(),
        Log1p => x.ln_1p(),
        Sqrt => x.sqrt(),
        Rsqrt => 1.0 / x.sqrt(),
        Cbrt => x.cbrt(),
        Sin => x.sin(),
        Cos => x.cos(),
        Tan => x.tan(),
        Asin => x.asin(),
        Acos => x.acos(),
        Atan => x.atan(),
        Sinh => x.sinh(),
        Cosh => x.cosh(),
        Tanh => x.tanh(),
        Asinh => x.asinh(),
        Acosh => x.acosh(),
        Atanh => x.atanh(),
        Erf => unsafe { erf(x) },
        Erfc => unsafe { erfc(x) },
        AbsF => x.abs(),
        Floor => x.floor(),
        Ceil => x.ceil(),
        Trunc => x.trunc(),
        Round => x.round(),
        RoundEven => x.round_ties_even(),
    }
}

/// A binary float op.
pub fn binary(op: FloatBinOp, a: f64, b: f64) -> f64 {
    use FloatBinOp::*;
    match op {
        AddF => a + b,
        SubF => a - b,
        MulF => a * b,
        DivF => a / b,
        RemF => a % b,
        MaximumF => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.max(b)
            }
        }
        MinimumF => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.min(b)
            }
        }
        MaxNumF => a.max(b),
        MinNumF => a.min(b),
        PowF => a.powf(b),
        Atan2 => a.atan2(b),
        CopySign => a.copysign(b),
    }
}

/// `math.isnan/isinf/isfinite`.
pub fn predicate(op: FloatClassOp, x: f64) -> bool {
    match op {
        FloatClassOp::IsNan => x.is_nan(),
        FloatClassOp::IsInf => x.is_infinite(),
        FloatClassOp::IsFinite => x.is_finite(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions() {
        assert!((unary(FloatUnOp::Erf, 0.5) - 0.520_499_877_813_046_5).abs() < 1e-15);
        assert!((unary(FloatUnOp::Erfc, 0.5) - 0.479_500_122_186_953_5).abs() < 1e-15);
        assert_eq!(unary(FloatUnOp::RoundEven, 2.5), 2.0);
        assert_eq!(binary(FloatBinOp::CopySign, 2.0, -0.0), -2.0);
        assert!(binary(FloatBinOp::MaximumF, f64::NAN, 1.0).is_nan());
        assert_eq!(binary(FloatBinOp::MaxNumF, f64::NAN, 1.0), 1.0);
        assert!(predicate(FloatClassOp::IsInf, f64::NEG_INFINITY));
    }
}
