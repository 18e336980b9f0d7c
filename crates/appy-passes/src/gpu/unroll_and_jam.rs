//! `appy-gpu-unroll-and-jam`: seed 002's unroll-and-jam (jit4GPU, §5), on the loops
//! over a thread's lanes that `appy-gpu-map-threads{mark=1}` marks
//! ([`THREAD_LANES`]: a parallel loop with constant bounds, its iterations independent
//! lanes of the program's `simd` or `parallel` loop).
//!
//! The loop is unrolled, and each sequential loop directly in its body whose bounds
//! are the same for every lane (defined outside, or computed only from such values) is
//! *jammed*: one loop whose body holds every copy's body, each copy carrying its own
//! values. A matrix product's `k` loop then loads `A[i, k]` once for the lanes of a
//! thread and keeps one accumulator per lane in registers; consecutive lanes' loads of
//! `B[k, j..j+3]` end up next to each other, where `appy-gpu-vector-loads` finds them.
//! Ops of copies are interleaved op by op (independent lanes may run in any order);
//! the values a lane loop carries from lane to lane (a thread's partial reduction) are
//! threaded through the copies in order.
//!
//! A lane's code sits under its bound check (`if j < m`, from `appy-strip-mine`): the
//! loop is versioned on it. Where every lane of the thread is in range, the checks go
//! and every lane's code is in one block, unrolled and jammed; a thread at the end of
//! the range runs the loop as it was.
//!
//! Not jammed, only unrolled: a loop whose estimated registers (per lane, the values a
//! jammed loop carries and the loads in it, 32-bit words) times the lanes exceed
//! `max-regs`. Unrolled lane after lane, neither jammed nor interleaved: a loop whose
//! lanes share a thread's private memory (scalar slots defined outside it). Left as it is: a loop with barriers, block reductions,
//! shuffles or unknown effects inside, or more than 16 lanes.

use crate::analyses::barriers::{kernels, private_slots, synchronises};
use crate::analyses::nest::{const_bounds, int_constants};
use crate::gpu::map_threads::THREAD_LANES;
use crate::{OptKind, Pass, PassInfo, PassOpt};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::effects::{Access, effects, is_pure};
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use std::collections::{HashMap, HashSet};

/// The pass.
pub struct UnrollAndJam {
    /// The most 32-bit registers the jammed copies of a loop may need.
    pub max_regs: i64,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-gpu-unroll-and-jam",
    description: "gpu → gpu: unroll each loop over a thread's lanes and jam the sequential loops inside (seed 002)",
    options: &[PassOpt {
        name: "max-regs",
        kind: OptKind::Int { min: 1, max: 255 },
        default: "128",
        help: "the most 32-bit registers the jammed copies may carry and load per iteration (else unrolled only)",
    }],
    file: file!(),
    make: |o| {
        Ok(Box::new(UnrollAndJam {
            max_regs: o.int("max-regs")?,
        }))
    },
};

/// The most lanes a thread's loop may have to be unrolled.
const MAX_LANES: i64 = 16;

impl Pass for UnrollAndJam {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| {
            for g in rw.top.iter_mut().filter(|o| o.name == "gpu.module") {
                for k in kernels(g) {
                    let ops = std::mem::take(&mut k.regions[0].blocks[0].ops);
                    let consts = int_constants(&ops);
                    let private = private_slots(&ops);
                    let cx = Cx {
                        consts: &consts,
                        private: &private,
                        max_regs: self.max_regs,
                    };
                    k.regions[0].blocks[0].ops = cx.block(&mut rw.b, ops, &mut HashMap::new());
                }
            }
        });
        for g in m.body_mut().iter_mut().filter(|o| o.name == "gpu.module") {
            g.walk_mut(&mut |o| {
                o.remove_attr(THREAD_LANES);
            });
        }
        Ok(())
    }
}

struct Cx<'a> {
    consts: &'a HashMap<Value, i64>,
    private: &'a HashSet<Value>,
    max_regs: i64,
}

impl Cx<'_> {
    /// Rewrites the marked loops of a block; `map` takes the results of a rewritten
    /// loop to the values that replace them.
    fn block(&self, b: &mut Builder, ops: Vec<Op>, map: &mut HashMap<Value, Value>) -> Vec<Op> {
        let mut out = Vec::with_capacity(ops.len());
        for mut op in ops {
            op.remap_uses(map);
            for r in &mut op.regions {
                for blk in &mut r.blocks {
                    let inner = std::mem::take(&mut blk.ops);
                    blk.ops = self.block(b, inner, map);
                }
            }
            if op.name == "scf.for"
                && op.remove_attr(THREAD_LANES).is_some()
                && let Some(lanes) = self.lanes(&op)
            {
                b.loc = op.loc.clone();
                match self.speculate(b, &op, lanes, map) {
                    Some(ops) => out.extend(ops),
                    None => out.extend(self.unroll(b, &op, lanes, map)),
                }
                continue;
            }
            out.push(op);
        }
        out
    }

    /// The lanes of a marked loop that may be unrolled (`None`: leave it).
    fn lanes(&self, op: &Op) -> Option<i64> {
        let (lb, ub, st) = const_bounds(op, self.consts)?;
        if lb != 0 || st != 1 || !(2..=MAX_LANES).contains(&ub) {
            return None;
        }
        let collective = synchronises(op)
            || op.walk_any(&|o| {
                let e = effects(o);
                o.name == "scf.parallel" || e.reads == Access::Any || e.writes == Access::Any
            });
        (!collective).then_some(ub)
    }

    /// The marked loop `op` versioned on its lanes' guards: the `scf.if`s directly in
    /// its body whose conditions its pure ops compute from the lane (the bound check
    /// `appy-strip-mine` puts around a lane's code). Where every lane's guards hold, the
    /// loop unrolled and jammed with the guards' code inline (every lane's code in one
    /// block); otherwise the loop as it was. `None` when it has no such guard.
    fn speculate(&self, b: &mut Builder, op: &Op, lanes: i64, map: &mut HashMap<Value, Value>) -> Option<Vec<Op>> {
        let body = op.body(0);
        let iv = body.args[0];
        let (last, ops) = body.ops.split_last()?;
        let inside = defined_in(op);
        let mut computable: HashSet<Value> = HashSet::from([iv]);
        let known = |v: &Value, c: &HashSet<Value>| !inside.contains(v) || c.contains(v);
        let mut pre: Vec<&Op> = vec![];
        let mut guards: Vec<usize> = vec![];
        for (k, o) in ops.iter().enumerate() {
            if is_pure(o) && o.operands.iter().all(|v| known(v, &computable)) {
                computable.extend(o.results.iter().copied());
                pre.push(o);
            } else if o.name == "scf.if" && o.regions.len() == 2 && known(&o.operands[0], &computable) {
                guards.push(k);
            }
        }
        if guards.is_empty() {
            return None;
        }
        // Whether every lane's guards hold.
        let mut all: Option<Value> = None;
        for r in 0..lanes {
            let c = b.index(r);
            let mut m = HashMap::from([(iv, c)]);
            for o in &pre {
                let c = b.m.clone_op(o, &mut m);
                b.push(c);
            }
            for &k in &guards {
                let cond = *m.get(&ops[k].operands[0]).unwrap_or(&ops[k].operands[0]);
                all = Some(match all {
                    Some(a) => b.bin("arith.andi", a, cond),
                    None => cond,
                });
            }
        }
        let mut out = b.take();
        // The body with the guards' code inline.
        let mut inline = vec![];
        let mut res: HashMap<Value, Value> = HashMap::new();
        for (k, o) in ops.iter().enumerate() {
            let mut o = o.clone();
            o.remap_uses(&res);
            if guards.contains(&k) {
                let (y, then) = o.regions[0].blocks[0].ops.split_last()?;
                res.extend(o.results.iter().copied().zip(y.operands.iter().copied()));
                inline.extend(then.iter().cloned());
            } else {
                inline.push(o);
            }
        }
        let mut y = last.clone();
        y.remap_uses(&res);
        inline.push(y);
        let mut spec = op.clone();
        spec.regions[0].blocks[0].ops = inline;
        let mut local = HashMap::new();
        let mut then_ops = self.unroll(b, &spec, lanes, &mut local);
        let cur: Vec<Value> = op.results.iter().map(|r| *local.get(r).unwrap_or(r)).collect();
        then_ops.push(Builder::yield_op(&cur));
        // The loop as it was, for a thread whose lanes are not all in range.
        let orig = b.m.clone_op(op, &mut HashMap::new());
        let orig_res = orig.results.clone();
        let else_ops = vec![orig, Builder::yield_op(&orig_res)];
        let results: Vec<Value> = op.results.iter().map(|r| b.m.value(b.m.ty(*r).to_string())).collect();
        out.push(
            Op::new("scf.if")
                .with_operands([all?])
                .with_results(results.clone())
                .with_region(Builder::region(vec![], then_ops))
                .with_region(Builder::region(vec![], else_ops))
                .with_loc(op.loc.clone()),
        );
        map.extend(op.results.iter().copied().zip(results));
        Some(out)
    }

    /// The marked loop `op` unrolled into `lanes` copies, its sequential loops jammed
    /// where allowed; `map` gets its results.
    fn unroll(&self, b: &mut Builder, op: &Op, lanes: i64, map: &mut HashMap<Value, Value>) -> Vec<Op> {
        let body = op.body(0);
        let (iv, accs) = (body.args[0], &body.args[1..]);
        let (yield_op, ops) = body.ops.split_last().expect("scf.for has a terminator");
        let inside = defined_in(op);
        // Lanes that share a thread's private memory must not interleave.
        let shares_private = op.walk_any(&|o| {
            let e = effects(o);
            [e.reads, e.writes].iter().any(|a| match a {
                Access::Operands(ix) => ix
                    .iter()
                    .any(|i| o.operands.get(*i).is_some_and(|m| self.private.contains(m) && !inside.contains(m))),
                _ => false,
            })
        });
        let mut out = vec![];
        let mut maps: Vec<HashMap<Value, Value>> = (0..lanes)
            .map(|r| {
                let c = b.index(r);
                HashMap::from([(iv, c)])
            })
            .collect();
        out.extend(b.take());
        // Values the same in every copy (defined outside the loop, or pure functions of
        // such values): computed once.
        let mut same: HashSet<Value> = HashSet::new();
        let invariant = |v: &Value, same: &HashSet<Value>| !inside.contains(v) || same.contains(v);
        // The values carried from lane to lane are used only after the last loop that
        // is jammed: the ops from there on run lane after lane.
        let uses_acc = |o: &Op| {
            let mut hit = false;
            o.walk(&mut |x| hit |= x.operands.iter().any(|v| accs.contains(v)));
            hit
        };
        let first_acc_use = ops.iter().position(uses_acc).unwrap_or(ops.len());
        let jammable = |o: &Op, same: &HashSet<Value>| {
            !shares_private
                && o.name == "scf.for"
                && o.operands[..3].iter().all(|v| invariant(v, same))
                && self.regs(o) * lanes <= self.max_regs
        };
        // Lanes that share private memory run lane after lane from the start.
        let interleave_until = if shares_private {
            0
        } else if accs.is_empty() {
            ops.len()
        } else {
            first_acc_use
        };
        let mut k = 0;
        while k < ops.len() {
            let o = &ops[k];
            if k >= interleave_until {
                break;
            }
            if jammable(o, &same) {
                let jammed = self.jam(b, o, &mut maps, &mut same, &inside);
                out.extend(b.take());
                out.push(jammed);
            } else if is_pure(o) && o.operands.iter().all(|v| invariant(v, &same)) {
                let c = b.m.clone_op(o, &mut maps[0]);
                for m in &mut maps[1..] {
                    m.extend(o.results.iter().copied().zip(c.results.iter().copied()));
                }
                same.extend(o.results.iter().copied());
                out.push(c);
            } else {
                for m in &mut maps {
                    out.push(b.m.clone_op(o, m));
                }
            }
            k += 1;
        }
        // The rest, lane after lane, each lane's carried values the previous lane's.
        let mut cur: Vec<Value> = op.operands[3..].to_vec();
        for m in &mut maps {
            m.extend(accs.iter().copied().zip(cur.iter().copied()));
            for o in &ops[k..] {
                out.push(b.m.clone_op(o, m));
            }
            cur = yield_op.operands.iter().map(|v| *m.get(v).unwrap_or(v)).collect();
        }
        map.extend(op.results.iter().copied().zip(cur));
        out
    }

    /// One loop for the copies of the sequential loop `o` (bounds the same for all;
    /// `inside`: the values defined in the marked loop, per copy unless in `same`):
    /// its values carried per copy, its body the copies' bodies interleaved op by op,
    /// inner loops with the same bounds for all copies jammed too.
    fn jam(&self, b: &mut Builder, o: &Op, maps: &mut [HashMap<Value, Value>], same: &mut HashSet<Value>, inside: &HashSet<Value>) -> Op {
        let lanes = maps.len();
        let body = o.body(0);
        let (iv, args) = (body.args[0], &body.args[1..]);
        let (yield_op, ops) = body.ops.split_last().expect("scf.for has a terminator");
        let bounds: Vec<Value> = o.operands[..3].iter().map(|v| *maps[0].get(v).unwrap_or(v)).collect();
        let inits: Vec<Value> = maps
            .iter()
            .flat_map(|m| o.operands[3..].iter().map(|v| *m.get(v).unwrap_or(v)))
            .collect();
        let new_iv = b.m.value(b.m.ty(iv).to_string());
        same.insert(iv);
        let mut new_args = vec![new_iv];
        for m in maps.iter_mut() {
            m.insert(iv, new_iv);
            for a in args {
                let n = b.m.value(b.m.ty(*a).to_string());
                m.insert(*a, n);
                new_args.push(n);
            }
        }
        let invariant = |v: &Value, same: &HashSet<Value>| !inside.contains(v) || same.contains(v);
        let mut new_body = vec![];
        for x in ops {
            if x.name == "scf.for"
                && x.operands[..3]
                    .iter()
                    .all(|v| invariant(v, same) && maps.iter().all(|m| m.get(v) == maps[0].get(v)))
            {
                let inner = self.jam(b, x, maps, same, inside);
                new_body.extend(b.take());
                new_body.push(inner);
            } else if is_pure(x) && x.operands.iter().all(|v| invariant(v, same)) {
                let c = b.m.clone_op(x, &mut maps[0]);
                for m in maps[1..].iter_mut() {
                    m.extend(x.results.iter().copied().zip(c.results.iter().copied()));
                }
                same.extend(x.results.iter().copied());
                new_body.push(c);
            } else {
                for m in maps.iter_mut() {
                    new_body.push(b.m.clone_op(x, m));
                }
            }
        }
        let yields: Vec<Value> = maps
            .iter()
            .flat_map(|m| yield_op.operands.iter().map(|v| *m.get(v).unwrap_or(v)))
            .collect();
        new_body.push(Builder::yield_op(&yields));
        let mut results = vec![];
        for m in maps.iter_mut() {
            for r in &o.results {
                let n = b.m.value(b.m.ty(*r).to_string());
                m.insert(*r, n);
                results.push(n);
            }
        }
        debug_assert_eq!(results.len(), o.results.len() * lanes);
        let mut jammed = Op::new("scf.for")
            .with_operands(bounds.into_iter().chain(inits))
            .with_results(results)
            .with_region(Builder::region(new_args, new_body))
            .with_loc(o.loc.clone());
        jammed.attrs = o.attrs.clone();
        jammed
    }

    /// The 32-bit registers one copy of loop `o` needs per iteration: the values it
    /// carries and the values it loads, each counted as 64 bits.
    fn regs(&self, o: &Op) -> i64 {
        let mut n: i64 = o.results.iter().map(|_| 2).sum();
        o.walk(&mut |x| {
            if x.name == "memref.load" {
                n += 2;
            }
        });
        n
    }
}

/// The values defined inside `op` (results of nested ops, block arguments).
fn defined_in(op: &Op) -> HashSet<Value> {
    let mut s = HashSet::new();
    op.walk(&mut |o| {
        s.extend(o.results.iter().copied());
        for r in &o.regions {
            for blk in &r.blocks {
                s.extend(blk.args.iter().copied());
            }
        }
    });
    s
}
