//! `appy-gpu-vector-loads`: seed 002's coalescing of accesses into vector types
//! (jit4GPU, §5): loads of consecutive elements of a kernel's array parameter, in one
//! block, with no write to memory between them, become one `vector.load` of 16 bytes
//! (`ld.global.v4.f32`, `ld.global.v2.f64`) and an extract per element; stores of
//! consecutive elements with no other access to memory between them become one
//! `vector.store`.
//!
//! The elements' last subscripts must be `e + c` with the same `e` and constants `c`
//! that cover `c0 .. c0 + W` (`W` elements of 16 bytes), `c0` and every coefficient of
//! `e`'s affine form multiples of `W` (`analyses::index`), the other subscripts the same
//! values. After `appy-gpu-map-threads{contiguous=1}` and
//! `appy-gpu-unroll-and-jam`, a thread's lanes are such a run. The address is then a
//! multiple of 16 bytes when the array is: its base address is, and, for an array of
//! more than one axis, its last axis has a multiple of `W` elements. That is checked at
//! run time, once per kernel: the kernel's body is versioned, the vector code where the
//! check holds, the original code otherwise (a view of a torch tensor at an odd offset
//! takes the second branch, with the same results). The runtime's access analysis
//! reads a `vector.load`/`vector.store` as up to four elements along the last axis
//! (`appy_runtime::regions`).

use crate::analyses::barriers::{accesses_global, kernels, private_slots, synchronises};
use crate::analyses::index::{IndexForm, Term, index_form_through};
use crate::{Pass, PassInfo};
use appy_ir::build::{Builder, IPred};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The pass.
pub struct VectorLoads;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-gpu-vector-loads",
    description: "gpu → gpu: consecutive loads and stores of an array as 16-byte vector accesses, the kernel versioned on alignment (seed 002)",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(VectorLoads)),
};

/// The bytes of one vector access.
const VECTOR_BYTES: i64 = 16;

impl Pass for VectorLoads {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| {
            for g in rw.top.iter_mut().filter(|o| o.name == "gpu.module") {
                for k in kernels(g) {
                    kernel(&mut rw.b, k);
                }
            }
        });
        Ok(())
    }
}

/// A run of accesses that becomes one vector access.
struct Group {
    /// The array.
    mem: Value,
    /// Elements per vector.
    width: i64,
    /// The vector's type (`vector<4xf32>`).
    vty: String,
    /// Walk numbers of its accesses and their lanes (`c - c0`): one store per lane,
    /// or every load of the lane's element in the run.
    members: Vec<(usize, i64)>,
    /// Stores (else loads).
    store: bool,
    /// Kernel arguments that must be multiples of `width` (terms of the subscript
    /// whose coefficient is not), checked at run time.
    checks: Vec<Value>,
}

/// The vector type and width for arrays of `elem`, if it has one.
fn vector_of(elem: &str) -> Option<(i64, String)> {
    let bytes = match elem {
        "f32" | "i32" => 4,
        "f64" | "i64" => 8,
        _ => return None,
    };
    let w = VECTOR_BYTES / bytes;
    Some((w, format!("vector<{w}x{elem}>")))
}

/// The element type and rank of a plain global memref type (`memref<?x?xf32>`).
fn plain_memref(ty: &str) -> Option<(&str, usize)> {
    let inner = ty.strip_prefix("memref<")?.strip_suffix('>')?;
    if inner.contains(',') || inner.contains('<') {
        return None;
    }
    let parts: Vec<&str> = inner.split('x').collect();
    let (elem, dims) = parts.split_last()?;
    Some((elem, dims.len()))
}

/// What the subscripts' affine forms are computed from: the kernel's ops by result,
/// and its `scf.for` loops by induction variable (lower bound, step).
struct Forms<'a> {
    defs: HashMap<Value, &'a Op>,
    loops: HashMap<Value, (Value, Value)>,
}

impl Forms<'_> {
    /// The affine form of `v` over the kernel's arguments, loop trip numbers and
    /// other values: an induction variable `i` of a loop from `lb` by `s` is
    /// `form(lb) + s * t` (`t` keeps `i`'s name), so that a chunk loop's `j0` by 1024
    /// is a multiple of 4 when its start is.
    fn form(&self, v: Value, depth: usize) -> Option<IndexForm> {
        let f = index_form_through(v, &[], &HashMap::new(), &self.defs, 0)?;
        if depth > 4 {
            // A loop variable's term must mean its trip everywhere: give up.
            return None;
        }
        let mut out = IndexForm::constant(f.c);
        for (t, coeff) in &f.terms {
            let Term::Sym(x) = t else { return None };
            let step = self
                .loops
                .get(x)
                .and_then(|(_, st)| index_form_through(*st, &[], &HashMap::new(), &self.defs, 0)?.as_const());
            let part = match (self.loops.get(x), step) {
                (Some((lb, _)), Some(step)) => {
                    let trip = IndexForm::var(Term::Sym(*x)).scale(step)?;
                    self.form(*lb, depth + 1)?.checked_add(&trip)?
                }
                _ => IndexForm::var(*t),
            };
            out = out.checked_add(&part.scale(*coeff)?)?;
        }
        Some(out)
    }
}

impl Forms<'_> {
    /// Whether `x` is a multiple of `w`: the kernel arguments that must be multiples
    /// of `w` (checked at run time) for it to be, or `None` when that cannot be said
    /// (a product is a multiple when a factor is: a block's first element is the block
    /// number times the group's size, a launch parameter).
    fn multiple(&self, x: Value, w: i64, args: &HashSet<Value>, depth: usize) -> Option<Vec<Value>> {
        if args.contains(&x) {
            return Some(vec![x]);
        }
        let op = self.defs.get(&x)?;
        if depth > 8 {
            return None;
        }
        match op.name.as_str() {
            "arith.constant" => {
                let n: i64 = op.attr("value")?.split(':').next()?.trim().parse().ok()?;
                (n % w == 0).then(Vec::new)
            }
            "arith.index_cast" | "arith.index_castui" | "arith.extsi" => self.multiple(op.operands[0], w, args, depth + 1),
            "arith.muli" => {
                let a = self.multiple(op.operands[0], w, args, depth + 1);
                let b = self.multiple(op.operands[1], w, args, depth + 1);
                match (a, b) {
                    (Some(a), Some(b)) => Some(if a.len() <= b.len() { a } else { b }),
                    (a, b) => a.or(b),
                }
            }
            "arith.addi" | "arith.subi" => {
                let mut a = self.multiple(op.operands[0], w, args, depth + 1)?;
                a.extend(self.multiple(op.operands[1], w, args, depth + 1)?);
                Some(a)
            }
            _ => None,
        }
    }
}

fn kernel(b: &mut Builder, k: &mut Op) {
    let entry_args: HashSet<Value> = k.regions[0].blocks[0].args.iter().copied().collect();
    let ops = &k.regions[0].blocks[0].ops;
    let private = private_slots(ops);
    let mut all: Vec<&Op> = vec![];
    for o in ops {
        o.walk(&mut |x| all.push(x));
    }
    let mut defs: HashMap<Value, &Op> = HashMap::new();
    for o in &all {
        for r in &o.results {
            defs.insert(*r, o);
        }
    }
    let loops: HashMap<Value, (Value, Value)> = all
        .iter()
        .filter(|o| o.name == "scf.for")
        .map(|o| (o.regions[0].blocks[0].args[0], (o.operands[0], o.operands[2])))
        .collect();
    let forms = Forms { defs, loops };
    // Number every op in walk order; find the groups block by block.
    let mut groups = vec![];
    block_groups(ops, &mut 0, b, &forms, &entry_args, &private, &mut groups);
    if groups.is_empty() {
        return;
    }
    let arrays: BTreeMap<Value, i64> = groups.iter().map(|g| (g.mem, g.width)).collect();
    let mut checks: BTreeMap<Value, i64> = BTreeMap::new();
    for g in &groups {
        for c in &g.checks {
            let w = checks.entry(*c).or_insert(1);
            *w = (*w).max(g.width);
        }
    }
    let by_member: HashMap<usize, (usize, i64)> = groups
        .iter()
        .enumerate()
        .flat_map(|(gi, g)| g.members.iter().map(move |(m, lane)| (*m, (gi, *lane))))
        .collect();
    let original = std::mem::take(&mut k.regions[0].blocks[0].ops);
    let (ret, body) = original.split_last().expect("gpu.func has a terminator");
    // The vector version.
    let mut vec_ops = body.to_vec();
    let mut counter = 0;
    let mut state = Rewrite {
        groups: &groups,
        by_member: &by_member,
        values: HashMap::new(),
        map: HashMap::new(),
    };
    vectorize(&mut vec_ops, &mut counter, b, &mut state);
    // The original, with fresh values.
    let mut fresh = HashMap::new();
    let mut orig_ops: Vec<Op> = body.iter().map(|o| b.m.clone_op(o, &mut fresh)).collect();
    vec_ops.push(Builder::yield_op(&[]));
    orig_ops.push(Builder::yield_op(&[]));
    // Whether every array the vector code reads or writes is aligned for it.
    b.loc = k.loc.clone();
    let mut ok: Option<Value> = None;
    for (mem, w) in &arrays {
        let ty = b.m.ty(*mem).to_string();
        let Some((_, rank)) = plain_memref(&ty) else { continue };
        let ptr = b.op1("memref.extract_aligned_pointer_as_index", &[*mem], "index", &[]);
        let align = b.index(VECTOR_BYTES);
        let rem = b.bin("arith.remui", ptr, align);
        let zero = b.index(0);
        let mut c = b.cmpi(IPred::Eq, rem, zero);
        if rank >= 2 {
            let axis = b.index(rank as i64 - 1);
            let n = b.op1("memref.dim", &[*mem, axis], "index", &[]);
            let cw = b.index(*w);
            let r = b.bin("arith.remui", n, cw);
            let c2 = b.cmpi(IPred::Eq, r, zero);
            c = b.bin("arith.andi", c, c2);
        }
        ok = Some(match ok {
            Some(prev) => b.bin("arith.andi", prev, c),
            None => c,
        });
    }
    for (v, w) in &checks {
        let zero = b.index(0);
        let cw = b.index(*w);
        let x = if b.m.ty(*v) == "index" { *v } else { b.to_index(*v) };
        let r = b.bin("arith.remsi", x, cw);
        let c = b.cmpi(IPred::Eq, r, zero);
        ok = Some(match ok {
            Some(prev) => b.bin("arith.andi", prev, c),
            None => c,
        });
    }
    let ok = ok.expect("groups have arrays");
    let mut new_ops = b.take();
    new_ops.push(
        Op::new("scf.if")
            .with_operands([ok])
            .with_region(Builder::region(vec![], vec_ops))
            .with_region(Builder::region(vec![], orig_ops))
            .with_loc(k.loc.clone()),
    );
    new_ops.push(ret.clone());
    k.regions[0].blocks[0].ops = new_ops;
}

/// Numbers `op` and the ops inside it in walk order (as [`Op::walk`]), and finds the
/// groups of each block inside it.
fn find_groups(
    op: &Op,
    counter: &mut usize,
    b: &Builder,
    defs: &Forms<'_>,
    args: &HashSet<Value>,
    private: &HashSet<Value>,
    groups: &mut Vec<Group>,
) {
    *counter += 1;
    for r in &op.regions {
        for blk in &r.blocks {
            block_groups(&blk.ops, counter, b, defs, args, private, groups);
        }
    }
}

/// An access that may join a group: its walk number, array, the other subscripts, the
/// last subscript's form without its constant, and that constant.
struct Cand {
    id: usize,
    mem: Value,
    lead: Vec<Value>,
    sym: IndexForm,
    c: i64,
    store: bool,
}

fn block_groups(
    ops: &[Op],
    counter: &mut usize,
    b: &Builder,
    defs: &Forms<'_>,
    args: &HashSet<Value>,
    private: &HashSet<Value>,
    groups: &mut Vec<Group>,
) {
    let mut loads: Vec<Cand> = vec![];
    let mut stores: Vec<Cand> = vec![];
    for o in ops {
        let id = *counter + 1;
        let cand = |mem: Value, idx: &[Value], store: bool| -> Option<Cand> {
            if !args.contains(&mem) || idx.is_empty() {
                return None;
            }
            plain_memref(b.m.ty(mem)).and_then(|(elem, _)| vector_of(elem))?;
            let (last, lead) = idx.split_last()?;
            let f = defs.form(*last, 0)?;
            let c = f.c;
            let mut sym = f;
            sym.c = 0;
            Some(Cand {
                id,
                mem,
                lead: lead.to_vec(),
                sym,
                c,
                store,
            })
        };
        // Ops that synchronise threads end a run as a write would.
        let touches = |o: &Op, writes_only: bool| synchronises(o) || accesses_global(o, private, writes_only);
        match o.name.as_str() {
            "memref.load" if o.regions.is_empty() => {
                if let Some(c) = cand(o.operands[0], &o.operands[1..], false) {
                    loads.push(c);
                }
                // A load ends a run of stores.
                if !private.contains(&o.operands[0]) {
                    close(&mut stores, b, defs, args, groups);
                }
            }
            "memref.store" => {
                // A store ends a run of loads; it may join a run of stores, unless it
                // stores into the same array as the run elsewhere (where it may
                // overwrite an element a member stores: members move to the last).
                if !private.contains(&o.operands[1]) {
                    close(&mut loads, b, defs, args, groups);
                }
                match cand(o.operands[1], &o.operands[2..], true) {
                    Some(c) => {
                        // Members move to the last one: past no store to another array
                        // (two parameters may be one array) or elsewhere in this one.
                        if stores.iter().any(|d| d.mem != c.mem || d.lead != c.lead || d.sym != c.sym) {
                            close(&mut stores, b, defs, args, groups);
                        }
                        stores.push(c)
                    }
                    None if !private.contains(&o.operands[1]) => close(&mut stores, b, defs, args, groups),
                    None => {}
                }
            }
            _ => {
                if touches(o, true) {
                    close(&mut loads, b, defs, args, groups);
                }
                if touches(o, false) {
                    close(&mut stores, b, defs, args, groups);
                }
            }
        }
        find_groups(o, counter, b, defs, args, private, groups);
    }
    close(&mut loads, b, defs, args, groups);
    close(&mut stores, b, defs, args, groups);
}

/// Forms the groups of a run of candidate accesses, and empties it.
fn close(run: &mut Vec<Cand>, b: &Builder, forms: &Forms<'_>, args: &HashSet<Value>, groups: &mut Vec<Group>) {
    let cands = std::mem::take(run);
    let mut used: HashSet<usize> = HashSet::new();
    for (k, c) in cands.iter().enumerate() {
        if used.contains(&c.id) {
            continue;
        }
        let Some((elem, _)) = plain_memref(b.m.ty(c.mem)) else { continue };
        let Some((w, vty)) = vector_of(elem) else { continue };
        // Terms whose coefficient is not a multiple of `w`: kernel arguments, checked
        // at run time.
        let mut checks = vec![];
        let mut aligned = true;
        for (t, coeff) in &c.sym.terms {
            if coeff % w == 0 {
                continue;
            }
            let Term::Sym(x) = t else {
                aligned = false;
                continue;
            };
            match forms.multiple(*x, w, args, 0) {
                Some(vs) if vs.iter().all(|v| matches!(b.m.ty(*v), "index" | "i64" | "i32")) => checks.extend(vs),
                _ => aligned = false,
            }
        }
        if !aligned {
            continue;
        }
        // The same array, other subscripts and symbolic part: accesses by constant.
        let mut lanes: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
        let mut twice = false;
        for d in &cands[k..] {
            if d.mem == c.mem && d.lead == c.lead && d.sym == c.sym && !used.contains(&d.id) {
                let at = lanes.entry(d.c).or_default();
                // Two stores of one element: the run is left alone.
                twice |= d.store && !at.is_empty();
                at.push(d.id);
            }
        }
        if twice {
            continue;
        }
        let starts: Vec<i64> = lanes.keys().copied().filter(|c0| c0.rem_euclid(w) == 0).collect();
        for c0 in starts {
            if !(c0..c0 + w).all(|c| lanes.contains_key(&c)) {
                continue;
            }
            let members: Vec<(usize, i64)> = (c0..c0 + w).flat_map(|c| lanes[&c].iter().map(move |id| (*id, c - c0))).collect();
            if members.iter().any(|(m, _)| used.contains(m)) {
                continue;
            }
            used.extend(members.iter().map(|(m, _)| *m));
            groups.push(Group {
                mem: c.mem,
                width: w,
                vty: vty.clone(),
                members,
                store: c.store,
                checks: checks.clone(),
            });
        }
    }
}

/// The state of the rewrite of the vector version.
struct Rewrite<'a> {
    groups: &'a [Group],
    by_member: &'a HashMap<usize, (usize, i64)>,
    /// A load group's vector, once loaded.
    values: HashMap<usize, Value>,
    /// Loads replaced by extracts.
    map: HashMap<Value, Value>,
}

/// Rewrites `ops` (numbered in walk order from `counter`) with the groups' vector
/// accesses.
fn vectorize(ops: &mut Vec<Op>, counter: &mut usize, b: &mut Builder, st: &mut Rewrite<'_>) {
    let old = std::mem::take(ops);
    // Stores of a group, held until its last member.
    let mut held: HashMap<usize, Vec<(usize, Value)>> = HashMap::new();
    for mut o in old {
        *counter += 1;
        let id = *counter;
        for v in &mut o.operands {
            if let Some(n) = st.map.get(v) {
                *v = *n;
            }
        }
        let member = st.by_member.get(&id).copied();
        let mut regions = std::mem::take(&mut o.regions);
        for r in &mut regions {
            for blk in &mut r.blocks {
                vectorize(&mut blk.ops, counter, b, st);
            }
        }
        o.regions = regions;
        let Some((gi, lane)) = member else {
            ops.push(o);
            continue;
        };
        let g = &st.groups[gi];
        b.loc = o.loc.clone();
        if !g.store {
            let v = match st.values.get(&gi) {
                Some(v) => *v,
                None => {
                    // The first member loaded: the vector from its lane-0 address.
                    let idx = &o.operands[1..];
                    let (last, lead) = idx.split_last().expect("subscripts");
                    let back = b.index(-lane);
                    let first = b.bin("arith.addi", *last, back);
                    let mut operands = vec![g.mem];
                    operands.extend(lead.iter().copied());
                    operands.push(first);
                    let v = b.op1(
                        "vector.load",
                        &operands,
                        &g.vty,
                        &[("alignment", format!("{} : i64", VECTOR_BYTES))],
                    );
                    st.values.insert(gi, v);
                    v
                }
            };
            let x = b.m.value(b.m.ty(o.results[0]).to_string());
            b.push(
                Op::new("vector.extract")
                    .with_operands([v])
                    .with_results([x])
                    .with_attr("static_position", format!("array<i64: {lane}>")),
            );
            ops.extend(b.take());
            st.map.insert(o.results[0], x);
            continue;
        }
        // A store: held until the group's last member, which stores the vector.
        let h = held.entry(gi).or_default();
        h.push((lane as usize, o.operands[0]));
        if h.len() < g.width as usize {
            continue;
        }
        let mut elems = vec![Value(0); g.width as usize];
        for (l, v) in h.iter() {
            elems[*l] = *v;
        }
        let idx = &o.operands[2..];
        let (last, lead) = idx.split_last().expect("subscripts");
        let back = b.index(-lane);
        let first = b.bin("arith.addi", *last, back);
        let vec = b.op1("vector.from_elements", &elems, &g.vty, &[]);
        let mut operands = vec![vec, g.mem];
        operands.extend(lead.iter().copied());
        operands.push(first);
        b.op0("vector.store", &operands, &[("alignment", format!("{} : i64", VECTOR_BYTES))]);
        ops.extend(b.take());
    }
}
