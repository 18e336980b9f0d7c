//! Reductions, named once: a [`Reduction`] knows its name in the source and on
//! `appy.reduce` (`sum`, `prod`, `max`, `min`), the `arith` op that combines two partial
//! values, its identity, the `memref.atomic_rmw` kind that accumulates into memory, and
//! the `gpu.all_reduce` operation that combines across a thread block — for a float or
//! an integer element type.

use crate::attrs::{AtomicKind, Scalar};
use crate::types::DType;
use serde::{Deserialize, Serialize};

/// A reduction operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Reduction {
    /// `+` (`np.sum`, `+=`, `-=`).
    Sum,
    /// `*` (`np.prod`, `*=`).
    Prod,
    /// `max` (NaN-propagating for floats, as NumPy's `np.max`).
    Max,
    /// `min` (NaN-propagating for floats).
    Min,
}

impl Reduction {
    /// Every reduction.
    pub const ALL: [Reduction; 4] = [Reduction::Sum, Reduction::Prod, Reduction::Max, Reduction::Min];

    /// Its name (`appy.reduce`'s `kind` attribute).
    pub fn name(self) -> &'static str {
        match self {
            Reduction::Sum => "sum",
            Reduction::Prod => "prod",
            Reduction::Max => "max",
            Reduction::Min => "min",
        }
    }

    /// The reduction named `name`.
    pub fn parse(name: &str) -> Option<Reduction> {
        Self::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The `arith` op combining two partial values of a float (`float`) or integer type.
    pub fn arith_op(self, float: bool) -> &'static str {
        match (self, float) {
            (Reduction::Sum, true) => "arith.addf",
            (Reduction::Sum, false) => "arith.addi",
            (Reduction::Prod, true) => "arith.mulf",
            (Reduction::Prod, false) => "arith.muli",
            (Reduction::Max, true) => "arith.maximumf",
            (Reduction::Max, false) => "arith.maxsi",
            (Reduction::Min, true) => "arith.minimumf",
            (Reduction::Min, false) => "arith.minsi",
        }
    }

    /// The reduction whose combiner is the `arith` op `name` (the op of an `scf.reduce`
    /// region), and whether it is the float one.
    pub fn of_arith_op(name: &str) -> Option<(Reduction, bool)> {
        Self::ALL
            .into_iter()
            .flat_map(|r| [(r, true), (r, false)])
            .find(|(r, f)| r.arith_op(*f) == name)
    }

    /// The identity over `dt`: 0, 1, -inf / the smallest integer, +inf / the largest.
    pub fn identity(self, dt: DType) -> Scalar {
        // The smallest and largest integer of the width (0 and all ones unsigned).
        let (lo, hi) = if dt.is_unsigned() {
            (0, -1)
        } else {
            (dt.signed_min(), !dt.signed_min())
        };
        match (self, dt.is_float()) {
            (Reduction::Sum, true) => Scalar::Float(0.0),
            (Reduction::Sum, false) => Scalar::Int(0),
            (Reduction::Prod, true) => Scalar::Float(1.0),
            (Reduction::Prod, false) => Scalar::Int(1),
            (Reduction::Max, true) => Scalar::Float(f64::NEG_INFINITY),
            (Reduction::Min, true) => Scalar::Float(f64::INFINITY),
            (Reduction::Max, false) => Scalar::Int(lo),
            (Reduction::Min, false) => Scalar::Int(hi),
        }
    }

    /// The `memref.atomic_rmw` kind that accumulates it into memory.
    pub fn atomic_kind(self, float: bool) -> AtomicKind {
        match (self, float) {
            (Reduction::Sum, true) => AtomicKind::Addf,
            (Reduction::Sum, false) => AtomicKind::Addi,
            (Reduction::Prod, true) => AtomicKind::Mulf,
            (Reduction::Prod, false) => AtomicKind::Muli,
            (Reduction::Max, true) => AtomicKind::Maximumf,
            (Reduction::Max, false) => AtomicKind::Maxs,
            (Reduction::Min, true) => AtomicKind::Minimumf,
            (Reduction::Min, false) => AtomicKind::Mins,
        }
    }

    /// The reduction a `memref.atomic_rmw` of kind `kind` accumulates, and whether it is
    /// the float one (`None` for kinds no reduction uses: `assign`, bitwise ones,
    /// unsigned and NaN-skipping ones).
    pub fn of_atomic_kind(kind: AtomicKind) -> Option<(Reduction, bool)> {
        Self::ALL
            .into_iter()
            .flat_map(|r| [(r, true), (r, false)])
            .find(|(r, f)| r.atomic_kind(*f) == kind)
    }

    /// The `gpu.all_reduce` operation (`#gpu<all_reduce_op KIND>`).
    pub fn all_reduce_kind(self, float: bool) -> &'static str {
        match (self, float) {
            (Reduction::Sum, _) => "add",
            (Reduction::Prod, _) => "mul",
            (Reduction::Max, true) => "maximumf",
            (Reduction::Max, false) => "maxsi",
            (Reduction::Min, true) => "minimumf",
            (Reduction::Min, false) => "minsi",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_vocabulary() {
        for r in Reduction::ALL {
            assert_eq!(Reduction::parse(r.name()), Some(r));
            for f in [true, false] {
                assert_eq!(Reduction::of_atomic_kind(r.atomic_kind(f)), Some((r, f)));
            }
            for f in [true, false] {
                assert_eq!(Reduction::of_arith_op(r.arith_op(f)), Some((r, f)));
                // The atomic kind applies the same arith op as the combiner.
                assert_eq!(r.atomic_kind(f).arith_op(), Some(r.arith_op(f)));
            }
        }
        assert_eq!(Reduction::Max.identity(DType::I32), Scalar::Int(i32::MIN as i64));
        assert_eq!(Reduction::Sum.atomic_kind(true) as i64, 0);
        assert_eq!(Reduction::Min.atomic_kind(false) as i64, 10);
    }
}
