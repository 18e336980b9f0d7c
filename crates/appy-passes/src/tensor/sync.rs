//! `appy-tensor-sync` (seed 001 §5.1.2): decides which tensor statements inside a
//! worker need thread synchronisation.
//!
//! A worker's lanes run as the threads of a block, and an element of a simd dimension
//! is always handled by the same thread. The GPU outliner therefore puts barriers
//! around every lanes loop that writes memory. They are not needed for a statement
//! whose target array is, everywhere else in the worker, accessed only through the very
//! same slice over the same dimensions (each thread then only ever reads elements it
//! wrote itself, as in a chain of element-wise statements). Such statements get
//! `appy.nosync`, which `appy-tensor-to-loops` copies to their simd loops and the
//! outliner honours. Barriers remain where they are needed: after a reduction that
//! writes an array element (one thread stores it), between statements that read a
//! target through another slice (stencils, Figure 2's temporary), and around loop code
//! that touches the target.

use crate::tensor::*;
use crate::util::is_parallel;
use crate::{Pass, PassInfo};
use appy_ir::attrs::{CmpIPredicate, Scalar, parse_constant};
use appy_ir::diag::IrError;
use appy_ir::effects::{Access, effects};
use appy_ir::ir::{Module, Op, Value};
use appy_ir::schedule::Mark;
use std::collections::{HashMap, HashSet};

/// The pass.
pub struct TensorSync;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-tensor-sync",
    description: "mark tensor statements in workers that need no barriers (appy.nosync, seed 001 §5.1.2)",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(TensorSync)),
};

impl Pass for TensorSync {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let mut defs: Defs = HashMap::new();
        m.op.walk(&mut |o| {
            if o.results.len() == 1 && (o.name.starts_with("arith.") || o.name == "memref.dim") {
                defs.insert(o.results[0], o.clone());
            }
        });
        for f in m.body_mut() {
            mark_host(f, &defs);
        }
        m.op.walk_mut(&mut |o| {
            if is_parallel(o) {
                mark_worker(o, &defs);
            }
        });
        Ok(())
    }
}

/// The integer ops of the module, by result (to compare slice bounds).
type Defs = HashMap<Value, Op>;

/// A slice bound or extent up to NumPy's normalisation: the frontend clamps every
/// slice to its array (`min(x, len)`, `max(x, 0)`, `x < 0 ? x + len : x`), so the same
/// slice of two arrays gives different values; they are equal in every program where
/// the slices agree in length, which NumPy requires of the slices of one dimension.
#[derive(Clone, Debug, PartialEq)]
enum Norm {
    Val(Value),
    Const(i64),
    Sub(Box<Norm>, Box<Norm>),
}

fn norm(defs: &Defs, v: Value) -> Norm {
    let Some(op) = defs.get(&v) else { return Norm::Val(v) };
    let o = &op.operands;
    let is_dim = |x: Value| {
        let mut x = x;
        while let Some(d) = defs.get(&x) {
            match d.name.as_str() {
                "arith.index_cast" => x = d.operands[0],
                "memref.dim" => return true,
                _ => return false,
            }
        }
        false
    };
    match op.name.as_str() {
        "arith.constant" => match op.attr("value").and_then(|t| parse_constant(t, "")) {
            Some(Scalar::Int(c)) => Norm::Const(c),
            _ => Norm::Val(v),
        },
        "arith.maxsi" if norm(defs, o[1]) == Norm::Const(0) => norm(defs, o[0]),
        "arith.minsi" if is_dim(o[1]) => norm(defs, o[0]),
        "arith.select"
            if defs.get(&o[0]).is_some_and(|c| {
                c.name == "arith.cmpi"
                    && c.attr("predicate").and_then(CmpIPredicate::parse) == Some(CmpIPredicate::Slt)
                    && c.operands[0] == o[2]
            }) =>
        {
            norm(defs, o[2])
        }
        "arith.subi" => Norm::Sub(Box::new(norm(defs, o[0])), Box::new(norm(defs, o[1]))),
        _ => Norm::Val(v),
    }
}

/// How a statement touches an array: the array, the per-axis dimension and offset
/// operands, the extents and the simd flag of each dimension involved, and the
/// per-axis steps.
type Sig = (Value, Vec<i64>, Vec<Norm>, Vec<(Norm, bool)>, Vec<i64>);

fn sig(defs: &Defs, arr: Value, dims: &[i64], idx: &[Value], steps: &[i64], a: &Assign) -> Sig {
    let per: Vec<(Norm, bool)> = dims
        .iter()
        .filter(|d| **d >= 0)
        .map(|d| (norm(defs, a.exts[*d as usize]), a.simd[*d as usize] || a.parallel[*d as usize]))
        .collect();
    let idx = idx.iter().map(|v| norm(defs, *v)).collect();
    (arr, dims.to_vec(), idx, per, steps.to_vec())
}

/// A statement outside parallel loops is a kernel of its own: it needs no barrier when
/// it reads its target only through the target's own slice.
fn mark_host(op: &mut Op, idefs: &Defs) {
    if is_parallel(op) {
        return;
    }
    for r in &mut op.regions {
        for blk in &mut r.blocks {
            let defs = tensor_defs(&blk.ops);
            for o in &mut blk.ops {
                if o.name == "appy.assign"
                    && let Ok(a) = Assign::of(o)
                {
                    let own = sig(idefs, a.target, &a.dims, &a.idx, &a.steps, &a);
                    let ok = a.atomic.is_none()
                        && dag(&defs, a.value).iter().all(|v| {
                            let d = &defs[v];
                            d.name != "appy.view" || d.operands[0] != a.target || {
                                let dims = d.attr("dims").map(int_array).unwrap_or_default();
                                sig(idefs, a.target, &dims, &d.operands[1..], &steps_of(d, dims.len()), &a) == own
                            }
                        });
                    if ok {
                        o.set_mark(Mark::NoSync);
                    }
                } else {
                    mark_host(o, idefs);
                }
            }
        }
    }
}

fn mark_worker(w: &mut Op, defs: &Defs) {
    // Everything that touches memory inside the worker.
    let mut private: HashSet<Value> = HashSet::new();
    let mut raw: HashSet<Value> = HashSet::new();
    let mut sigs: HashMap<Value, Vec<Sig>> = HashMap::new();
    let mut targets: Vec<(Value, Sig)> = vec![];
    fn visit(
        idefs: &Defs,
        ops: &[Op],
        private: &mut HashSet<Value>,
        raw: &mut HashSet<Value>,
        sigs: &mut HashMap<Value, Vec<Sig>>,
        targets: &mut Vec<(Value, Sig)>,
    ) {
        let defs = tensor_defs(ops);
        for o in ops {
            match o.name.as_str() {
                "memref.alloca" => private.extend(o.results.iter().copied()),
                "memref.load" | "memref.store" | "memref.atomic_rmw" => {
                    // The memref an element access reads or writes.
                    let e = effects(o);
                    for acc in [e.reads, e.writes] {
                        if let Access::Operands(ix) = acc {
                            raw.extend(ix.iter().filter_map(|i| o.operands.get(*i).copied()));
                        }
                    }
                }
                "appy.assign" => {
                    let Ok(a) = Assign::of(o) else { continue };
                    let s = sig(idefs, a.target, &a.dims, &a.idx, &a.steps, &a);
                    sigs.entry(a.target).or_default().push(s.clone());
                    if a.atomic.is_some() {
                        raw.insert(a.target);
                    }
                    targets.push((a.target, s));
                    for v in dag(&defs, a.value) {
                        let d = &defs[&v];
                        if d.name == "appy.view" {
                            let dims = d.attr("dims").map(int_array).unwrap_or_default();
                            let steps = steps_of(d, dims.len());
                            sigs.entry(d.operands[0])
                                .or_default()
                                .push(sig(idefs, d.operands[0], &dims, &d.operands[1..], &steps, &a));
                        }
                    }
                }
                _ => {}
            }
            for r in &o.regions {
                for blk in &r.blocks {
                    visit(idefs, &blk.ops, private, raw, sigs, targets);
                }
            }
        }
    }
    for r in &w.regions {
        for blk in &r.blocks {
            visit(defs, &blk.ops, &mut private, &mut raw, &mut sigs, &mut targets);
        }
    }
    let ok: HashSet<Value> = targets
        .iter()
        .filter(|(t, s)| !private.contains(t) && !raw.contains(t) && sigs.get(t).is_some_and(|all| all.iter().all(|x| x == s)))
        .map(|(t, _)| *t)
        .collect();
    w.walk_mut(&mut |o| {
        if o.name == "appy.assign" && o.operands.first().is_some_and(|t| ok.contains(t)) {
            o.set_mark(Mark::NoSync);
        }
    });
}
