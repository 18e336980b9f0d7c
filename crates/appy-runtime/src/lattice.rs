//! Strided index sets: the elements of a box that accesses with constant strides touch
//! (seed 002 §5.3, jit4GPU's CSLMADs). Along each dimension the set holds every
//! `step`-th index from the box's lower bound, at the offsets `phases` within each
//! period: `a[2*i]` is step 2, phase 0; `a[3*i]` and `a[3*i+1]` together are step 3,
//! phases 0 and 1 (an interleaved group, §5.3.2: the stride stays, the phases are the
//! distinct remainders of the bases). A product of such dimensions covers the
//! restricted multi-dimensional case (RCSLMAD, §5.3.3): each element once.
//!
//! The runtime moves only these elements: [`rows`] lists them as strided rows of
//! bytes, which a device packs into one contiguous transfer.

use crate::regions::IndexBox;

/// The touched indices of a box, per dimension (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lattice {
    /// The period along each dimension (1: every index).
    pub step: Vec<i64>,
    /// The offsets touched within a period, sorted, each in `0..step`.
    pub phases: Vec<Vec<i64>>,
}

/// `height` rows of `width` bytes, `pitch` bytes apart, from byte `offset` of an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rows {
    /// Byte offset of the first row.
    pub offset: usize,
    /// Bytes per row.
    pub width: usize,
    /// Bytes from one row's start to the next.
    pub pitch: usize,
    /// Number of rows.
    pub height: usize,
}

impl Rows {
    /// Bytes the rows hold.
    pub fn bytes(&self) -> usize {
        self.width * self.height
    }
}

/// The most phases a dimension keeps before it counts as every index.
const MAX_PHASES: usize = 8;

impl Lattice {
    /// Every index of a `rank`-dimensional box.
    pub fn dense(rank: usize) -> Lattice {
        Lattice {
            step: vec![1; rank],
            phases: vec![vec![0]; rank],
        }
    }

    /// Whether it holds every index of its box.
    pub fn is_dense(&self) -> bool {
        self.step.iter().all(|s| *s == 1)
    }

    /// The indices of dimension `d` from `lo` to `hi` (exclusive) the lattice holds,
    /// anchored at `lo`.
    pub fn count(&self, d: usize, lo: i64, hi: i64) -> i64 {
        self.phases[d].iter().map(|p| self.count_phase(d, *p, lo, hi)).sum()
    }

    /// The members of phase `p` of dimension `d` from `lo` to `hi` (exclusive).
    fn count_phase(&self, d: usize, p: i64, lo: i64, hi: i64) -> i64 {
        let s = self.step[d];
        if hi - lo > p { (hi - lo - p + s - 1) / s } else { 0 }
    }

    /// Number of elements of `bx` the lattice (anchored at `bx.lo`) holds.
    pub fn len(&self, bx: &IndexBox) -> usize {
        if bx.is_empty() {
            return 0;
        }
        (0..bx.lo.len()).map(|d| self.count(d, bx.lo[d], bx.hi[d]) as usize).product()
    }

    /// The union of `(a, la)` and `(b, lb)` as one strided set over the hull of the
    /// boxes: per dimension, equal steps keep the step with the phases of both
    /// (re-anchored at the hull's lower bound); different steps, or more than
    /// [`MAX_PHASES`] phases, make the dimension dense. It may hold more than the two.
    pub fn union(a: &IndexBox, la: &Lattice, b: &IndexBox, lb: &Lattice) -> (IndexBox, Lattice) {
        if a.is_empty() {
            return (b.clone(), lb.clone());
        }
        if b.is_empty() {
            return (a.clone(), la.clone());
        }
        let h = a.hull(b);
        let mut out = Lattice::dense(h.lo.len());
        for d in 0..h.lo.len() {
            let s = la.step[d];
            if s != lb.step[d] || s == 1 {
                continue;
            }
            let mut ph: Vec<i64> = la.phases[d]
                .iter()
                .map(|p| (a.lo[d] - h.lo[d] + p).rem_euclid(s))
                .chain(lb.phases[d].iter().map(|p| (b.lo[d] - h.lo[d] + p).rem_euclid(s)))
                .collect();
            ph.sort_unstable();
            ph.dedup();
            if ph.len() < s as usize && ph.len() <= MAX_PHASES {
                out.step[d] = s;
                out.phases[d] = ph;
            }
        }
        (h, out)
    }

    /// Whether every element of `(b, lb)` is an element of `(a, self)`.
    pub fn covers(&self, a: &IndexBox, b: &IndexBox, lb: &Lattice) -> bool {
        if b.is_empty() {
            return true;
        }
        if !a.contains(b) {
            return false;
        }
        (0..a.lo.len()).all(|d| {
            let s = self.step[d];
            s == 1
                || lb.step[d] == s
                    && lb.phases[d]
                        .iter()
                        .all(|p| self.phases[d].contains(&(b.lo[d] - a.lo[d] + p).rem_euclid(s)))
        })
    }

    /// Whether index `idx` of `bx` (anchoring the lattice) is an element.
    pub fn holds(&self, bx: &IndexBox, idx: &[i64]) -> bool {
        (0..idx.len())
            .all(|d| idx[d] >= bx.lo[d] && idx[d] < bx.hi[d] && self.phases[d].contains(&(idx[d] - bx.lo[d]).rem_euclid(self.step[d])))
    }
}

/// The elements of `bx` that `lat` holds, in a C-ordered array of `shape` with
/// elements of `es` bytes, as strided rows of bytes (each element once): the innermost
/// dense run (or one element, where the last dimension is strided) is a row, and the
/// members of the next dimension out, or of the last dimension's phase, are its rows.
pub fn rows(bx: &IndexBox, lat: &Lattice, shape: &[usize], es: usize) -> Vec<Rows> {
    let r = shape.len();
    if r == 0 || bx.is_empty() || lat.len(bx) == 0 {
        return vec![];
    }
    let stride: Vec<usize> = (0..r).map(|d| shape[d + 1..].iter().product()).collect();
    // The members of dimension d, as (first index, count) per phase.
    let members = |d: usize| -> Vec<(i64, i64)> {
        lat.phases[d]
            .iter()
            .map(|p| (bx.lo[d] + p, lat.count_phase(d, *p, bx.lo[d], bx.hi[d])))
            .filter(|(_, c)| *c > 0)
            .collect()
    };
    // The row's dimension (its rows step along it) and the width of a row.
    let (row_dim, width_elems, outer) = if lat.step[r - 1] == 1 {
        let len = (bx.hi[r - 1] - bx.lo[r - 1]) as usize;
        if r == 1 {
            return vec![Rows {
                offset: bx.lo[0] as usize * es,
                width: len * es,
                pitch: len * es,
                height: 1,
            }];
        }
        (r - 2, len, r - 2)
    } else {
        (r - 1, 1, r - 1)
    };
    let mut out = vec![];
    // Every combination of the dimensions outside `row_dim`'s members.
    let mut firsts: Vec<Vec<i64>> = vec![vec![]];
    for d in 0..outer {
        let mut next = vec![];
        for f in &firsts {
            for (first, count) in members(d) {
                for k in 0..count {
                    let mut g = f.clone();
                    g.push(first + k * lat.step[d]);
                    next.push(g);
                }
            }
        }
        firsts = next;
    }
    // Rows of dense runs start at the run's first index of the last dimension.
    let last_lo = if lat.step[r - 1] == 1 { bx.lo[r - 1] as usize } else { 0 };
    for f in &firsts {
        let base: usize = f.iter().enumerate().map(|(d, i)| *i as usize * stride[d]).sum();
        for (first, count) in members(row_dim) {
            let off = base + first as usize * stride[row_dim] + last_lo;
            out.push(Rows {
                offset: off * es,
                width: width_elems * es,
                pitch: lat.step[row_dim] as usize * stride[row_dim] * es,
                height: count as usize,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bx(lo: &[i64], hi: &[i64]) -> IndexBox {
        IndexBox {
            lo: lo.to_vec(),
            hi: hi.to_vec(),
        }
    }

    /// The flat indices `rows` covers, sorted, each once.
    fn flat(rs: &[Rows], es: usize) -> Vec<usize> {
        let mut v = vec![];
        for r in rs {
            for h in 0..r.height {
                for w in 0..r.width / es {
                    v.push((r.offset + h * r.pitch) / es + w);
                }
            }
        }
        let n = v.len();
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), n, "an element in two rows");
        v
    }

    /// The flat indices of the elements the lattice holds, by brute force.
    fn brute(b: &IndexBox, l: &Lattice, shape: &[usize]) -> Vec<usize> {
        let n: usize = shape.iter().product();
        (0..n).filter(|f| l.holds(b, &IndexBox::point(shape, *f).lo)).collect()
    }

    #[test]
    fn one_dimensional_and_interleaved() {
        // a[2*i], i < 5, in 12 elements.
        let b = bx(&[0], &[9]);
        let l = Lattice {
            step: vec![2],
            phases: vec![vec![0]],
        };
        assert_eq!(l.len(&b), 5);
        assert_eq!(flat(&rows(&b, &l, &[12], 8), 8), vec![0, 2, 4, 6, 8]);
        // a[3*i + 2] and a[3*i + 3]: union re-anchors the phases.
        let (b1, l1) = (
            bx(&[2], &[15]),
            Lattice {
                step: vec![3],
                phases: vec![vec![0]],
            },
        );
        let (b2, l2) = (
            bx(&[3], &[16]),
            Lattice {
                step: vec![3],
                phases: vec![vec![0]],
            },
        );
        let (h, u) = Lattice::union(&b1, &l1, &b2, &l2);
        assert_eq!((h.lo[0], h.hi[0]), (2, 16));
        assert_eq!(u.phases[0], vec![0, 1]);
        assert_eq!(u.len(&h), 10);
        assert_eq!(flat(&rows(&h, &u, &[20], 4), 4), brute(&h, &u, &[20]));
        assert!(u.covers(&h, &b1, &l1) && u.covers(&h, &b2, &l2));
        assert!(!l1.covers(&b1, &h, &u));
    }

    #[test]
    fn two_dimensional() {
        // Every other row of a 7x5 array, columns 1..4.
        let b = bx(&[1, 1], &[7, 4]);
        let l = Lattice {
            step: vec![2, 1],
            phases: vec![vec![0], vec![0]],
        };
        assert_eq!(l.len(&b), 9);
        let rs = rows(&b, &l, &[7, 5], 8);
        assert_eq!(rs.len(), 1);
        assert_eq!(flat(&rs, 8), brute(&b, &l, &[7, 5]));
        // Every third column of rows 0..3.
        let b = bx(&[0, 1], &[3, 11]);
        let l = Lattice {
            step: vec![1, 3],
            phases: vec![vec![0], vec![0, 2]],
        };
        assert_eq!(flat(&rows(&b, &l, &[4, 12], 4), 4), brute(&b, &l, &[4, 12]));
        assert_eq!(l.len(&b), 3 * 7);
        // Three dimensions, strided in the middle.
        let b = bx(&[0, 0, 2], &[2, 6, 5]);
        let l = Lattice {
            step: vec![1, 2, 1],
            phases: vec![vec![0], vec![1], vec![0]],
        };
        assert_eq!(flat(&rows(&b, &l, &[2, 6, 7], 2), 2), brute(&b, &l, &[2, 6, 7]));
    }
}
