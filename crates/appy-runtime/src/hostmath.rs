//! The `math` dialect's element-wise functions on the host (the GPU runner interprets
//! the host function's scalar code): float64 computations, rounded to float32 for
//! float32 results by the caller.

unsafe extern "C" {
    // The C library's functions that Rust's standard library does not have.
    fn erf(x: f64) -> f64;
    fn erfc(x: f64) -> f64;
}

/// `name(x)` for a unary `math` op (and `arith.negf`), or `None` if `name` is not one.
pub fn unary(name: &str, x: f64) -> Option<f64> {
    Some(match name {
        "arith.negf" => -x,
        "math.exp" => x.exp(),
        "math.exp2" => x.exp2(),
        "math.expm1" => x.exp_m1(),
        "math.log" => x.ln(),
        "math.log2" => x.log2(),
        "math.log10" => x.log10(),
        "math.log1p" => x.ln_1p(),
        "math.sqrt" => x.sqrt(),
        "math.rsqrt" => 1.0 / x.sqrt(),
        "math.cbrt" => x.cbrt(),
        "math.sin" => x.sin(),
        "math.cos" => x.cos(),
        "math.tan" => x.tan(),
        "math.asin" => x.asin(),
        "math.acos" => x.acos(),
        "math.atan" => x.atan(),
        "math.sinh" => x.sinh(),
        "math.cosh" => x.cosh(),
        "math.tanh" => x.tanh(),
        "math.asinh" => x.asinh(),
        "math.acosh" => x.acosh(),
        "math.atanh" => x.atanh(),
        "math.erf" => unsafe { erf(x) },
        "math.erfc" => unsafe { erfc(x) },
        "math.absf" => x.abs(),
        "math.floor" => x.floor(),
        "math.ceil" => x.ceil(),
        "math.trunc" => x.trunc(),
        "math.round" => x.round(),
        "math.roundeven" => x.round_ties_even(),
        _ => return None,
    })
}

/// `name(a, b)` for a binary float op, or `None` if `name` is not one.
pub fn binary(name: &str, a: f64, b: f64) -> Option<f64> {
    Some(match name {
        "arith.addf" => a + b,
        "arith.subf" => a - b,
        "arith.mulf" => a * b,
        "arith.divf" => a / b,
        "arith.remf" => a % b,
        "arith.maximumf" => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.max(b)
            }
        }
        "arith.minimumf" => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.min(b)
            }
        }
        "arith.maxnumf" => a.max(b),
        "arith.minnumf" => a.min(b),
        "math.powf" => a.powf(b),
        "math.atan2" => a.atan2(b),
        "math.copysign" => a.copysign(b),
        _ => return None,
    })
}

/// `math.isnan/isinf/isfinite`, or `None` if `name` is not one.
pub fn predicate(name: &str, x: f64) -> Option<bool> {
    Some(match name {
        "math.isnan" => x.is_nan(),
        "math.isinf" => x.is_infinite(),
        "math.isfinite" => x.is_finite(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions() {
        assert!((unary("math.erf", 0.5).unwrap() - 0.520_499_877_813_046_5).abs() < 1e-15);
        assert!((unary("math.erfc", 0.5).unwrap() - 0.479_500_122_186_953_5).abs() < 1e-15);
        assert_eq!(unary("math.roundeven", 2.5), Some(2.0));
        assert_eq!(binary("math.copysign", 2.0, -0.0), Some(-2.0));
        assert_eq!(predicate("math.isinf", f64::NEG_INFINITY), Some(true));
        assert_eq!(unary("math.nothing", 1.0), None);
    }
}
