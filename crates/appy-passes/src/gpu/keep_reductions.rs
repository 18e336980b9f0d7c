//! `appy-gpu-keep-reductions`: a reduction across workers whose result only later
//! kernels use stays on the device (runs right after `appy-gpu-outline`).
//!
//! `appy-gpu-outline` gives each `shared(s)` reduction a one-element device buffer that
//! the kernel's workers add their partial values to, and the host then reads the buffer
//! (`memref.load`) and combines it with the initial value. A host read waits for the
//! kernel, so in
//!
//! ```python
//! #pragma parallel for shared(trace)
//! for i in range(N):
//!     trace += np.tanh(a[i, i])
//! out[:N, :N] = a[:N, :N] + trace
//! ```
//!
//! the host stops between the two kernels, and the device idles while the value
//! travels to the host and the next launch travels back. This pass finds such a read
//! whose value (through pure arithmetic, the combination with the initial value, and
//! the host's scalar slots: a store to a slot and the loads of it that follow) is used
//! only as an argument of later kernel launches. Each of those kernels then takes the
//! buffer (and the other inputs of the combination) instead of the value, and computes
//! the value itself as its first ops. The host read, the combination and the slot's
//! store go, and the buffer is freed after the last kernel that reads it.
//!
//! A read is left as it is when anything else uses the value: host arithmetic with
//! effects, a branch, a store to an array, the function's result, a grid size, a slot
//! that is read elsewhere (in another block, a nested region, or, in a loop whose body
//! does not store to the slot first, before the store), or a kernel launched from more
//! than one place.

use crate::gpu::outline::{KERNEL_MODULE, workgroup_attributions};
use crate::{Pass, PassInfo};
use appy_ir::attrs::parse_str;
use appy_ir::diag::IrError;
use appy_ir::effects::is_pure;
use appy_ir::ir::{Block, Module, Op, Value};
use appy_ir::ops::{LaunchFunc, MemrefAlloc, MemrefLoad, MemrefStore};
use std::collections::{HashMap, HashSet};

/// The pass.
pub struct KeepReductions;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-gpu-keep-reductions",
    description: "gpu → gpu: a cross-worker reduction whose result only later kernels use stays on the device (they read its buffer; the host never waits for it)",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(KeepReductions)),
};

impl Pass for KeepReductions {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let mut body = std::mem::take(m.body_mut());
        let Some(gi) = body
            .iter()
            .position(|o| o.name == "gpu.module" && o.attr("sym_name").map(parse_str) == Some(KERNEL_MODULE))
        else {
            *m.body_mut() = body;
            return Ok(());
        };
        let mut kernels = std::mem::take(&mut body[gi].regions[0].blocks[0].ops);
        for f in &mut body {
            if f.name != "func.func" || f.regions.is_empty() || f.regions[0].blocks.is_empty() {
                continue;
            }
            // Launches per kernel in this function, and the function's constants.
            let mut launches: HashMap<String, usize> = HashMap::new();
            let mut consts: HashMap<Value, Op> = HashMap::new();
            f.walk(&mut |o| {
                if let Some(l) = LaunchFunc::of(o) {
                    *launches.entry(l.kernel.to_string()).or_default() += 1;
                }
                if o.name == "arith.constant" && o.regions.is_empty() && o.results.len() == 1 {
                    consts.insert(o.results[0], o.clone());
                }
            });
            let slot_loads = slot_loads(f, m);
            let mut st = State {
                m,
                kernels: &mut kernels,
                launches,
                consts,
                slot_loads,
            };
            st.blocks(&mut f.regions[0].blocks[0], false);
        }
        body[gi].regions[0].blocks[0].ops = kernels;
        *m.body_mut() = body;
        Ok(())
    }
}

/// The number of loads of each host scalar slot (a rank-0 `memref.alloca`) in `f`.
fn slot_loads(f: &Op, m: &Module) -> HashMap<Value, usize> {
    let mut slots = HashSet::new();
    f.walk(&mut |o| {
        if let Some(a) = MemrefAlloc::of(o, m)
            && a.stack
            && a.ty.rank() == 0
        {
            slots.insert(a.result);
        }
    });
    let mut n: HashMap<Value, usize> = slots.iter().map(|s| (*s, 0)).collect();
    f.walk(&mut |o| {
        if let Some(l) = MemrefLoad::of(o)
            && let Some(c) = n.get_mut(&l.memref)
        {
            *c += 1;
        }
    });
    n
}

struct State<'a> {
    m: &'a mut Module,
    kernels: &'a mut Vec<Op>,
    launches: HashMap<String, usize>,
    consts: HashMap<Value, Op>,
    slot_loads: HashMap<Value, usize>,
}

/// A host read that can stay on the device, and what to change for it.
struct Plan {
    /// The read's position in the block.
    at: usize,
    /// The buffer and the constant index read.
    buf: Value,
    index: Value,
    /// The value read.
    read: Value,
    /// The pure ops computing from it, in order (indices into the block).
    pure: Vec<usize>,
    /// Slot stores and forwarded slot loads to remove (indices), and each forwarded
    /// load's stored value.
    dropped: Vec<usize>,
    forwarded: HashMap<Value, Value>,
    /// The values the arithmetic uses besides the read and constants.
    inputs: Vec<Value>,
    /// The top-level ops holding the launches that use the value (indices).
    consumers: Vec<usize>,
    /// The buffer's `memref.dealloc` (index).
    dealloc: usize,
}

impl Plan {
    /// The value a forwarded slot load stands for (through slot-to-slot copies).
    fn resolve(&self, mut v: Value) -> Value {
        while let Some(w) = self.forwarded.get(&v) {
            v = *w;
        }
        v
    }
}

impl State<'_> {
    /// The position of kernel `name` among the kernels.
    fn kernel(&self, name: &str) -> Option<usize> {
        self.kernels
            .iter()
            .position(|o| o.name == "gpu.func" && o.attr("sym_name").map(parse_str) == Some(name))
    }

    /// Rewrites the reads of `blk` and of the blocks nested in it; `in_loop`: `blk` is
    /// inside a loop (it runs again after its own last op).
    fn blocks(&mut self, blk: &mut Block, in_loop: bool) {
        for op in &mut blk.ops {
            let looping = in_loop || matches!(op.name.as_str(), "scf.for" | "scf.while" | "scf.parallel" | "scf.forall");
            for r in &mut op.regions {
                for b in &mut r.blocks {
                    self.blocks(b, looping);
                }
            }
        }
        let mut i = 0;
        while i < blk.ops.len() {
            // A plan removes the read at `i`: the op now at `i` is the next one.
            match self.plan(&blk.ops, i, in_loop) {
                Some(p) => self.apply(blk, p),
                None => i += 1,
            }
        }
    }

    /// Whether the read at `ops[i]` can stay on the device.
    fn plan(&self, ops: &[Op], i: usize, in_loop: bool) -> Option<Plan> {
        let l = MemrefLoad::of(&ops[i])?;
        let (buf, read) = (l.memref, l.result);
        let index = *l.indices.first()?;
        if l.indices.len() != 1 || !self.consts.contains_key(&index) {
            return None;
        }
        // A one-element buffer allocated in this block, which a launch before wrote.
        let alloc = ops[..i]
            .iter()
            .find_map(|o| MemrefAlloc::of(o, self.m).filter(|a| a.result == buf))?;
        if alloc.stack || alloc.ty.rank() != 1 || alloc.ty.shape[0] != Some(1) {
            return None;
        }
        let launched = ops[..i]
            .iter()
            .any(|o| o.walk_any(&|x| LaunchFunc::of(x).is_some_and(|l| l.args.contains(&buf))));
        if !launched {
            return None;
        }
        let mut live: HashSet<Value> = HashSet::from([read]);
        let mut slots: HashMap<Value, Value> = HashMap::new();
        let mut forwarded = HashMap::new();
        let (mut pure, mut dropped, mut consumers) = (vec![], vec![], vec![]);
        let mut dealloc = None;
        for (j, o) in ops.iter().enumerate().skip(i + 1) {
            let uses_live = o.walk_any(&|x| x.operands.iter().any(|v| live.contains(v)));
            let uses_buf = o.walk_any(&|x| x.operands.contains(&buf));
            if o.name == "memref.dealloc" && o.operands == [buf] {
                dealloc = Some(j);
                continue;
            }
            if uses_buf {
                return None;
            }
            if let Some(s) = MemrefStore::of(o).filter(|s| self.slot_loads.contains_key(&s.memref)) {
                if live.contains(&s.value) {
                    slots.insert(s.memref, s.value);
                    dropped.push(j);
                } else {
                    slots.remove(&s.memref);
                }
                continue;
            }
            if let Some(ld) = MemrefLoad::of(o).filter(|ld| slots.contains_key(&ld.memref)) {
                forwarded.insert(ld.result, slots[&ld.memref]);
                live.insert(ld.result);
                dropped.push(j);
                continue;
            }
            if !o.regions.is_empty() && o.walk_any(&|x| x.operands.iter().any(|v| slots.contains_key(v))) {
                return None;
            }
            if !uses_live {
                continue;
            }
            if is_pure(o) && o.results.len() == 1 {
                live.insert(o.results[0]);
                pure.push(j);
                continue;
            }
            // Every use must be a kernel argument of a launch made from one place.
            let mut ok = true;
            o.walk(&mut |x| {
                if !x.operands.iter().any(|v| live.contains(v)) {
                    return;
                }
                match LaunchFunc::of(x) {
                    Some(lf) => {
                        let in_args =
                            x.operands.iter().filter(|v| live.contains(v)).count() == lf.args.iter().filter(|v| live.contains(v)).count();
                        ok &= in_args && self.launches.get(lf.kernel) == Some(&1) && self.kernel(lf.kernel).is_some();
                    }
                    None => ok = false,
                }
            });
            if !ok {
                return None;
            }
            consumers.push(j);
        }
        // A slot still holding the value must have no other readers: besides the loads
        // forwarded, only loads of this block before the read. In a loop those would
        // read it in the next iteration, unless the block stores to the slot first.
        for s in slots.keys() {
            let reads_of_s = |o: &Op| MemrefLoad::of(o).is_some_and(|l| l.memref == *s);
            let forwarded_here = ops[i..].iter().filter(|o| reads_of_s(o)).count();
            let stored_first = ops[..i]
                .iter()
                .find(|o| o.walk_any(&|x| x.operands.contains(s)))
                .is_some_and(|o| MemrefStore::of(o).is_some_and(|st| st.memref == *s));
            let before = if in_loop && !stored_first {
                0
            } else {
                ops[..i].iter().filter(|o| reads_of_s(o)).count()
            };
            if self.slot_loads.get(s) != Some(&(forwarded_here + before)) {
                return None;
            }
        }
        // The arithmetic comes before the first launch that uses it (its inputs then
        // exist at every launch).
        if consumers.is_empty() || pure.iter().any(|j| *j > consumers[0]) {
            return None;
        }
        let mut plan = Plan {
            at: i,
            buf,
            index,
            read,
            pure,
            dropped,
            forwarded,
            inputs: vec![],
            consumers,
            dealloc: dealloc?,
        };
        // The inputs of the arithmetic other than the read: constants are copied into
        // the kernels, other values become parameters (no `i1`: a kernel takes it as
        // `i32`).
        for j in &plan.pure {
            for v in &ops[*j].operands {
                let v = plan.resolve(*v);
                if !live.contains(&v) && !self.consts.contains_key(&v) && !plan.inputs.contains(&v) {
                    if self.m.ty(v) == "i1" {
                        return None;
                    }
                    plan.inputs.push(v);
                }
            }
        }
        Some(plan)
    }

    fn apply(&mut self, blk: &mut Block, p: Plan) {
        let ops = &mut blk.ops;
        // The values the device computes: the read, the pure ops' results and the
        // forwarded slot loads (each the value stored).
        let mut live: HashSet<Value> = HashSet::from([p.read]);
        live.extend(p.pure.iter().map(|j| ops[*j].results[0]));
        live.extend(p.forwarded.keys().copied());
        let pure_ops: Vec<Op> = p.pure.iter().map(|j| ops[*j].clone()).collect();
        let new_args: Vec<Value> = std::iter::once(p.buf).chain(p.inputs.iter().copied()).collect();
        for &j in &p.consumers {
            let mut edits: Vec<(String, Vec<usize>, Vec<Value>)> = vec![];
            ops[j].walk(&mut |x| {
                if let Some(lf) = LaunchFunc::of(x) {
                    let pos: Vec<usize> = (0..lf.args.len()).filter(|a| live.contains(&lf.args[*a])).collect();
                    if !pos.is_empty() {
                        let host = pos.iter().map(|a| lf.args[*a]).collect();
                        edits.push((lf.kernel.to_string(), pos, host));
                    }
                }
            });
            for (kernel, pos, host) in edits {
                ops[j].walk_mut(&mut |x| {
                    if LaunchFunc::of(x).is_some_and(|lf| lf.kernel == kernel) {
                        set_launch_args(x, &pos, &new_args);
                    }
                });
                self.rewrite_kernel(&kernel, &pos, &host, &p, &pure_ops);
            }
        }
        // The host: the buffer freed after the last reader; the read, its arithmetic and
        // the slot's stores and loads gone.
        let last = *p.consumers.iter().max().expect("consumers");
        let dealloc = ops[p.dealloc].clone();
        let gone: HashSet<usize> = p.pure.iter().chain(&p.dropped).copied().chain([p.dealloc, p.at]).collect();
        let mut out = Vec::with_capacity(ops.len());
        for (j, o) in std::mem::take(ops).into_iter().enumerate() {
            if !gone.contains(&j) {
                out.push(o);
            }
            if j == last {
                out.push(dealloc.clone());
            }
        }
        *ops = out;
    }

    /// Gives kernel `name` the buffer and the plan's inputs in place of its parameters at
    /// `pos` (whose host values were `host`), and computes their values from them as its
    /// first ops (`pure_ops`: the plan's arithmetic).
    fn rewrite_kernel(&mut self, name: &str, pos: &[usize], host: &[Value], p: &Plan, pure_ops: &[Op]) {
        let inputs = &p.inputs;
        let ki = self.kernel(name).expect("the plan checked the kernel");
        let k = &mut self.kernels[ki];
        let m = &mut *self.m;
        let fresh = |m: &mut Module, v: Value| m.value(m.ty(v).to_string());
        let kbuf = fresh(m, p.buf);
        let kin: Vec<Value> = inputs.iter().map(|v| fresh(m, *v)).collect();
        let mut map: HashMap<Value, Value> = inputs.iter().copied().zip(kin.iter().copied()).collect();
        let mut pro = vec![];
        let kidx = fresh(m, p.index);
        let mut c = self.consts[&p.index].clone();
        c.results = vec![kidx];
        pro.push(c);
        let kread = fresh(m, p.read);
        pro.push(Op::new("memref.load").with_operands([kbuf, kidx]).with_results([kread]));
        map.insert(p.read, kread);
        let resolve = |v: Value| p.resolve(v);
        for o in pure_ops {
            let mut o2 = o.clone();
            for v in &mut o2.operands {
                let w = resolve(*v);
                if let std::collections::hash_map::Entry::Vacant(e) = map.entry(w) {
                    // Not computed here and not an input: a host constant, copied.
                    let mut c2 = self.consts[&w].clone();
                    let r = fresh(m, w);
                    c2.results = vec![r];
                    pro.push(c2);
                    e.insert(r);
                }
                *v = map[&w];
            }
            let r = fresh(m, o.results[0]);
            map.insert(o.results[0], r);
            o2.results = vec![r];
            pro.push(o2);
        }
        for o in &mut pro {
            o.loc = k.loc.clone();
        }
        // The parameters: the buffer and the inputs at the first position, the old ones
        // gone (the block offset stays last); their uses read the values computed.
        let shared = workgroup_attributions(k);
        let entry = &mut k.regions[0].blocks[0];
        let n_params = entry.args.len() - shared.min(entry.args.len());
        let uses: HashMap<Value, Value> = pos.iter().zip(host).map(|(a, h)| (entry.args[*a], map[&resolve(*h)])).collect();
        let new: Vec<Value> = std::iter::once(kbuf).chain(kin.iter().copied()).collect();
        let params = splice_at(&entry.args[..n_params], pos, &new);
        let rest: Vec<Value> = entry.args[n_params..].to_vec();
        let ftype = format!(
            "({}) -> ()",
            params.iter().map(|v| m.ty(*v).to_string()).collect::<Vec<_>>().join(", ")
        );
        entry.args = params.into_iter().chain(rest).collect();
        for o in &mut entry.ops {
            o.remap_uses(&uses);
        }
        entry.ops.splice(0..0, pro);
        k.set_attr("function_type", ftype);
    }
}

/// `items` with the ones at `pos` gone and `new` in their place, at the first of them.
fn splice_at(items: &[Value], pos: &[usize], new: &[Value]) -> Vec<Value> {
    let mut out = Vec::with_capacity(items.len() + new.len());
    for (a, v) in items.iter().enumerate() {
        if a == pos[0] {
            out.extend_from_slice(new);
        }
        if !pos.contains(&a) {
            out.push(*v);
        }
    }
    out
}

/// Replaces the kernel operands at `pos` of launch `x` by `new` (at the first of them).
fn set_launch_args(x: &mut Op, pos: &[usize], new: &[Value]) {
    let seg = x.attr("operandSegmentSizes").map(appy_ir::attrs::int_array).unwrap_or_default();
    let n = seg.get(11).copied().unwrap_or(0) as usize;
    let out = splice_at(&x.operands[6..6 + n], pos, new);
    let tail: Vec<Value> = x.operands[6 + n..].to_vec();
    x.operands.truncate(6);
    x.operands.extend(out.iter().copied());
    x.operands.extend(tail);
    x.set_attr(
        "operandSegmentSizes",
        format!("array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, {}, 0>", out.len()),
    );
}
