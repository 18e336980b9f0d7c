//! The 16-bit float formats, float16 (IEEE binary16: 5 exponent bits, 10 fraction bits)
//! and bfloat16 (8 exponent bits, 7 fraction bits), converted to and from `f64` with
//! round-to-nearest-even: what the host interpreter, the runtime's scalar arguments and
//! the tests use (Rust has no stable 16-bit float type).

/// A 16-bit float format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Half {
    /// IEEE binary16 (`np.float16`, `torch.float16`).
    F16,
    /// bfloat16 (`torch.bfloat16`, `jnp.bfloat16`): the top half of a float32.
    BF16,
}

impl Half {
    /// Exponent and fraction widths.
    fn widths(self) -> (i32, i32) {
        match self {
            Half::F16 => (5, 10),
            Half::BF16 => (8, 7),
        }
    }

    /// The bits of `x` rounded to this format (to nearest, ties to even; overflow to
    /// infinity; NaN stays a quiet NaN of the same sign).
    pub fn from_f64(self, x: f64) -> u16 {
        let (ebits, mbits) = self.widths();
        let bias = (1 << (ebits - 1)) - 1;
        let sign: u16 = if x.is_sign_negative() { 1 << 15 } else { 0 };
        let inf: u16 = (((1 << ebits) - 1) << mbits) as u16;
        if x.is_nan() {
            return sign | inf | (1 << (mbits - 1));
        }
        let a = x.abs();
        if a == 0.0 {
            return sign;
        }
        let min_normal_exp = 1 - bias;
        // The exponent of `a` (a is finite and non-zero): 2^e <= a < 2^(e+1).
        let e = exponent(a);
        if e < min_normal_exp {
            // Subnormal: a multiple of 2^(min_normal_exp - mbits), rounded; a carry into
            // the exponent field gives the smallest normal number, which is right.
            let m = (a * pow2(mbits - min_normal_exp)).round_ties_even();
            return sign | m as u16;
        }
        let frac = (a * pow2(-e) - 1.0) * pow2(mbits);
        let mut m = frac.round_ties_even() as i64;
        let mut e = e;
        if m == 1 << mbits {
            m = 0;
            e += 1;
        }
        if e > bias {
            return sign | inf;
        }
        sign | (((e + bias) as u16) << mbits) | m as u16
    }

    /// The value of the bits `b` of this format (exact).
    pub fn to_f64(self, b: u16) -> f64 {
        let (ebits, mbits) = self.widths();
        let bias = (1 << (ebits - 1)) - 1;
        let sign = if b & (1 << 15) != 0 { -1.0 } else { 1.0 };
        let e = ((b >> mbits) & ((1 << ebits) - 1)) as i32;
        let m = (b & ((1 << mbits) - 1)) as f64;
        if e == (1 << ebits) - 1 {
            return if m == 0.0 { sign * f64::INFINITY } else { f64::NAN };
        }
        if e == 0 {
            return sign * m * pow2(1 - bias - mbits);
        }
        sign * (1.0 + m * pow2(-mbits)) * pow2(e - bias)
    }

    /// `x` rounded to this format, as an `f64`.
    pub fn round(self, x: f64) -> f64 {
        self.to_f64(self.from_f64(x))
    }
}

/// `2^k` (exact for the exponents used here).
fn pow2(k: i32) -> f64 {
    2f64.powi(k)
}

/// The binary exponent of a finite non-zero `a`: `2^e <= |a| < 2^(e+1)`.
fn exponent(a: f64) -> i32 {
    let bits = a.abs().to_bits();
    let raw = ((bits >> 52) & 0x7ff) as i32;
    if raw == 0 {
        // An f64 subnormal: far below every 16-bit float's range.
        -1075
    } else {
        raw - 1023
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float16_values() {
        let h = Half::F16;
        assert_eq!(h.from_f64(1.0), 0x3c00);
        assert_eq!(h.from_f64(-2.0), 0xc000);
        assert_eq!(h.from_f64(65504.0), 0x7bff);
        assert_eq!(h.from_f64(65519.0), 0x7bff);
        assert_eq!(h.from_f64(65520.0), 0x7c00);
        assert_eq!(h.from_f64(6.103515625e-05), 0x0400);
        assert_eq!(h.from_f64(5.960464477539063e-08), 0x0001);
        assert_eq!(h.from_f64(2.9802322387695312e-08), 0x0000);
        assert_eq!(h.from_f64(2.0f64.powi(-25) * 1.0000001), 0x0001);
        assert_eq!(h.from_f64(1.0 + 1.0 / 2048.0), 0x3c00);
        assert_eq!(h.from_f64(1.0 + 3.0 / 2048.0), 0x3c02);
        assert_eq!(h.from_f64(0.1), 0x2e66);
        assert!(h.to_f64(h.from_f64(f64::NAN)).is_nan());
        assert_eq!(h.to_f64(0x7c00), f64::INFINITY);
        assert_eq!(h.to_f64(0x2e66), 0.0999755859375);
        // Every float16 survives the round trip.
        for b in 0..=u16::MAX {
            let v = h.to_f64(b);
            if !v.is_nan() {
                assert_eq!(h.from_f64(v), b, "{b:#x}");
            }
        }
    }

    #[test]
    fn bfloat16_values() {
        let h = Half::BF16;
        assert_eq!(h.from_f64(1.0), 0x3f80);
        assert_eq!(h.from_f64(0.1), 0x3dcd);
        assert_eq!(h.from_f64(3.4e38), 0x7f80);
        // bfloat16 is float32's top half: rounding agrees with float32's bits.
        for x in [1.0f32, 3.25159, -2.5e-20, 1.0e-39, 123456.7] {
            let b = x.to_bits();
            let round = (b + 0x7fff + ((b >> 16) & 1)) >> 16;
            assert_eq!(h.from_f64(x as f64) as u32, round, "{x}");
        }
        for b in 0..=u16::MAX {
            let v = h.to_f64(b);
            if !v.is_nan() {
                assert_eq!(h.from_f64(v), b, "{b:#x}");
                assert_eq!(v as f32, f32::from_bits((b as u32) << 16));
            }
        }
    }
}
