//! Affine forms and the integer linear algebra of dependence tests: the one affine
//! vocabulary of the project, shared by the frontend's race checker (forms over source
//! names), `appy-cpu-fuse` (over SSA values) and `appy-solve-library` (over its symbols).
//!
//! An [`Affine`] is `c + Σ coeff·key` with no zero coefficient, over any ordered key
//! type. Arithmetic is checked: an overflow gives `None`, which every user reads as "not
//! affine" (the conservative answer), never as a wrapped coefficient.
//!
//! ```
//! use appy_ir::affine::Affine;
//! let i = Affine::var("i");
//! let f = i.scale(2).and_then(|f| f.checked_add(&Affine::constant(3))).unwrap(); // 2i + 3
//! assert_eq!((f.coeff(&"i"), f.c, f.as_const()), (2, 3, None));
//! assert_eq!(f.checked_sub(&Affine::var("i").scale(2).unwrap()).unwrap().as_const(), Some(3));
//! ```

use std::borrow::Borrow;
use std::collections::BTreeMap;

/// `c + Σ coeff·key` (no zero coefficients).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Affine<K: Ord> {
    /// The terms: key → coefficient, none zero.
    pub terms: BTreeMap<K, i64>,
    /// The constant.
    pub c: i64,
}

impl<K: Ord> Default for Affine<K> {
    fn default() -> Self {
        Affine {
            terms: BTreeMap::new(),
            c: 0,
        }
    }
}

impl<K: Ord + Clone> Affine<K> {
    /// The constant `c`.
    pub fn constant(c: i64) -> Self {
        Affine { terms: BTreeMap::new(), c }
    }
    /// The key `k` (coefficient 1).
    pub fn var(k: K) -> Self {
        Affine {
            terms: BTreeMap::from([(k, 1)]),
            c: 0,
        }
    }
    /// `self + o`; `None` on an overflow.
    pub fn checked_add(mut self, o: &Affine<K>) -> Option<Self> {
        self.c = self.c.checked_add(o.c)?;
        for (k, v) in &o.terms {
            let e = self.terms.entry(k.clone()).or_insert(0);
            *e = e.checked_add(*v)?;
        }
        self.terms.retain(|_, v| *v != 0);
        Some(self)
    }
    /// `self - o`; `None` on an overflow.
    pub fn checked_sub(self, o: &Affine<K>) -> Option<Self> {
        self.checked_add(&o.clone().scale(-1)?)
    }
    /// `s · self`; `None` on an overflow.
    pub fn scale(mut self, s: i64) -> Option<Self> {
        self.c = self.c.checked_mul(s)?;
        for v in self.terms.values_mut() {
            *v = v.checked_mul(s)?;
        }
        self.terms.retain(|_, v| *v != 0);
        Some(self)
    }
    /// `self · o` when one of them is a constant (the product is affine); else `None`.
    pub fn checked_mul(self, o: Affine<K>) -> Option<Self> {
        match (self.as_const(), o.as_const()) {
            (Some(c), _) => o.scale(c),
            (_, Some(c)) => self.scale(c),
            _ => None,
        }
    }
    /// The value when there is no term.
    pub fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.c)
    }
    /// The coefficient of `k` (0 when absent).
    pub fn coeff<Q: Ord + ?Sized>(&self, k: &Q) -> i64
    where
        K: Borrow<Q>,
    {
        self.terms.get(k).copied().unwrap_or(0)
    }
    /// The form without `k`'s term.
    pub fn without<Q: Ord + ?Sized>(mut self, k: &Q) -> Self
    where
        K: Borrow<Q>,
    {
        self.terms.remove(k);
        self
    }
}

/// The greatest common divisor of `|a|` and `|b|` (0 for two zeros).
pub fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    i128::try_from(a).unwrap_or(0)
}

/// The integer solutions of the linear equations `rows` (`Σ_c row[c]·x[c] = rhs`) in
/// `n` unknowns: one solution and a basis of the differences of two solutions. `None`
/// when there is none (or on an overflow). This is the exact dependence test: two
/// accesses `f(i) = g(i')` conflict only if such equations have integer solutions.
///
/// Unimodular column operations (recorded in `u`) reduce the matrix to a lower echelon
/// form `h = m·u` (each row's first non-zero entry, its pivot, the gcd of the row's
/// remaining entries); `h·y = rhs` is solved by substitution, each pivot dividing
/// exactly, and `x = u·y` with the columns of `u` beyond the pivots free.
#[allow(clippy::type_complexity)]
pub fn solve(rows: &[(Vec<i128>, i128)], n: usize) -> Option<(Vec<i128>, Vec<Vec<i128>>)> {
    let mut h: Vec<Vec<i128>> = rows.iter().map(|(r, _)| r.clone()).collect();
    let mut u: Vec<Vec<i128>> = (0..n).map(|i| (0..n).map(|j| i128::from(i == j)).collect()).collect();
    let mut pivots = vec![None; h.len()];
    let mut col = 0;
    for r in 0..h.len() {
        while col < n {
            let Some(c) = (col..n).filter(|&c| h[r][c] != 0).min_by_key(|&c| h[r][c].unsigned_abs()) else {
                break;
            };
            for m in h.iter_mut().chain(u.iter_mut()) {
                m.swap(c, col);
            }
            let mut reduced = true;
            for c in col + 1..n {
                let q = h[r][c] / h[r][col];
                if q != 0 {
                    for m in h.iter_mut().chain(u.iter_mut()) {
                        m[c] = m[c].checked_sub(q.checked_mul(m[col])?)?;
                    }
                }
                reduced &= h[r][c] == 0;
            }
            if reduced {
                pivots[r] = Some(col);
                col += 1;
                break;
            }
        }
    }
    let mut y = vec![0i128; n];
    for (r, (_, rhs)) in rows.iter().enumerate() {
        let mut s = *rhs;
        for c in (0..n).filter(|&c| pivots[r] != Some(c)) {
            s = s.checked_sub(h[r][c].checked_mul(y[c])?)?;
        }
        match pivots[r] {
            Some(c) if s.checked_rem(h[r][c])? == 0 => y[c] = s / h[r][c],
            None if s == 0 => {}
            _ => return None,
        }
    }
    let mut x = vec![0i128; n];
    for (i, xi) in x.iter_mut().enumerate() {
        for (c, yc) in y.iter().enumerate() {
            *xi = xi.checked_add(u[i][c].checked_mul(*yc)?)?;
        }
    }
    let kernel = (col..n).map(|c| (0..n).map(|i| u[i][c]).collect()).collect();
    Some((x, kernel))
}

/// The non-zero member of `e0 + h·Z` closest to 0 (the positive one of two).
pub fn smallest_nonzero(e0: i128, h: i128) -> Option<i128> {
    if h == 0 {
        return (e0 != 0).then_some(e0);
    }
    let r = e0.rem_euclid(h);
    Some(if r == 0 {
        h
    } else if r <= h - r {
        r
    } else {
        r - h
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_drops_zero_terms_and_refuses_overflow() {
        let i = Affine::var('i');
        let j = Affine::var('j');
        let f = i.clone().checked_add(&j).unwrap().checked_sub(&i).unwrap();
        assert_eq!(f, j);
        assert_eq!(i.clone().checked_sub(&i).unwrap(), Affine::constant(0));
        assert_eq!(Affine::<char>::constant(i64::MAX).checked_add(&Affine::constant(1)), None);
        assert_eq!(Affine::var('i').scale(i64::MIN).and_then(|f| f.scale(-1)), None);
        assert_eq!(i.clone().checked_mul(j.clone()), None);
        assert_eq!(Affine::constant(3).checked_mul(i.clone()).unwrap().coeff(&'i'), 3);
        assert_eq!(
            i.clone().checked_add(&Affine::constant(4)).unwrap().without(&'i').as_const(),
            Some(4)
        );
    }

    /// Checks `solve` against brute force over small boxes: every solution it reports
    /// (one plus combinations of the basis) satisfies the equations, and it reports
    /// `None` exactly when brute force finds no solution in the box (for systems whose
    /// solutions, when they exist, reach the box).
    #[test]
    fn solve_agrees_with_brute_force() {
        let systems: Vec<Vec<(Vec<i128>, i128)>> = vec![
            vec![(vec![2, -2], 1)],                  // 2i - 2j = 1: none
            vec![(vec![2, -2], 4)],                  // i - j = 2
            vec![(vec![3, 6], 9)],                   // i + 2j = 3
            vec![(vec![1, 1], 3), (vec![1, -1], 1)], // i = 2, j = 1
            vec![(vec![4, 6], 5)],                   // gcd 2 does not divide 5
            vec![(vec![0, 0], 0)],
            vec![(vec![0, 0], 1)],
        ];
        for rows in systems {
            let holds = |x: &[i128]| {
                rows.iter()
                    .all(|(r, rhs)| r.iter().zip(x).map(|(a, b)| a * b).sum::<i128>() == *rhs)
            };
            let brute = (-8..=8).flat_map(|a| (-8..=8).map(move |b| [a, b])).any(|x| holds(&x));
            match solve(&rows, 2) {
                None => assert!(!brute, "{rows:?}"),
                Some((x, basis)) => {
                    assert!(brute, "{rows:?}");
                    assert!(holds(&x), "{rows:?}: {x:?}");
                    for k in -2..=2 {
                        let y: Vec<i128> = (0..2).map(|i| x[i] + basis.iter().map(|b| k * b[i]).sum::<i128>()).collect();
                        assert!(holds(&y), "{rows:?}: {y:?}");
                    }
                }
            }
        }
        assert_eq!(gcd(-12, 18), 6);
        assert_eq!(smallest_nonzero(5, 3), Some(-1));
        assert_eq!(smallest_nonzero(0, 4), Some(4));
        assert_eq!(smallest_nonzero(0, 0), None);
    }
}
