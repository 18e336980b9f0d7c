//! Which parts of its array arguments a kernel launch reads and writes (seed 002 §5,
//! restricted to boxes: a range of indices per dimension).
//!
//! The analysis runs when a kernel is launched, on the kernel's IR (`gpu.func`, kept in
//! the bundle) with the launch's actual scalar arguments and grid: every index value is
//! evaluated as an interval (block and thread ids range over the grid, loop variables
//! over their bounds), and each `memref.load`/`store`/`atomic_rmw` on an array parameter
//! contributes the box of its index intervals, clamped to the array's shape. A kernel
//! reading one row of a matrix reads one row's box; anything the analysis cannot bound
//! counts as the whole dimension. The runtime transfers only these boxes.

use appy_ir::ir::{Module, Op, Value};
use std::collections::HashMap;

/// A box of indices: `lo[d] <= i[d] < hi[d]` in every dimension `d`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexBox {
    /// Inclusive lower bounds.
    pub lo: Vec<i64>,
    /// Exclusive upper bounds.
    pub hi: Vec<i64>,
}

impl IndexBox {
    /// The whole array of `shape`.
    pub fn whole(shape: &[usize]) -> Self {
        IndexBox {
            lo: vec![0; shape.len()],
            hi: shape.iter().map(|d| *d as i64).collect(),
        }
    }
    /// Whether it holds no index.
    pub fn is_empty(&self) -> bool {
        self.lo.iter().zip(&self.hi).any(|(l, h)| l >= h)
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        if self.is_empty() {
            0
        } else {
            self.lo.iter().zip(&self.hi).map(|(l, h)| (h - l) as usize).product()
        }
    }
    /// Whether `self` contains `other`.
    pub fn contains(&self, other: &IndexBox) -> bool {
        other.is_empty() || self.lo.iter().zip(&other.lo).all(|(a, b)| a <= b) && self.hi.iter().zip(&other.hi).all(|(a, b)| a >= b)
    }
    /// The smallest box containing both.
    pub fn hull(&self, other: &IndexBox) -> IndexBox {
        if self.is_empty() {
            return other.clone();
        }
        if other.is_empty() {
            return self.clone();
        }
        IndexBox {
            lo: self.lo.iter().zip(&other.lo).map(|(a, b)| *a.min(b)).collect(),
            hi: self.hi.iter().zip(&other.hi).map(|(a, b)| *a.max(b)).collect(),
        }
    }
    /// `self \ other` as disjoint boxes.
    pub fn subtract(&self, other: &IndexBox) -> Vec<IndexBox> {
        if self.is_empty() {
            return vec![];
        }
        let inter = IndexBox {
            lo: self.lo.iter().zip(&other.lo).map(|(a, b)| *a.max(b)).collect(),
            hi: self.hi.iter().zip(&other.hi).map(|(a, b)| *a.min(b)).collect(),
        };
        if inter.is_empty() {
            return vec![self.clone()];
        }
        let mut out = vec![];
        let mut rest = self.clone();
        for d in 0..self.lo.len() {
            if rest.lo[d] < inter.lo[d] {
                let mut b = rest.clone();
                b.hi[d] = inter.lo[d];
                out.push(b);
                rest.lo[d] = inter.lo[d];
            }
            if rest.hi[d] > inter.hi[d] {
                let mut b = rest.clone();
                b.lo[d] = inter.hi[d];
                out.push(b);
                rest.hi[d] = inter.hi[d];
            }
        }
        out
    }
    /// The contiguous runs of a C-ordered array of `shape` covered by the box: (first
    /// flat element, element count) pairs.
    pub fn runs(&self, shape: &[usize]) -> Vec<(usize, usize)> {
        if self.is_empty() {
            return vec![];
        }
        let r = shape.len();
        if r == 0 {
            return vec![(0, 1)];
        }
        // Merge trailing dimensions that are covered whole into one run.
        let mut k = r - 1;
        while k > 0 && self.lo[k] == 0 && self.hi[k] == shape[k] as i64 {
            k -= 1;
        }
        let inner: usize = shape[k + 1..].iter().product();
        let run_len = (self.hi[k] - self.lo[k]) as usize * inner;
        let mut out = vec![];
        let mut idx: Vec<i64> = self.lo[..k].to_vec();
        loop {
            let mut flat = 0usize;
            for d in 0..k {
                flat = flat * shape[d] + idx[d] as usize;
            }
            flat = (flat * shape[k] + self.lo[k] as usize) * inner;
            out.push((flat, run_len));
            // Next index of the outer dimensions.
            let mut d = k;
            loop {
                if d == 0 {
                    return out;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < self.hi[d] {
                    break;
                }
                idx[d] = self.lo[d];
            }
        }
    }
}

/// A value known to the analysis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Known {
    /// An integer in `[lo, hi]`.
    Int(i64, i64),
    /// An array parameter of this shape (index into the launch's arguments).
    Array(usize),
    /// Unknown.
    Top,
}

/// The boxes one launch reads and writes, per kernel parameter index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Accesses {
    /// Read boxes, by parameter index.
    pub reads: HashMap<usize, IndexBox>,
    /// Written boxes, by parameter index.
    pub writes: HashMap<usize, IndexBox>,
}

/// The `gpu.func` named `name` in a `gpu`-level module.
pub fn find_kernel<'m>(m: &'m Module, name: &str) -> Option<&'m Op> {
    let quoted = format!("\"{name}\"");
    m.body()
        .iter()
        .filter(|o| o.name == "gpu.module")
        .flat_map(|g| g.body(0).ops.iter())
        .find(|f| f.name == "gpu.func" && f.attr("sym_name") == Some(&quoted))
}

/// A scalar or array argument of a launch, as the analysis sees it.
#[derive(Clone, Debug)]
pub enum LaunchArg {
    /// An integer (or index) value.
    Int(i64),
    /// A float (never an index).
    Float,
    /// An array of this shape.
    Array(Vec<usize>),
}

/// Analyses one launch of `kernel` (a `gpu.func` of `m`) with `args` on a grid of
/// `grid` blocks of `block` threads.
pub fn analyse(m: &Module, kernel: &Op, args: &[LaunchArg], grid: i64, block: i64) -> Accesses {
    let mut a = Analysis::new(m, kernel, args, grid, block);
    a.ops(&kernel.body(0).ops);
    a.acc
}

struct Analysis<'a> {
    m: &'a Module,
    env: HashMap<Value, Known>,
    shapes: HashMap<usize, Vec<usize>>,
    acc: Accesses,
    grid: i64,
    block: i64,
    /// In a host-function dry run: the launches seen, with accesses keyed by the host
    /// function's argument index.
    launches: Vec<(String, Accesses)>,
    /// Integer comparisons (`arith.cmpi` predicate, lhs, rhs), to narrow intervals inside
    /// the `scf.if` they guard (the lanes' bounds masks).
    conds: HashMap<Value, (i64, Value, Value)>,
}

/// A dry run of a bundle's host function (`m` holds it and the kernels) for arguments
/// `args`: for each kernel launch reached through straight-line host code, the boxes it
/// reads and writes, keyed by the function's argument index. Host loops are not
/// iterated (their bodies are analysed once with the loop variable as an interval).
pub fn plan(m: &Module, args: &[LaunchArg]) -> Vec<(String, Accesses)> {
    let Some(func) = m.body().iter().find(|o| o.name == "func.func") else {
        return vec![];
    };
    let mut a = Analysis::new(m, func, args, 1, 1);
    a.ops(&func.body(0).ops);
    a.launches
}

fn int(k: Known) -> Option<(i64, i64)> {
    match k {
        Known::Int(l, h) => Some((l, h)),
        _ => None,
    }
}

impl<'a> Analysis<'a> {
    /// An analysis of `f`'s body with its arguments bound to `args`.
    fn new(m: &'a Module, f: &Op, args: &[LaunchArg], grid: i64, block: i64) -> Self {
        let mut a = Analysis {
            m,
            env: HashMap::new(),
            shapes: HashMap::new(),
            acc: Accesses::default(),
            grid,
            block,
            launches: vec![],
            conds: HashMap::new(),
        };
        for (i, (v, arg)) in f.body(0).args.iter().zip(args).enumerate() {
            let k = match arg {
                LaunchArg::Int(x) => Known::Int(*x, *x),
                LaunchArg::Float => Known::Top,
                LaunchArg::Array(shape) => {
                    a.shapes.insert(i, shape.clone());
                    Known::Array(i)
                }
            };
            a.env.insert(*v, k);
        }
        a
    }

    fn get(&self, v: Value) -> Known {
        self.env.get(&v).copied().unwrap_or(Known::Top)
    }

    fn ops(&mut self, ops: &[Op]) {
        for op in ops {
            self.op(op);
        }
    }

    fn set(&mut self, op: &Op, k: Known) {
        if let Some(r) = op.results.first() {
            self.env.insert(*r, k);
        }
    }

    fn record(&mut self, mem: Value, idx: &[Value], write: bool) {
        let Known::Array(p) = self.get(mem) else { return };
        let shape = self.shapes[&p].clone();
        let mut b = IndexBox::whole(&shape);
        for (d, v) in idx.iter().enumerate().take(shape.len()) {
            if let Some((l, h)) = int(self.get(*v)) {
                b.lo[d] = l.max(0);
                b.hi[d] = (h.saturating_add(1)).min(shape[d] as i64);
            }
        }
        let slot = if write { &mut self.acc.writes } else { &mut self.acc.reads };
        let e = slot.entry(p).or_insert_with(|| IndexBox {
            lo: vec![0; shape.len()],
            hi: vec![0; shape.len()],
        });
        *e = e.hull(&b);
    }

    fn op(&mut self, op: &Op) {
        let o = &op.operands;
        let bin = |s: &Self, f: &dyn Fn(i64, i64, i64, i64) -> Option<(i64, i64)>| -> Known {
            match (int(s.get(o[0])), int(s.get(o[1]))) {
                (Some((a, b)), Some((c, d))) => f(a, b, c, d).map(|(l, h)| Known::Int(l, h)).unwrap_or(Known::Top),
                _ => Known::Top,
            }
        };
        match op.name.as_str() {
            "arith.constant" => {
                let ty = op.results.first().map(|r| self.m.ty(*r)).unwrap_or("");
                let k = if ty == "index" || ty.starts_with('i') {
                    let text = op.attr("value").unwrap_or("");
                    let v = text.split(" : ").next().unwrap_or("").trim();
                    match v {
                        "true" => Known::Int(1, 1),
                        "false" => Known::Int(0, 0),
                        _ => v.parse::<i64>().map(|x| Known::Int(x, x)).unwrap_or(Known::Top),
                    }
                } else {
                    Known::Top
                };
                self.set(op, k);
            }
            "gpu.block_id" => self.set(op, Known::Int(0, (self.grid - 1).max(0))),
            "gpu.thread_id" => self.set(op, Known::Int(0, (self.block - 1).max(0))),
            "gpu.block_dim" => self.set(op, Known::Int(self.block, self.block)),
            "gpu.grid_dim" => self.set(op, Known::Int(self.grid, self.grid)),
            "arith.index_cast" | "arith.index_castui" | "arith.extsi" | "arith.extui" => {
                let k = self.get(o[0]);
                self.set(op, k);
            }
            "arith.addi" => {
                let k = bin(self, &|a, b, c, d| Some((a.checked_add(c)?, b.checked_add(d)?)));
                self.set(op, k);
            }
            "arith.subi" => {
                let k = bin(self, &|a, b, c, d| Some((a.checked_sub(d)?, b.checked_sub(c)?)));
                self.set(op, k);
            }
            "arith.muli" => {
                let k = bin(self, &|a, b, c, d| {
                    let p = [a.checked_mul(c)?, a.checked_mul(d)?, b.checked_mul(c)?, b.checked_mul(d)?];
                    Some((*p.iter().min()?, *p.iter().max()?))
                });
                self.set(op, k);
            }
            "arith.divsi" | "arith.floordivsi" | "arith.ceildivsi" => {
                let k = bin(self, &|a, b, c, d| {
                    if c <= 0 || c != d {
                        return None;
                    }
                    let f = |x: i64| {
                        if op.name == "arith.ceildivsi" {
                            x.div_euclid(c) + i64::from(x.rem_euclid(c) != 0)
                        } else {
                            x.div_euclid(c)
                        }
                    };
                    Some((f(a), f(b)))
                });
                self.set(op, k);
            }
            "arith.remsi" => {
                let k = bin(self, &|a, _b, c, d| if a >= 0 && c > 0 && c == d { Some((0, c - 1)) } else { None });
                self.set(op, k);
            }
            "arith.maxsi" => {
                let k = bin(self, &|a, b, c, d| Some((a.max(c), b.max(d))));
                self.set(op, k);
            }
            "arith.minsi" => {
                let k = bin(self, &|a, b, c, d| Some((a.min(c), b.min(d))));
                self.set(op, k);
            }
            "arith.select" => {
                let k = match (int(self.get(o[1])), int(self.get(o[2]))) {
                    (Some((a, b)), Some((c, d))) => Known::Int(a.min(c), b.max(d)),
                    _ => Known::Top,
                };
                self.set(op, k);
            }
            "memref.dim" => {
                let k = match (self.get(o[0]), int(self.get(o[1]))) {
                    (Known::Array(p), Some((d, d2))) if d == d2 => {
                        let s = &self.shapes[&p];
                        s.get(d as usize).map(|x| Known::Int(*x as i64, *x as i64)).unwrap_or(Known::Top)
                    }
                    _ => Known::Top,
                };
                self.set(op, k);
            }
            "memref.load" => {
                self.record(o[0], &o[1..], false);
                self.set(op, Known::Top);
            }
            "memref.store" => self.record(o[1], &o[2..], true),
            "memref.atomic_rmw" => {
                self.record(o[1], &o[2..], false);
                self.record(o[1], &o[2..], true);
                self.set(op, Known::Top);
            }
            "gpu.launch_func" => {
                let exact = |k: Known| match k {
                    Known::Int(l, h) if l == h => Some(l),
                    _ => None,
                };
                let g: Option<i64> = (0..3).map(|i| exact(self.get(o[i]))).product();
                let b: Option<i64> = (3..6).map(|i| exact(self.get(o[i]))).product();
                let name = op.attr("kernel").unwrap_or("").rsplit("::@").next().unwrap_or("").to_string();
                let kernel = find_kernel(self.m, &name);
                if let (Some(g), Some(b), Some(kernel)) = (g, b, kernel) {
                    let mut owners = vec![];
                    let largs: Vec<LaunchArg> = o[6..]
                        .iter()
                        .map(|v| match self.get(*v) {
                            Known::Array(i) => {
                                owners.push(Some(i));
                                LaunchArg::Array(self.shapes[&i].clone())
                            }
                            Known::Int(l, h) if l == h => {
                                owners.push(None);
                                LaunchArg::Int(l)
                            }
                            _ => {
                                owners.push(None);
                                LaunchArg::Float
                            }
                        })
                        .collect();
                    let acc = analyse(self.m, kernel, &largs, g, b);
                    let rekey = |m: &HashMap<usize, IndexBox>| -> HashMap<usize, IndexBox> {
                        m.iter()
                            .filter_map(|(p, bx)| owners.get(*p).copied().flatten().map(|h| (h, bx.clone())))
                            .collect()
                    };
                    self.launches.push((
                        name,
                        Accesses {
                            reads: rekey(&acc.reads),
                            writes: rekey(&acc.writes),
                        },
                    ));
                }
            }
            "arith.cmpi" => {
                if let Some(p) = op.attr("predicate").and_then(|t| t.split(' ').next()?.parse::<i64>().ok()) {
                    self.conds.insert(op.results[0], (p, o[0], o[1]));
                }
                self.set(op, Known::Int(0, 1));
            }
            "scf.if" => {
                // In the then-branch the condition holds: narrow `x` in `x < y`, `x <= y`.
                let saved = self.conds.get(&o[0]).copied().and_then(|(p, x, y)| {
                    let (xl, xh) = int(self.get(x))?;
                    let (_, yh) = int(self.get(y))?;
                    let hi = match p {
                        2 => yh - 1,
                        3 => yh,
                        _ => return None,
                    };
                    let old = self.get(x);
                    self.env.insert(x, Known::Int(xl, xh.min(hi)));
                    Some((x, old))
                });
                if let Some(b) = op.regions.first().and_then(|r| r.blocks.first()) {
                    self.ops(&b.ops);
                }
                if let Some((x, old)) = saved {
                    self.env.insert(x, old);
                }
                if let Some(b) = op.regions.get(1).and_then(|r| r.blocks.first()) {
                    self.ops(&b.ops);
                }
                for r in &op.results {
                    self.env.insert(*r, Known::Top);
                }
            }
            "scf.for" => {
                let iv = match (int(self.get(o[0])), int(self.get(o[1])), int(self.get(o[2]))) {
                    (Some((lb, _)), Some((_, ub)), Some((st, _))) if st > 0 => {
                        if ub - 1 < lb {
                            // An empty loop: its body never runs.
                            for r in &op.results {
                                self.env.insert(*r, Known::Top);
                            }
                            return;
                        }
                        Known::Int(lb, ub - 1)
                    }
                    _ => Known::Top,
                };
                let blk = op.body(0);
                self.env.insert(blk.args[0], iv);
                for a in &blk.args[1..] {
                    self.env.insert(*a, Known::Top);
                }
                self.ops(&blk.ops);
                for r in &op.results {
                    self.env.insert(*r, Known::Top);
                }
            }
            _ => {
                for r in &op.regions {
                    for b in &r.blocks {
                        for a in &b.args {
                            self.env.insert(*a, Known::Top);
                        }
                        self.ops(&b.ops);
                    }
                }
                for r in &op.results {
                    self.env.insert(*r, Known::Top);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_algebra() {
        let a = IndexBox {
            lo: vec![0, 0],
            hi: vec![4, 4],
        };
        let b = IndexBox {
            lo: vec![1, 1],
            hi: vec![3, 3],
        };
        let parts = a.subtract(&b);
        assert_eq!(parts.iter().map(|p| p.len()).sum::<usize>(), 16 - 4);
        assert!(a.contains(&b) && !b.contains(&a));
        assert_eq!(
            IndexBox {
                lo: vec![2, 0],
                hi: vec![3, 5]
            }
            .runs(&[4, 5]),
            vec![(10, 5)]
        );
        assert_eq!(
            IndexBox {
                lo: vec![1, 1],
                hi: vec![3, 3]
            }
            .runs(&[4, 5]),
            vec![(6, 2), (11, 2)]
        );
        assert_eq!(
            IndexBox {
                lo: vec![0, 0],
                hi: vec![4, 5]
            }
            .runs(&[4, 5]),
            vec![(0, 20)]
        );
        assert!(a.subtract(&a).is_empty());
    }
}
