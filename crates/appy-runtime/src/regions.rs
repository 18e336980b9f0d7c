//! Which parts of its array arguments a kernel launch reads and writes (seed 002 §5,
//! restricted to boxes: a range of indices per dimension).
//!
//! The analysis runs when a kernel is launched, on the kernel's body as the bundle's
//! host program carries it (`appy_ir::host`: the typed ops the runner executes, here
//! evaluated over intervals) with the launch's actual scalar arguments and grid: every
//! index value is evaluated as an interval (block and thread ids range over the grid,
//! loop variables over their bounds), and each `memref.load`/`store`/`atomic_rmw` on an array parameter
//! contributes the box of its index intervals, clamped to the array's shape. A kernel
//! reading one row of a matrix reads one row's box; anything the analysis cannot bound
//! counts as the whole dimension. The runtime transfers only these boxes.

use crate::lattice::Lattice;
use appy_ir::attrs::{CmpIPredicate, Scalar};
use appy_ir::host::{Block, GpuIdOp, HostOp, HostProgram, IntBinOp, IntCastOp, KernelProgram, Slot};
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
    /// The one-element box of flat element `flat` of a C-ordered array of `shape`.
    pub fn point(shape: &[usize], flat: usize) -> Self {
        let mut lo = vec![0i64; shape.len()];
        let mut rest = flat;
        for d in (0..shape.len()).rev() {
            lo[d] = (rest % shape[d].max(1)) as i64;
            rest /= shape[d].max(1);
        }
        let hi = lo.iter().map(|x| x + 1).collect();
        IndexBox { lo, hi }
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
    /// The indices in both (empty when they do not meet).
    pub fn intersect(&self, other: &IndexBox) -> IndexBox {
        IndexBox {
            lo: self.lo.iter().zip(&other.lo).map(|(a, b)| *a.max(b)).collect(),
            hi: self.hi.iter().zip(&other.hi).map(|(a, b)| *a.min(b)).collect(),
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

/// The boxes one launch reads and writes, per kernel parameter index, and where the
/// accesses have constant strides, the elements of the box they touch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Accesses {
    /// Read boxes, by parameter index.
    pub reads: HashMap<usize, IndexBox>,
    /// Written boxes, by parameter index.
    pub writes: HashMap<usize, IndexBox>,
    /// The elements of a read box that are read, where not all of them are.
    pub read_lattice: HashMap<usize, Lattice>,
    /// The elements of a written box that are written, where not all of them are.
    pub write_lattice: HashMap<usize, Lattice>,
}

impl Accesses {
    /// The box of parameter `p` the launch reads or writes (the hull of both), if any.
    pub fn touched(&self, p: usize) -> Option<IndexBox> {
        match (self.reads.get(&p), self.writes.get(&p)) {
            (Some(r), Some(w)) => Some(r.hull(w)),
            (Some(b), None) | (None, Some(b)) => Some(b.clone()),
            (None, None) => None,
        }
    }

    /// The elements the launch reads or writes of parameter `p`, where it is not all of
    /// a box's: the box (within [`Self::touched`]'s) and the lattice anchored at it
    /// (`None`: every element of the touched box).
    pub fn touched_lattice(&self, p: usize) -> Option<(IndexBox, Lattice)> {
        let side = |boxes: &HashMap<usize, IndexBox>, lats: &HashMap<usize, Lattice>| {
            boxes
                .get(&p)
                .map(|b| (b.clone(), lats.get(&p).cloned().unwrap_or_else(|| Lattice::dense(b.lo.len()))))
        };
        let (b, l) = match (side(&self.reads, &self.read_lattice), side(&self.writes, &self.write_lattice)) {
            (Some((a, la)), Some((b, lb))) => Lattice::union(&a, &la, &b, &lb),
            (Some(x), None) | (None, Some(x)) => x,
            (None, None) => return None,
        };
        (!l.is_dense()).then_some((b, l))
    }
}

/// A scalar or array argument of a launch, as the analysis sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LaunchArg {
    /// An integer (or index) value.
    Int(i64),
    /// A float (never an index).
    Float,
    /// An array of this shape.
    Array(Vec<usize>),
}

/// Analyses one launch of `kernel` with `args` on a grid of `grid` blocks of `block`
/// threads. A kernel whose body the bundle does not carry accesses nothing known: the
/// caller moves whole arrays.
pub fn analyse(kernel: &KernelProgram, args: &[LaunchArg], grid: i64, block: i64) -> Accesses {
    let Some(body) = &kernel.body else {
        return Accesses::default();
    };
    let mut a = Analysis::new(&[], kernel.slots, &kernel.args, args, grid, block);
    a.block(body);
    a.acc
}

struct Analysis<'a> {
    /// The kernels launches refer to (a host-program dry run).
    kernels: &'a [KernelProgram],
    env: Vec<Known>,
    shapes: HashMap<usize, Vec<usize>>,
    acc: Accesses,
    grid: i64,
    block: i64,
    /// In a host-program dry run: the launches seen, with accesses keyed by the host
    /// function's argument index.
    launches: Vec<(String, Accesses)>,
    /// Integer comparisons (predicate, lhs, rhs) by result slot, to narrow intervals
    /// inside the `scf.if` they guard (the lanes' bounds masks).
    conds: HashMap<Slot, (CmpIPredicate, Slot, Slot)>,
    /// Conjunctions of two conditions (`arith.andi` of `i1`s) by result slot: inside
    /// the `scf.if` they guard, each holds (a thread's lanes all in range, as
    /// `appy-gpu-unroll-and-jam` versions them).
    ands: HashMap<Slot, (Slot, Slot)>,
    /// The values that range over every `step`-th integer of their interval from its
    /// low end, by slot (others: every integer).
    steps: HashMap<Slot, i64>,
}

/// A dry run of a bundle's host program for arguments `args`: for each kernel launch
/// reached through straight-line host code, the boxes it reads and writes, keyed by the
/// function's argument index. Host loops are not iterated (their bodies are analysed
/// once with the loop variable as an interval).
pub fn plan(p: &HostProgram, args: &[LaunchArg]) -> Vec<(String, Accesses)> {
    let mut a = Analysis::new(&p.kernels, p.slots, &p.params, args, 1, 1);
    a.block(&p.body);
    a.launches
}

fn int(k: Known) -> Option<(i64, i64)> {
    match k {
        Known::Int(l, h) => Some((l, h)),
        _ => None,
    }
}

impl<'a> Analysis<'a> {
    /// An analysis of a body with `slots` values whose parameters `params` are bound to
    /// `args`.
    fn new(kernels: &'a [KernelProgram], slots: u32, params: &[Slot], args: &[LaunchArg], grid: i64, block: i64) -> Self {
        let mut a = Analysis {
            kernels,
            env: vec![Known::Top; slots as usize],
            shapes: HashMap::new(),
            acc: Accesses::default(),
            grid,
            block,
            launches: vec![],
            conds: HashMap::new(),
            ands: HashMap::new(),
            steps: HashMap::new(),
        };
        for (i, (v, arg)) in params.iter().zip(args).enumerate() {
            let k = match arg {
                LaunchArg::Int(x) => Known::Int(*x, *x),
                LaunchArg::Float => Known::Top,
                LaunchArg::Array(shape) => {
                    a.shapes.insert(i, shape.clone());
                    Known::Array(i)
                }
            };
            a.env[*v as usize] = k;
        }
        a
    }

    fn get(&self, s: Slot) -> Known {
        self.env[s as usize]
    }

    fn set(&mut self, s: Slot, k: Known) {
        self.env[s as usize] = k;
        self.steps.remove(&s);
    }

    /// The step of an integer value's progression: 0 for one value, 1 for every
    /// integer of its interval.
    fn step(&self, s: Slot) -> i64 {
        match self.get(s) {
            Known::Int(l, h) if l == h => 0,
            _ => self.steps.get(&s).copied().unwrap_or(1),
        }
    }

    /// Records that `s` takes every `step`-th value of its interval from its low end;
    /// the high end becomes the last value it reaches (a loop `range(0, 8, 2)` ends at
    /// 6, not 7), which the arithmetic on it relies on (`7 - j` starts at 1).
    fn set_step(&mut self, s: Slot, step: i64) {
        if step > 1 {
            if let Known::Int(l, h) = self.get(s)
                && h > l
            {
                self.env[s as usize] = Known::Int(l, l + (h - l) / step * step);
            }
            self.steps.insert(s, step);
        }
    }

    /// The comparisons that hold when `cond` does: its own, or those of the parts of
    /// a conjunction (`arith.andi`), however nested.
    fn conjuncts(&self, cond: Slot) -> Vec<(CmpIPredicate, Slot, Slot)> {
        let (mut out, mut todo) = (vec![], vec![cond]);
        // (Bounded: a slot reused for another value cannot make it loop.)
        while let Some(c) = todo.pop()
            && out.len() + todo.len() < 64
        {
            if let Some(&(a, b)) = self.ands.get(&c) {
                todo.extend([b, a]);
            } else if let Some(&cmp) = self.conds.get(&c) {
                out.push(cmp);
            }
        }
        out
    }

    fn block(&mut self, b: &Block) {
        for op in &b.ops {
            self.op(op);
        }
    }

    fn record(&mut self, mem: Slot, idx: &[Slot], write: bool) {
        self.record_run(mem, idx, write, 1);
    }

    /// [`Self::record`] of `run` consecutive elements along the last axis from `idx`.
    /// A subscript with a step (`2*i`) records which elements of its box it touches.
    fn record_run(&mut self, mem: Slot, idx: &[Slot], write: bool, run: i64) {
        let Known::Array(p) = self.get(mem) else { return };
        let shape = self.shapes[&p].clone();
        let mut b = IndexBox::whole(&shape);
        let mut lat = Lattice::dense(shape.len());
        let last = shape.len().saturating_sub(1);
        for (d, v) in idx.iter().enumerate().take(shape.len()) {
            if let Some((l, h)) = int(self.get(*v)) {
                let extra = if d == last { run - 1 } else { 0 };
                let s = self.step(*v);
                // The first member at or above 0.
                let lo = if l < 0 && s > 1 { l + (-l + s - 1) / s * s } else { l.max(0) };
                b.lo[d] = lo;
                b.hi[d] = (h.saturating_add(1 + extra)).min(shape[d] as i64);
                if s > 1 && extra + 1 < s {
                    lat.step[d] = s;
                    lat.phases[d] = (0..=extra).collect();
                }
            }
        }
        let (boxes, lats) = if write {
            (&mut self.acc.writes, &mut self.acc.write_lattice)
        } else {
            (&mut self.acc.reads, &mut self.acc.read_lattice)
        };
        let e = boxes.entry(p).or_insert_with(|| IndexBox {
            lo: vec![0; shape.len()],
            hi: vec![0; shape.len()],
        });
        let old = lats.remove(&p).unwrap_or_else(|| Lattice::dense(shape.len()));
        let (h, l) = Lattice::union(e, &old, &b, &lat);
        *e = h;
        if !l.is_dense() {
            lats.insert(p, l);
        }
    }

    /// The interval of a binary integer op, if the analysis follows it.
    fn int_bin(&self, op: IntBinOp, a: Slot, b: Slot) -> Known {
        let (Some((a, b)), Some((c, d))) = (int(self.get(a)), int(self.get(b))) else {
            return Known::Top;
        };
        let r = match op {
            IntBinOp::AddI => (|| Some((a.checked_add(c)?, b.checked_add(d)?)))(),
            IntBinOp::SubI => (|| Some((a.checked_sub(d)?, b.checked_sub(c)?)))(),
            IntBinOp::MulI => (|| {
                let p = [a.checked_mul(c)?, a.checked_mul(d)?, b.checked_mul(c)?, b.checked_mul(d)?];
                Some((*p.iter().min()?, *p.iter().max()?))
            })(),
            IntBinOp::DivSI | IntBinOp::FloorDivSI | IntBinOp::CeilDivSI => {
                if c <= 0 || c != d {
                    None
                } else {
                    let f = |x: i64| {
                        if op == IntBinOp::CeilDivSI {
                            x.div_euclid(c) + i64::from(x.rem_euclid(c) != 0)
                        } else {
                            x.div_euclid(c)
                        }
                    };
                    Some((f(a), f(b)))
                }
            }
            IntBinOp::RemSI => (a >= 0 && c > 0 && c == d).then_some((0, c - 1)),
            IntBinOp::MaxSI => Some((a.max(c), b.max(d))),
            IntBinOp::MinSI => Some((a.min(c), b.min(d))),
            _ => None,
        };
        r.map(|(l, h)| Known::Int(l, h)).unwrap_or(Known::Top)
    }

    fn op(&mut self, op: &HostOp) {
        match op {
            HostOp::Const { dst, value } => {
                let k = match value {
                    Scalar::Int(x) => Known::Int(*x, *x),
                    Scalar::Float(_) => Known::Top,
                };
                self.set(*dst, k);
            }
            HostOp::GpuId { op, dst } => {
                let k = match op {
                    GpuIdOp::BlockId => Known::Int(0, (self.grid - 1).max(0)),
                    GpuIdOp::ThreadId => Known::Int(0, (self.block - 1).max(0)),
                    GpuIdOp::BlockDim => Known::Int(self.block, self.block),
                    GpuIdOp::GridDim => Known::Int(self.grid, self.grid),
                };
                self.set(*dst, k);
            }
            HostOp::IntCast { op, dst, a, .. } => {
                let k = if *op == IntCastOp::TruncI { Known::Top } else { self.get(*a) };
                let s = self.step(*a);
                self.set(*dst, k);
                self.set_step(*dst, s);
            }
            HostOp::IntBin { op, bits, dst, a, b } => {
                if *op == IntBinOp::AndI && *bits == 1 {
                    self.ands.insert(*dst, (*a, *b));
                }
                let k = self.int_bin(*op, *a, *b);
                let (sa, sb) = (self.step(*a), self.step(*b));
                // Steps of sums and of products by a constant (strided intervals).
                let s = match op {
                    // (A step of 0 is a single value: the sum takes the other's step.)
                    IntBinOp::AddI | IntBinOp::SubI => appy_ir::affine::gcd(sa.into(), sb.into()) as i64,
                    IntBinOp::MulI if sb == 0 => int(self.get(*b)).map_or(1, |(c, _)| sa * c.abs()),
                    IntBinOp::MulI if sa == 0 => int(self.get(*a)).map_or(1, |(c, _)| sb * c.abs()),
                    _ => 1,
                };
                self.set(*dst, k);
                self.set_step(*dst, s);
            }
            HostOp::Select { dst, t, f, .. } => {
                let k = match (int(self.get(*t)), int(self.get(*f))) {
                    (Some((a, b)), Some((c, d))) => Known::Int(a.min(c), b.max(d)),
                    _ => Known::Top,
                };
                self.set(*dst, k);
            }
            HostOp::Dim { dst, mem, index } => {
                let k = match (self.get(*mem), int(self.get(*index))) {
                    (Known::Array(p), Some((d, d2))) if d == d2 => {
                        let s = &self.shapes[&p];
                        s.get(d as usize).map(|x| Known::Int(*x as i64, *x as i64)).unwrap_or(Known::Top)
                    }
                    _ => Known::Top,
                };
                self.set(*dst, k);
            }
            HostOp::Load { dst, mem, indices } => {
                self.record(*mem, indices, false);
                self.set(*dst, Known::Top);
            }
            HostOp::Store { mem, indices, .. } => self.record(*mem, indices, true),
            HostOp::AtomicRmw { dst, mem, indices, .. } => {
                self.record(*mem, indices, false);
                self.record(*mem, indices, true);
                self.set(*dst, Known::Top);
            }
            HostOp::Launch { kernel, grid, block, args } => {
                let exact = |k: Known| match k {
                    Known::Int(l, h) if l == h => Some(l),
                    _ => None,
                };
                let g: Option<i64> = grid.iter().map(|s| exact(self.get(*s))).product();
                let b: Option<i64> = block.iter().map(|s| exact(self.get(*s))).product();
                let Some(kp) = self.kernels.get(*kernel as usize) else { return };
                if let (Some(g), Some(b), Some(_)) = (g, b, &kp.body) {
                    let mut owners = vec![];
                    let largs: Vec<LaunchArg> = args
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
                    let acc = analyse(kp, &largs, g, b);
                    fn rekey<T: Clone>(m: &HashMap<usize, T>, owners: &[Option<usize>]) -> HashMap<usize, T> {
                        m.iter()
                            .filter_map(|(p, x)| owners.get(*p).copied().flatten().map(|h| (h, x.clone())))
                            .collect()
                    }
                    self.launches.push((
                        kp.name.clone(),
                        Accesses {
                            reads: rekey(&acc.reads, &owners),
                            writes: rekey(&acc.writes, &owners),
                            read_lattice: rekey(&acc.read_lattice, &owners),
                            write_lattice: rekey(&acc.write_lattice, &owners),
                        },
                    ));
                }
            }
            HostOp::CmpI { pred, dst, a, b } => {
                self.conds.insert(*dst, (*pred, *a, *b));
                self.set(*dst, Known::Int(0, 1));
            }
            HostOp::If {
                cond,
                then,
                orelse,
                results,
                ..
            } => {
                // In the then-branch the condition holds, and so does each part of a
                // conjunction: narrow `x` in each `x < y`, `x <= y`.
                // A part that no value of `x` can satisfy makes the branch dead (a
                // thread whose lanes are never all in range): nothing in it is accessed.
                let mut saved = vec![];
                let mut dead = false;
                for (p, x, y) in self.conjuncts(*cond) {
                    let (Some((xl, xh)), Some((_, yh))) = (int(self.get(x)), int(self.get(y))) else {
                        continue;
                    };
                    let hi = match p {
                        CmpIPredicate::Slt => yh - 1,
                        CmpIPredicate::Sle => yh,
                        _ => continue,
                    };
                    if xl > xh.min(hi) {
                        dead = true;
                        break;
                    }
                    let (old, step) = (self.get(x), self.step(x));
                    self.set(x, Known::Int(xl, xh.min(hi)));
                    self.set_step(x, step);
                    saved.push((x, old, step));
                }
                if !dead {
                    self.block(then);
                }
                for (x, old, step) in saved.into_iter().rev() {
                    self.set(x, old);
                    self.set_step(x, step);
                }
                if let Some(e) = orelse {
                    self.block(e);
                }
                for r in results {
                    self.set(*r, Known::Top);
                }
            }
            HostOp::For {
                lb,
                ub,
                step,
                iv,
                iter_args,
                body,
                results,
                ..
            } => {
                let fixed = self.step(*lb) == 0 && self.step(*step) == 0;
                let k = match (int(self.get(*lb)), int(self.get(*ub)), int(self.get(*step))) {
                    (Some((lb, _)), Some((_, ub)), Some((st, _))) if st > 0 => {
                        if ub - 1 < lb {
                            // An empty loop: its body never runs.
                            for r in results {
                                self.set(*r, Known::Top);
                            }
                            return;
                        }
                        Known::Int(lb, ub - 1)
                    }
                    _ => Known::Top,
                };
                self.set(*iv, k);
                if fixed && let Some((st, _)) = int(self.get(*step)) {
                    self.set_step(*iv, st);
                }
                for a in iter_args {
                    self.set(*a, Known::Top);
                }
                self.block(body);
                for r in results {
                    self.set(*r, Known::Top);
                }
            }
            // The loop may run any number of times: what it carries is unknown.
            HostOp::While {
                before_args,
                before,
                after_args,
                after,
                results,
                ..
            } => {
                for a in before_args.iter().chain(after_args) {
                    self.set(*a, Known::Top);
                }
                self.block(before);
                self.block(after);
                for r in results {
                    self.set(*r, Known::Top);
                }
            }
            HostOp::Other {
                name,
                operands: Some(ops),
                results,
                ..
            } if (name == "vector.load" && !ops.is_empty()) || (name == "vector.store" && ops.len() >= 2) => {
                // A 16-byte vector access (`appy-gpu-vector-loads`): at most four
                // elements along the last axis from its subscripts.
                let (mem, idx, write) = if name == "vector.load" {
                    (ops[0], &ops[1..], false)
                } else {
                    (ops[1], &ops[2..], true)
                };
                self.record_run(mem, idx, write, VECTOR_ELEMENTS);
                for r in results {
                    self.set(*r, Known::Top);
                }
            }
            HostOp::Other { results, regions, .. } => {
                for r in regions {
                    for (args, b) in r {
                        for a in args {
                            self.set(*a, Known::Top);
                        }
                        self.block(b);
                    }
                }
                for r in results {
                    self.set(*r, Known::Top);
                }
            }
            // Values the analysis does not follow stay unknown (slots start as `Top`).
            _ => {}
        }
    }
}

/// The most elements of one vector access of a kernel (16 bytes of 4-byte elements).
const VECTOR_ELEMENTS: i64 = 4;

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
