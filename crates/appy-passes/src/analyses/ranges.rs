//! Integer ranges of a kernel's index values: constants, thread ids (bounded by the
//! kernel's `known_block_size`), loop variables of loops with known bounds, and sums,
//! differences, products and casts of them. What a pass needs to see that a bound
//! check is true for every thread of a block (`appy-gpu-one-strip`). Only ranges within
//! 32 bits are kept, so that no narrower op can have wrapped.

use appy_ir::attrs::{CmpIPredicate, int_array};
use appy_ir::ir::{Op, Value};
use std::collections::HashMap;

/// The inclusive range `(lo, hi)` of each index or integer value a walk could bound.
#[derive(Default, Debug)]
pub struct Ranges {
    map: HashMap<Value, (i64, i64)>,
    threads: [i64; 3],
}

impl Ranges {
    /// Ranges over `kernel` (a `gpu.func`), its `known_block_size` bounding the thread
    /// ids (unknown without it).
    pub fn of_kernel(kernel: &Op) -> Ranges {
        let dims = kernel.attr("known_block_size").map(int_array).unwrap_or_default();
        let mut r = Ranges {
            map: HashMap::new(),
            threads: [0; 3],
        };
        for (k, d) in dims.iter().take(3).enumerate() {
            r.threads[k] = *d;
        }
        r
    }

    /// The range of `v`, if known.
    pub fn get(&self, v: Value) -> Option<(i64, i64)> {
        self.map.get(&v).copied()
    }

    /// The constant `v` is, if its range is one value.
    pub fn constant(&self, v: Value) -> Option<i64> {
        self.get(v).filter(|(l, h)| l == h).map(|(l, _)| l)
    }

    /// Records that `v` ranges over `lo..=hi`.
    pub fn set(&mut self, v: Value, lo: i64, hi: i64) {
        self.map.insert(v, (lo, hi));
    }

    /// Adds what `ops` (and the regions inside them, in order) define.
    pub fn walk(&mut self, ops: &[Op]) {
        for o in ops {
            self.op(o);
            for r in &o.regions {
                for b in &r.blocks {
                    self.walk(&b.ops);
                }
            }
        }
    }

    fn op(&mut self, o: &Op) {
        if o.name == "scf.for" {
            let c = |k: usize| o.operands.get(k).and_then(|v| self.constant(*v));
            let iv = o.regions.first().and_then(|r| r.blocks.first()).and_then(|b| b.args.first());
            if let (Some(lb), Some(ub), Some(st), Some(iv)) = (c(0), c(1), c(2), iv)
                && ub > lb
                && st > 0
            {
                let last = lb + (ub - lb - 1) / st * st;
                self.set(*iv, lb, last);
            }
            return;
        }
        let (Some(&res), a, b) = (
            o.results.first(),
            o.operands.first().and_then(|v| self.get(*v)),
            o.operands.get(1).and_then(|v| self.get(*v)),
        ) else {
            return;
        };
        let r = match o.name.as_str() {
            // Booleans (`true` is -1 to signed ops) are left out.
            "arith.constant" => o
                .attr("value")
                .filter(|v| !v.starts_with("true") && !v.starts_with("false"))
                .and_then(|v| appy_ir::attrs::parse_constant(v, ""))
                .and_then(|c| match c {
                    appy_ir::attrs::Scalar::Int(c) => Some((c, c)),
                    _ => None,
                }),
            "gpu.thread_id" => {
                let d = match o.attr("dimension").unwrap_or("") {
                    s if s.contains('y') => 1,
                    s if s.contains('z') => 2,
                    _ => 0,
                };
                (self.threads[d] > 0).then(|| (0, self.threads[d] - 1))
            }
            "arith.index_cast" | "arith.extsi" => a,
            "arith.index_castui" => a.filter(|(l, _)| *l >= 0),
            "arith.addi" => a.zip(b).and_then(|(a, b)| Some((a.0.checked_add(b.0)?, a.1.checked_add(b.1)?))),
            "arith.subi" => a.zip(b).and_then(|(a, b)| Some((a.0.checked_sub(b.1)?, a.1.checked_sub(b.0)?))),
            "arith.muli" => a.zip(b).and_then(|(a, b)| {
                let p = [
                    a.0.checked_mul(b.0)?,
                    a.0.checked_mul(b.1)?,
                    a.1.checked_mul(b.0)?,
                    a.1.checked_mul(b.1)?,
                ];
                Some((*p.iter().min()?, *p.iter().max()?))
            }),
            _ => None,
        };
        // Ranges beyond 32 bits are dropped: an `i32` op computing them could wrap,
        // which the 64-bit arithmetic here would not see.
        if let Some((lo, hi)) = r.filter(|(l, h)| *l >= i32::MIN as i64 && *h <= i32::MAX as i64) {
            self.set(res, lo, hi);
        }
    }

    /// What an `arith.cmpi` computes when its operands' ranges decide it.
    pub fn decide(&self, o: &Op) -> Option<bool> {
        if o.name != "arith.cmpi" {
            return None;
        }
        let p = CmpIPredicate::parse(o.attr("predicate")?)?;
        let (a, b) = (self.get(*o.operands.first()?)?, self.get(*o.operands.get(1)?)?);
        let unsigned = matches!(p, CmpIPredicate::Ult | CmpIPredicate::Ule | CmpIPredicate::Ugt | CmpIPredicate::Uge);
        if unsigned && (a.0 < 0 || b.0 < 0) {
            return None;
        }
        use CmpIPredicate::*;
        match p {
            Slt | Ult if a.1 < b.0 => Some(true),
            Slt | Ult if a.0 >= b.1 => Some(false),
            Sle | Ule if a.1 <= b.0 => Some(true),
            Sle | Ule if a.0 > b.1 => Some(false),
            Sgt | Ugt if a.0 > b.1 => Some(true),
            Sgt | Ugt if a.1 <= b.0 => Some(false),
            Sge | Uge if a.0 >= b.1 => Some(true),
            Sge | Uge if a.1 < b.0 => Some(false),
            Eq if a.0 == a.1 && b.0 == b.1 => Some(a.0 == b.0),
            Eq | Ne if a.1 < b.0 || b.1 < a.0 => Some(p == Ne),
            Ne if a.0 == a.1 && b.0 == b.1 => Some(a.0 != b.0),
            _ => None,
        }
    }
}
