//! `appy-privatize{array=tmp iname=i}`: a temporary array that each iteration of loop
//! `i` uses only at its own element (`tmp[i]`), and that nothing outside the loop
//! reads, becomes a scalar of the iteration (OpenMP's `private`, Loopy's privatized
//! temporaries): a register instead of a global array, no allocation, no traffic.
//!
//! The array is named by the frontend (`appy.name` on its `memref.alloc`, set for the
//! arrays a `transform(privatize(tmp))` clause names). Legal when:
//! - it is one-dimensional, allocated at the top level of the function (`np.empty`,
//!   `np.zeros`, `np.full` with a constant);
//! - inside the loop, every load and store of it has the subscript `i` itself (affine
//!   forms, `analyses::index`), so iteration `i` touches element `i` only;
//! - outside the loop, it is only filled once before the loop, every element `[0,
//!   size)` with one value (a constant, or a value computed before the fill: it then
//!   starts each iteration's scalar), as `np.zeros` and `np.full` do, measured
//!   (`memref.dim`: the allocation's size) or freed.
//!
//! Then no other iteration and no later code can observe the array, and the scalar
//! holds exactly what element `i` would. Anything else is refused at the use that
//! breaks a condition, with the reason.

use super::{Select, no_such_loop, replace_named};
use crate::analyses::index::{IndexForm, Term, arith_ops, index_form_through};
use crate::analyses::nest::int_constants;
use crate::analyses::within::Within;
use crate::{Pass, PassInfo, PassOpt, PassOptions};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::LoopKind;
use appy_ir::types::MemRefType;
use std::collections::HashMap;

/// The attribute naming an allocation for transforms (`appy.name = "tmp"`).
pub const NAME: &str = "appy.name";

/// The pass.
pub struct Privatize {
    /// The temporary (its `appy.name`).
    pub array: String,
    /// The loop whose iterations get their own copy of their element.
    pub iname: String,
    /// Only the loops this matches (Loopy's `within=`).
    pub within: Option<Within>,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-privatize",
    description: "make a temporary array that each iteration of loop `iname` uses only at its own element a scalar of the iteration (no allocation, no memory traffic)",
    options: &[
        PassOpt {
            name: "array",
            kind: crate::OptKind::Iname,
            default: "",
            help: "the temporary: the allocation named so (appy.name)",
        },
        PassOpt {
            name: "iname",
            kind: crate::OptKind::Loops,
            default: "",
            help: "the loop",
        },
        PassOpt::WITHIN,
    ],
    file: file!(),
    make: |o| Ok(Box::new(Privatize::from_options(o)?)),
};

/// What the array's uses outside the loop are.
struct Outside {
    /// The allocation's size, for `memref.dim` of the array.
    size: Value,
    /// What a fill nest before the loop fills it with, if one does.
    fill: Option<Fill>,
}

/// The value a fill stores: a constant of the fill nest (copied into the loop) or a
/// value computed before it.
#[derive(Clone)]
enum Fill {
    Const(Op),
    Value(Value),
}

impl Privatize {
    /// The pass with the options of a pipeline (or of a `transform(privatize(...))` clause).
    pub fn from_options(o: &PassOptions) -> Result<Privatize, String> {
        Ok(Privatize {
            within: o.within()?,
            array: o.iname("array")?,
            iname: o.loops("iname")?,
        })
    }

    /// Privatizes the array in one function's body.
    pub(crate) fn apply(&self, b: &mut Builder, func: &Op, ops: Vec<Op>) -> Result<Vec<Op>, IrError> {
        if self.array.is_empty() || self.iname.is_empty() {
            return Err(IrError::user_at(
                func,
                "appy-privatize needs the array and the loop: array=NAME iname=NAME",
            ));
        }
        let (a, t) = (&self.array, &self.iname);
        let quoted = format!("\"{a}\"");
        let named: Vec<&Op> = ops
            .iter()
            .filter(|o| o.name == "memref.alloc" && o.attr(NAME) == Some(quoted.as_str()))
            .collect();
        if named.len() > 1 {
            return Err(IrError::user_at(
                named[1],
                format!("privatize: `{a}` is bound to more than one new array in this function; privatize a name bound once"),
            ));
        }
        let Some(alloc) = named.first().copied() else {
            return Err(IrError::user_at(
                func,
                format!(
                    "privatize: no temporary `{a}` is allocated at the top of this function (privatize takes an array the function makes with np.empty, np.zeros or np.full)"
                ),
            ));
        };
        let m = alloc.results[0];
        let ty = MemRefType::parse(b.m.ty(m));
        if ty.as_ref().is_none_or(|t| t.rank() != 1) || alloc.operands.len() != 1 {
            return Err(IrError::user_at(alloc, format!("privatize: `{a}` is not a one-dimensional array")));
        }
        let size = alloc.operands[0];
        let elem = appy_ir::build::memref_elem(b.m.ty(m)).to_string();
        let out = self.outside(&ops, m, size)?;
        let arith: Vec<Op> = arith_ops(&ops);
        let init = out.fill.clone();
        let sel = Select::new(func, &ops, t, self.within.as_ref());
        let (mut new, found) = replace_named(ops, &sel, Default::default(), &mut |op, _| {
            Ok(vec![self.in_loop(b, op, m, &elem, init.clone(), &arith)?])
        })?;
        if !found {
            return Err(no_such_loop(func, INFO.name, &sel, &new));
        }
        // The allocation, its fill, its frees and its sizes go.
        let mut sizes = HashMap::new();
        new.retain(|o| {
            let uses = o.walk_any(&|x| x.operands.contains(&m) || x.results.contains(&m));
            if o.name == "memref.dim" && o.operands.first() == Some(&m) {
                sizes.insert(o.results[0], out.size);
                return false;
            }
            !uses
        });
        for o in &mut new {
            o.remap_uses(&sizes);
        }
        Ok(new)
    }

    /// Checks the top-level ops other than the loop: each use of `m` is its allocation,
    /// a fill with a constant, a `memref.dim`, or a `memref.dealloc`.
    fn outside(&self, ops: &[Op], m: Value, size: Value) -> Result<Outside, IrError> {
        let mut fill = None;
        let consts: HashMap<Value, &Op> = {
            let mut c = HashMap::new();
            for o in ops {
                o.walk(&mut |x| {
                    if x.name == "arith.constant" && x.regions.is_empty() && x.results.len() == 1 {
                        c.insert(x.results[0], x);
                    }
                });
            }
            c
        };
        let ints = int_constants(ops);
        let mut seen_loop = false;
        for o in ops {
            let named = o.inames().first().map(String::as_str) == Some(self.iname.as_str()) && LoopKind::of(o).is_some();
            seen_loop |= named;
            if named || !o.walk_any(&|x| x.operands.contains(&m)) {
                continue;
            }
            let holds_loop =
                o.walk_any(&|x| LoopKind::of(x).is_some() && x.inames().first().map(String::as_str) == Some(self.iname.as_str()));
            if holds_loop {
                return Err(IrError::user_at(
                    o,
                    format!(
                        "privatize: loop `{}` is inside this one; privatize a temporary of a loop at the level where it is allocated",
                        self.iname
                    ),
                ));
            }
            match o.name.as_str() {
                "memref.dealloc" => continue,
                "memref.dim" if o.operands.first() == Some(&m) => continue,
                _ => {}
            }
            // A fill: before the loop, the one nest `m[k] = v` for every k in [0, size),
            // v a constant or a value computed before it (what np.zeros and np.full make).
            let whole = |o: &Op| -> Option<Value> {
                if o.name != "scf.parallel" || !o.results.is_empty() || o.operands.len() != 3 || seen_loop {
                    return None;
                }
                let c = |v: &Value| ints.get(v).copied();
                if c(&o.operands[0]) != Some(0) || o.operands[1] != size || c(&o.operands[2]) != Some(1) {
                    return None;
                }
                let blk = o.regions.first()?.blocks.first()?;
                let iv = *blk.args.first()?;
                let mut value = None;
                for x in &blk.ops {
                    if x.name == "memref.store" && x.operands.len() == 3 && x.operands[1] == m && x.operands[2] == iv {
                        if value.is_some() {
                            return None;
                        }
                        value = Some(x.operands[0]);
                    } else if !(appy_ir::effects::is_pure(x) || x.name == "scf.reduce" && x.operands.is_empty()) {
                        return None;
                    }
                }
                let v = value?;
                let inner = blk.ops.iter().any(|x| x.results.contains(&v)) || v == iv;
                (!inner || consts.contains_key(&v)).then_some(v)
            };
            match whole(o) {
                Some(v) if fill.is_none() => {
                    let inner = o.walk_any(&|x| x.results.contains(&v));
                    fill = Some(match consts.get(&v) {
                        Some(c) if inner => Fill::Const((*c).clone()),
                        _ => Fill::Value(v),
                    });
                }
                _ => {
                    return Err(IrError::user_at(
                        o,
                        format!(
                            "privatize: `{}` is used here, outside loop `{}`; a privatized temporary lives in one iteration of the loop, so nothing else may read or write it (but one fill of the whole array before the loop, as np.zeros and np.full make)",
                            self.array, self.iname
                        ),
                    ));
                }
            }
        }
        Ok(Outside { size, fill })
    }

    /// The loop with `m[i]` as a scalar slot of each iteration, starting at the fill.
    fn in_loop(&self, b: &mut Builder, mut op: Op, m: Value, elem: &str, fill: Option<Fill>, arith: &[Op]) -> Result<Op, IrError> {
        let (a, n) = (&self.array, &self.iname);
        if op.regions.is_empty() || op.regions[0].blocks.is_empty() || op.regions[0].blocks[0].args.is_empty() {
            return Err(IrError::user_at(&op, format!("`{n}` is not a loop")));
        }
        if op.inames().len() != 1 {
            return Err(IrError::user_at(&op, format!("privatize: loop `{n}` has several dimensions")));
        }
        let iv = op.regions[0].blocks[0].args[0];
        let outer: HashMap<Value, &Op> = arith.iter().map(|o| (o.results[0], o)).collect();
        {
            let mut all: Vec<&Op> = vec![];
            for blk in &op.regions[0].blocks {
                for o in &blk.ops {
                    o.walk(&mut |x| all.push(x));
                }
            }
            let defs: HashMap<Value, &Op> = all.iter().flat_map(|o| o.results.iter().map(move |r| (*r, *o))).collect();
            let own = IndexForm::var(Term::Iv(iv));
            for x in &all {
                if !x.operands.contains(&m) {
                    continue;
                }
                let sub = match x.name.as_str() {
                    "memref.load" if x.operands[0] == m && x.operands.len() == 2 => Some(x.operands[1]),
                    "memref.store" if x.operands[1] == m && x.operands[0] != m && x.operands.len() == 3 => Some(x.operands[2]),
                    _ => None,
                };
                let Some(sub) = sub else {
                    return Err(IrError::user_at(
                        x,
                        format!("privatize: `{a}` is used here other than by reading or writing an element"),
                    ));
                };
                if index_form_through(sub, &[iv], &defs, &outer, 0).as_ref() != Some(&own) {
                    return Err(IrError::user_at(
                        x,
                        format!(
                            "privatize: this element of `{a}` is not `{a}[{n}]`: each iteration of `{n}` may touch only its own element for `{a}` to become a value of the iteration"
                        ),
                    ));
                }
            }
        }
        b.loc = op.loc.clone();
        let (slot_op, slot) = b.alloca_op(elem);
        b.push(slot_op);
        let init = match fill {
            Some(Fill::Const(c)) => {
                let r = b.m.value(elem);
                b.push(
                    Op::new("arith.constant")
                        .with_results([r])
                        .with_attr("value", c.attr("value").unwrap_or("0").to_string()),
                );
                r
            }
            Some(Fill::Value(v)) => v,
            None if appy_ir::types::is_float_type(elem) => b.float(0.0, elem),
            None => b.int(0, elem),
        };
        b.store(init, slot, &[]);
        let mut pre = b.take();
        let body = &mut op.regions[0].blocks[0].ops;
        for o in body.iter_mut() {
            o.walk_mut(&mut |x| {
                if x.name == "memref.load" && x.operands.first() == Some(&m) {
                    x.operands = vec![slot];
                } else if x.name == "memref.store" && x.operands.get(1) == Some(&m) {
                    x.operands = vec![x.operands[0], slot];
                }
            });
        }
        pre.append(body);
        *body = pre;
        Ok(op)
    }
}

impl Pass for Privatize {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| rw.rewrite_functions(|b, func, ops| self.apply(b, func, ops)))
    }
}
