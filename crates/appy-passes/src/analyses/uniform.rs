//! Which values vary from one iteration of their innermost loop to the next.
//!
//! LLVM's loop vectoriser treats a value that is the same in every iteration of the loop
//! it vectorises (the innermost one) as *uniform*: loop-invariant values, loads at a fixed
//! address (`c[0]`, even where the loop stores to other arrays), and what is computed
//! from them. Passes whose output costs differ with this ask [`Uniformity::varies_at`]:
//! `appy-cpu-exp` expands only math whose argument varies, since the vectoriser takes time
//! exponential in the nesting of expansions it finds uniform.
//!
//! A value varies in loop `L` when it is one of `L`'s block arguments (the loop variable,
//! carried values), the result of a loop nested in `L`, the result of an op with an
//! operand (or, for ops with regions, a value inside) that varies in `L`, or a load of a
//! scalar slot (a rank-0 memref) that `L` stores a varying value into, anywhere in its
//! body and in any order (a fixed point: the store may come after the load, the value
//! then being the last iteration's). Writes to slots inside nested loops, and by other
//! ops than `memref.store` that may write them (`appy_ir::effects`), count as varying. Values defined outside `L` do not vary in
//! it.

use appy_ir::effects::effects;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::ops::{MemrefLoad, MemrefStore};
use std::collections::{HashMap, HashSet};

/// The analysis of one function: for each value defined inside a loop, whether it varies
/// in the innermost loop around its definition.
#[derive(Debug, Default)]
pub struct Uniformity {
    /// The innermost loop (an id) around each value's definition; absent: no loop.
    loop_of: HashMap<Value, usize>,
    /// The values that vary in the loop `loop_of` names.
    varying: HashSet<Value>,
    /// Loops already analysed (by address), with their ids.
    done: HashMap<usize, usize>,
}

impl Uniformity {
    /// Analyses the ops nested in `func` (its own block arguments are parameters, the
    /// same in every iteration of any loop).
    pub fn of(m: &Module, func: &Op) -> Self {
        let mut u = Uniformity::default();
        for blk in func.regions.iter().flat_map(|r| &r.blocks) {
            u.ops(m, &blk.ops, None, &mut HashSet::new());
        }
        u
    }

    /// Whether `v`, used by the op that defines `user` (one of its results), may differ
    /// from one iteration of the innermost loop around that op to the next. Outside any
    /// loop, everything counts as varying (no vectoriser looks at it).
    pub fn varies_at(&self, v: Value, user: Value) -> bool {
        match self.loop_of.get(&user) {
            None => true,
            Some(l) => self.varies_in(v, *l),
        }
    }

    fn varies_in(&self, v: Value, l: usize) -> bool {
        self.loop_of.get(&v) == Some(&l) && self.varying.contains(&v)
    }

    fn define(&mut self, v: Value, cx: Option<usize>, varies: bool) {
        if let Some(l) = cx {
            self.loop_of.insert(v, l);
            if varies {
                self.varying.insert(v);
            }
        }
    }

    /// Visits `ops`, in loop `cx`, whose slots with varying stores are `slots` (grown here).
    fn ops(&mut self, m: &Module, ops: &[Op], cx: Option<usize>, slots: &mut HashSet<Value>) {
        for o in ops {
            let is_loop = !o.regions.is_empty() && o.regions.iter().any(|r| r.blocks.iter().any(|b| !b.args.is_empty()));
            if is_loop {
                self.loop_op(m, o);
                // In the loop around it: its results vary, and so do the slots it writes.
                if cx.is_some() {
                    o.walk(&mut |x| slots.extend(written_slots(m, x)));
                }
                for r in &o.results {
                    self.define(*r, cx, true);
                }
                continue;
            }
            for blk in o.regions.iter().flat_map(|r| &r.blocks) {
                self.ops(m, &blk.ops, cx, slots);
            }
            let Some(l) = cx else {
                continue;
            };
            let mut varies = o.operands.iter().any(|v| self.varies_in(*v, l));
            if MemrefLoad::of(o).is_some_and(|ld| slots.contains(&ld.memref)) {
                varies = true;
            }
            if !o.regions.is_empty() {
                o.walk(&mut |x| varies |= x.operands.iter().chain(&x.results).any(|v| self.varies_in(*v, l)));
            }
            // A slot written with a varying value, or by anything but a plain store.
            match MemrefStore::of(o) {
                Some(st) if is_slot(m, st.memref) && self.varies_in(st.value, l) => {
                    slots.insert(st.memref);
                }
                Some(_) => {}
                None => slots.extend(written_slots(m, o)),
            }
            for r in &o.results {
                self.define(*r, cx, varies);
            }
        }
    }

    /// Analyses loop `o` (once), to a fixed point over its slots.
    fn loop_op(&mut self, m: &Module, o: &Op) {
        let key = o as *const Op as usize;
        if self.done.contains_key(&key) {
            return;
        }
        let id = self.done.len();
        self.done.insert(key, id);
        let mut slots = HashSet::new();
        loop {
            let before = (slots.len(), self.varying.len());
            for blk in o.regions.iter().flat_map(|r| &r.blocks) {
                for a in &blk.args {
                    self.define(*a, Some(id), true);
                }
                self.ops(m, &blk.ops, Some(id), &mut slots);
            }
            if (slots.len(), self.varying.len()) == before {
                break;
            }
        }
    }
}

/// The slots among `op`'s operands that `op` itself may write (its effects).
fn written_slots<'a>(m: &'a Module, op: &'a Op) -> impl Iterator<Item = Value> + 'a {
    let writes = effects(op).writes;
    op.operands
        .iter()
        .copied()
        .filter(move |v| is_slot(m, *v) && writes.may_touch(&op.operands, *v))
}

/// A scalar variable's slot: a rank-0 memref (`memref<f64>`; shaped ones start with
/// their sizes, `memref<?xf64>`, `memref<4xi64>`).
fn is_slot(m: &Module, v: Value) -> bool {
    m.ty(v)
        .strip_prefix("memref<")
        .is_some_and(|t| !t.starts_with(|c: char| c.is_ascii_digit() || c == '?'))
}
