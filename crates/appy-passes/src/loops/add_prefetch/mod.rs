//! `appy-add-prefetch{array=N iname=i}`: Loopy's `add_prefetch` into local memory. The
//! reads of array parameter `N` that the threads of a group make at neighbouring
//! offsets (`a[i - 1]`, `a[i]`, `a[i + 1]`) are loaded once, cooperatively, into a
//! scratchpad in the group's shared memory, and read from there.
//!
//! The loop named `iname` is a parallel loop of workers (groups, after strip-mining or
//! a split into `g.0`/`l.0`). In each lanes loop of its body (directly, or inside a
//! sequential loop such as the chunks of a vector loop), a read `a[s0, .., base + l + c,
//! .., sk]` qualifies when `l` is the lane, `c` a constant, and `base` and the other
//! subscripts are the same for every lane (affine in values defined outside the lanes
//! loop: `analyses::index`). The reads with the same `base` and other subscripts share
//! one scratchpad of `MVL + max c - min c` elements: its footprint, computed from the
//! subscripts (Loopy's sweep over the lane). A footprint read at one offset only is
//! left alone: each element goes to one thread, so a copy would only add a barrier. Before the lanes loop, a lanes loop of the
//! same width loads it, element `k` of the footprint by thread `k mod MVL`, skipping
//! elements outside the array; the reads become reads of the scratchpad at `l + c -
//! min c`. The scratchpad is an `appy.buffer` allocation at the top of the worker's
//! body, which `appy-gpu-outline` makes shared memory, and the barrier analysis puts a
//! barrier between the load and the reads (and, in a loop, before the next load).
//!
//! Legality: the parallel loop must not write the array (writes before or after it are
//! other kernels or host code, ordered with it), and the function must not use it other
//! than by loads, stores and `memref.dim` (a view of it could be written inside the
//! loop), so the copy cannot be stale; loading elements inside the array that a lane
//! does not read changes nothing. The
//! scratchpads of one worker hold at most `BUFFER_BYTES`. Reads that do not qualify
//! stay as they are; a request that finds none is refused with the reason.
//!
//! Without `array` (`array=-1`), the pass applies the requests the pragmas recorded
//! (`transform(prefetch(a))`, as `appy.transforms` on the annotated loop, which
//! `appy-schedule` leaves for this pass because the lanes do not exist before
//! strip-mining). On the CPU, `appy-schedule{cpu=1}` checks the array the same way and
//! drops the request.

mod tiles;

use super::{Select, no_such_loop, replace_named};
use crate::analyses::within::Within;
use crate::{Pass, PassInfo, PassOpt, PassOptions};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::{BUFFER, BUFFER_BYTES, LoopKind, TRANSFORMS, parse_str_array};
use appy_ir::types::MemRefType;
use std::cell::Cell;
use std::collections::HashMap;
use tiles::{Ctx, Env, rewrite_block};

/// The pass.
pub struct AddPrefetch {
    /// The array: the function's parameter at this position; `-1`: the requests the
    /// pragmas recorded.
    pub array: i64,
    /// The array's name, for messages (empty: "parameter N").
    pub name: String,
    /// The parallel loop whose groups load the array.
    pub iname: String,
    /// Only the loops this matches (Loopy's `within=`).
    pub within: Option<Within>,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-add-prefetch",
    description: "load the neighbouring reads of an array parameter in a parallel loop's groups once, cooperatively, into shared memory (Loopy's add_prefetch, into local)",
    options: &[
        PassOpt {
            name: "array",
            kind: crate::OptKind::Int { min: -1, max: 4096 },
            default: "-1",
            help: "the array: the function's parameter N (0-based); -1: the prefetches the pragmas record",
        },
        PassOpt {
            name: "name",
            kind: crate::OptKind::Iname,
            default: "",
            help: "the array's name in messages",
        },
        PassOpt {
            name: "iname",
            kind: crate::OptKind::Loops,
            default: "",
            help: "the parallel loop whose groups share the prefetched elements",
        },
        PassOpt::WITHIN,
    ],
    file: file!(),
    make: |o| Ok(Box::new(AddPrefetch::from_options(o)?)),
};

impl AddPrefetch {
    /// The pass with the options of a pipeline (or of a `transform(prefetch(...))` clause).
    pub fn from_options(o: &PassOptions) -> Result<AddPrefetch, String> {
        Ok(AddPrefetch {
            within: o.within()?,
            array: o.int("array")?,
            name: o.iname("name")?,
            iname: o.loops("iname")?,
        })
    }

    fn what(&self) -> String {
        if self.name.is_empty() {
            format!("parameter {}", self.array)
        } else {
            format!("`{}`", self.name)
        }
    }

    /// Applies the request to one function's body.
    fn apply(&self, b: &mut Builder, func: &Op, ops: Vec<Op>) -> Result<Vec<Op>, IrError> {
        if self.array < 0 {
            return recorded(b, func, ops);
        }
        if self.iname.is_empty() {
            return Err(IrError::user_at(func, "appy-add-prefetch needs the parallel loop: iname=NAME"));
        }
        let a = self.array_value(b, func, &ops)?;
        let env = Env::of(&ops);
        let sel = Select::new(func, &ops, &self.iname, self.within.as_ref());
        let (out, found) = replace_named(ops, &sel, Default::default(), &mut |op, _| Ok(vec![self.prefetch(b, op, a, &env)?]))?;
        if !found {
            return Err(no_such_loop(func, INFO.name, &sel, &out));
        }
        Ok(out)
    }

    /// The array parameter, checked: a memref the function only reads.
    pub(crate) fn array_value(&self, b: &Builder, func: &Op, ops: &[Op]) -> Result<Value, IrError> {
        let args = func
            .regions
            .first()
            .and_then(|r| r.blocks.first())
            .map(|blk| blk.args.clone())
            .unwrap_or_default();
        let what = self.what();
        let a = usize::try_from(self.array).ok().and_then(|k| args.get(k).copied());
        let Some(a) = a.filter(|a| MemRefType::parse(b.m.ty(*a)).is_some_and(|t| t.rank() > 0)) else {
            return Err(IrError::user_at(
                func,
                format!(
                    "add-prefetch: {what} is not an array parameter of the function ({} parameters)",
                    args.len()
                ),
            ));
        };
        let mut bad: Option<&Op> = None;
        for o in ops {
            o.walk(&mut |x| {
                let reads = x.name == "memref.load" && x.operands.first() == Some(&a) && !x.operands[1..].contains(&a);
                let dim = x.name == "memref.dim" && x.operands.first() == Some(&a);
                let store = is_store_to(x, a);
                if bad.is_none() && x.operands.contains(&a) && !reads && !dim && !store {
                    bad = Some(x);
                }
            });
        }
        if let Some(x) = bad {
            return Err(IrError::user_at(
                x,
                format!(
                    "add-prefetch: {what} cannot be prefetched: the function uses it other than by reading and writing elements (a view or a call could write it while its copy in shared memory is read); prefetch an array the parallel loop only reads"
                ),
            ));
        }
        Ok(a)
    }

    /// Refuses a prefetch of `a` in loop `op` when the loop writes `a`: its copy in
    /// shared memory would be stale. (Writes before or after the loop are other
    /// kernels or host code, ordered with it.)
    pub(crate) fn check_loop(&self, op: &Op, a: Value) -> Result<(), IrError> {
        let mut store: Option<&Op> = None;
        op.walk(&mut |x| {
            if store.is_none() && is_store_to(x, a) {
                store = Some(x);
            }
        });
        match store {
            Some(x) => Err(IrError::user_at(
                x,
                format!(
                    "add-prefetch: {} cannot be prefetched in this loop: the loop writes it here, and its copy in shared memory would be stale; prefetch an array the parallel loop only reads",
                    self.what()
                ),
            )),
            None => Ok(()),
        }
    }

    /// Prefetches `a` in the lanes loops of the parallel loop `op`.
    fn prefetch(&self, b: &mut Builder, mut op: Op, a: Value, env: &Env) -> Result<Op, IrError> {
        let n = op.inames().first().cloned().unwrap_or_default();
        self.check_loop(&op, a)?;
        if LoopKind::of(&op) != Some(LoopKind::Workers) {
            return Err(IrError::user_at(
                &op,
                format!(
                    "add-prefetch: loop `{n}` is not a parallel loop: the threads of a group share a prefetch, so name the `#pragma parallel for` loop"
                ),
            ));
        }
        let ty = b.m.ty(a).to_string();
        let mt = MemRefType::parse(&ty).expect("checked memref");
        let elem = appy_ir::build::memref_elem(&ty).to_string();
        // The group's shared memory left beside its own scratchpads (appy.buffer).
        let mut used = 0i64;
        for o in &op.regions[0].blocks[0].ops {
            if o.name == "memref.alloca" && o.has_attr(BUFFER) {
                let t = MemRefType::parse(b.m.ty(o.results[0]));
                used += t.map_or(0, |t| {
                    t.shape.iter().map(|d| d.unwrap_or(0) as i64).product::<i64>() * t.elem.size() as i64
                });
            }
        }
        let ctx = Ctx {
            a,
            elem,
            elem_bytes: mt.elem.size() as i64,
            rank: mt.rank(),
            env,
            budget: Cell::new(BUFFER_BYTES - used),
            skipped: Cell::new(0),
            mvl_seen: Cell::new(0),
        };
        let mut bufs = vec![];
        let body = std::mem::take(&mut op.regions[0].blocks[0].ops);
        let body = rewrite_block(b, &ctx, body, &mut bufs)?;
        if bufs.is_empty() {
            op.regions[0].blocks[0].ops = body;
            if ctx.skipped.get() > 0 {
                return Err(IrError::user_at(
                    &op,
                    format!(
                        "add-prefetch: a tile of {} in loop `{n}` takes {} bytes at a vector length of {}; a group has {} bytes of shared memory left: use a smaller vector length (`mvl`), or groups of fewer threads (`split`)",
                        self.what(),
                        ctx.skipped.get(),
                        ctx.mvl_seen.get(),
                        BUFFER_BYTES - used
                    ),
                ));
            }
            return Err(IrError::user_at(
                &op,
                format!(
                    "add-prefetch: no read of {} in loop `{n}` can be shared by a group's threads: it needs a vector loop (simd, or a group of threads) reading `a[..., i + c, ...]` at two or more constants `c` (the lane's index plus a constant in one subscript, the other subscripts the same for the whole group)",
                    self.what()
                ),
            ));
        }
        if ctx.skipped.get() > 0 {
            tracing::debug!(
                loop_ = n.as_str(),
                bytes = ctx.skipped.get(),
                "add-prefetch: tiles that do not fit in the group's shared memory stay reads of global memory"
            );
        }
        let mut new: Vec<Op> = bufs.into_iter().flat_map(|(ops, _)| ops).collect();
        new.extend(body);
        op.regions[0].blocks[0].ops = new;
        Ok(op)
    }
}

/// Whether `x` writes an element of `a`.
fn is_store_to(x: &Op, a: Value) -> bool {
    match x.name.as_str() {
        "memref.store" => x.operands.get(1) == Some(&a),
        "memref.atomic_rmw" => x.operands.get(1) == Some(&a),
        _ => false,
    }
}

/// The prefetches recorded on a loop (`appy.transforms`), parsed.
fn parse_recorded(op: &Op, v: &str) -> Result<Vec<AddPrefetch>, IrError> {
    let mut out = vec![];
    for text in parse_str_array(v) {
        let bad = |e: String| IrError::user_at(op, format!("bad transform `{text}`: {e}"));
        let Some(rest) = text.strip_prefix("appy-add-prefetch{").and_then(|r| r.strip_suffix('}')) else {
            return Err(bad("appy-add-prefetch applies only prefetches".into()));
        };
        let p = PassOptions::parse(&INFO, rest)
            .and_then(|o| AddPrefetch::from_options(&o))
            .map_err(bad)?;
        if p.array < 0 {
            return Err(bad("a recorded prefetch names its array".into()));
        }
        out.push(p);
    }
    Ok(out)
}

/// Applies the prefetches recorded on loops (`appy.transforms`, from the pragmas): the
/// arrays are checked against the whole function first.
fn recorded(b: &mut Builder, func: &Op, ops: Vec<Op>) -> Result<Vec<Op>, IrError> {
    let mut requests: Vec<Result<Vec<AddPrefetch>, IrError>> = vec![];
    for o in &ops {
        o.walk(&mut |x| {
            if let Some(v) = x.attr(TRANSFORMS) {
                requests.push(parse_recorded(x, v));
            }
        });
    }
    let mut arrays: HashMap<i64, Value> = HashMap::new();
    for p in requests.into_iter().collect::<Result<Vec<_>, _>>()?.into_iter().flatten() {
        if let std::collections::hash_map::Entry::Vacant(e) = arrays.entry(p.array) {
            e.insert(p.array_value(b, func, &ops)?);
        }
    }
    if arrays.is_empty() {
        return Ok(ops);
    }
    let env = Env::of(&ops);
    apply_recorded(b, ops, &arrays, &env)
}

fn apply_recorded(b: &mut Builder, ops: Vec<Op>, arrays: &HashMap<i64, Value>, env: &Env) -> Result<Vec<Op>, IrError> {
    let mut out = Vec::with_capacity(ops.len());
    for mut op in ops {
        if let Some(v) = op.remove_attr(TRANSFORMS) {
            for p in parse_recorded(&op, &v)? {
                op = p.prefetch(b, op, arrays[&p.array], env)?;
            }
        } else {
            for r in &mut op.regions {
                for blk in &mut r.blocks {
                    blk.ops = apply_recorded(b, std::mem::take(&mut blk.ops), arrays, env)?;
                }
            }
        }
        out.push(op);
    }
    Ok(out)
}

impl Pass for AddPrefetch {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| rw.rewrite_functions(|b, func, ops| self.apply(b, func, ops)))
    }
}
