//! `appy-kernel-form{cpu=0|1}`: `loops` → `kernel`. Writes Loopy's kernel model onto
//! each top-level parallel nest (a kernel), as `appy_ir::kernel` describes: its name
//! and domain parameters, every loop's inames, tags and domain (`kernel::domain`),
//! every statement's id, `within` inames, dependences and `nosync`
//! (`kernel::statements`), and every temporary's address space.
//!
//! The pass only adds attributes: the ops are unchanged, so code generation from this
//! level is what it was from `loops`. A loop without a name gets one (`_appy_l`, made
//! unique in the function), a loop without tags gets those of today's schedule
//! (`LoopKind::tag`; nested groups take the next grid axes `g.1`, `g.2`). Kernels are
//! named `_appy_<function>_k<N>`, numbered through the module in order, which is the
//! name `appy-gpu-outline` gives the `gpu.func`.
//!
//! With `cpu=1` (the CPU pipeline, before `appy-cpu-openmp`) the nests are not
//! strip-mined: a kernel's groups are its parallel loop's iterations, and every
//! `appy.buffer` is private (a thread's stack array).

use super::domain::{Expr, Namer, domain};
use super::statements::{Items, dependences, root, statements};
use crate::analyses::nest::{int_constants, trip_count};
use crate::util::is_parallel;
use crate::{Pass, PassInfo, PassOpt};
use appy_ir::attrs::{parse_str, str_attr};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::kernel::{ARG_NAMES, ATOMIC, DEP, DOMAIN, ID, KERNEL, LOOP_NAME, NOSYNC, PARAMS, SPACE, Space, WITHIN, domain_params, verify};
use appy_ir::schedule::{BUFFER, LoopKind, Tag, parse_str_array, str_array, unique_iname};
use std::collections::{BTreeSet, HashMap, HashSet};

/// The pass.
pub struct Form {
    /// For the CPU back end.
    pub cpu: bool,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-kernel-form",
    description: "loops → kernel: Loopy's model on each top-level parallel nest (domains, statements with ids and dependences, temporaries by address space, tags)",
    options: &[PassOpt::CPU],
    file: file!(),
    make: |o| Ok(Box::new(Form { cpu: o.flag("cpu")? })),
};

fn is_loop(o: &Op) -> bool {
    matches!(o.name.as_str(), "scf.for" | "scf.parallel")
}

/// A loop's induction variables (an `scf.for`'s other block arguments carry values).
fn loop_ivs(o: &Op) -> &[Value] {
    let args = &o.body(0).args;
    if o.name == "scf.for" { &args[..1] } else { args }
}

impl Pass for Form {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let mut count = 0usize;
        for f in m.body_mut().iter_mut() {
            if f.name != "func.func" || f.regions.is_empty() || f.regions[0].blocks.is_empty() {
                continue;
            }
            let fname = f.attr("sym_name").map(parse_str).unwrap_or("f").to_string();
            let names = f.attr(ARG_NAMES).map(parse_str_array).unwrap_or_default();
            let snapshot = f.clone();
            let mut taken: HashSet<String> = HashSet::new();
            snapshot.walk(&mut |o| taken.extend(o.inames()));
            let mut st = FuncState {
                namer: Namer::new(&snapshot, &names),
                consts: int_constants(std::iter::once(&snapshot)),
                taken,
                globals: HashSet::new(),
                cpu: self.cpu,
                fname,
            };
            let mut ops = std::mem::take(&mut f.regions[0].blocks[0].ops);
            st.host(&mut ops, &mut count);
            f.regions[0].blocks[0].ops = ops;
            // Arrays the host allocates and kernels use: global temporaries.
            let globals = st.globals;
            f.walk_mut(&mut |o| {
                if o.name == "memref.alloc" && o.results.first().is_some_and(|r| globals.contains(r)) {
                    o.set_attr(SPACE, str_attr(Space::Global.name()));
                }
            });
        }
        verify(m)
    }
}

struct FuncState<'a> {
    namer: Namer<'a>,
    consts: HashMap<Value, i64>,
    taken: HashSet<String>,
    globals: HashSet<Value>,
    cpu: bool,
    fname: String,
}

impl FuncState<'_> {
    fn host(&mut self, ops: &mut [Op], count: &mut usize) {
        for op in ops {
            if is_parallel(op) {
                let name = format!("_appy_{}_k{}", self.fname, *count);
                *count += 1;
                self.kernel(op, name);
            } else {
                for r in &mut op.regions {
                    for b in &mut r.blocks {
                        self.host(&mut b.ops, count);
                    }
                }
            }
        }
    }

    fn kernel(&mut self, k: &mut Op, name: String) {
        // The arrays of the host it uses.
        let defs: HashMap<Value, &Op> = self.namer.defs.clone();
        for v in k.free_values() {
            let r = root(v, &defs);
            if defs.get(&r).is_some_and(|d| d.name == "memref.alloc") {
                self.globals.insert(r);
            }
        }
        // Names and tags.
        self.name_loops(k, 0);
        // Domains.
        let mut inside = HashSet::new();
        k.walk(&mut |o| {
            inside.extend(o.results.iter().copied());
            for r in &o.regions {
                for b in &r.blocks {
                    inside.extend(b.args.iter().copied());
                }
            }
        });
        self.namer.inside = inside;
        self.domains(k);
        let mut params = BTreeSet::new();
        k.walk(&mut |o| {
            if let Some(d) = o.attr(DOMAIN) {
                params.extend(domain_params(parse_str(d)));
            }
        });
        // Statements and temporaries.
        let mut ivs = vec![];
        let mut par: HashMap<Value, Option<i64>> = HashMap::new();
        let mut groups: HashSet<Value> = HashSet::new();
        let mut has_lanes = false;
        k.walk(&mut |o| {
            if is_loop(o) {
                let args = loop_ivs(o);
                ivs.extend(args.iter().copied());
                if o.name == "scf.parallel" {
                    let kind = LoopKind::of(o);
                    has_lanes |= kind == Some(LoopKind::Lanes);
                    if kind == Some(LoopKind::Workers) {
                        groups.extend(args.iter().copied());
                    }
                    let d = args.len();
                    for (j, a) in args.iter().enumerate() {
                        let c = |x: usize| self.consts.get(&o.operands[x]).copied();
                        let ext = match (c(j), c(d + j), c(2 * d + j)) {
                            (Some(l), Some(u), Some(s)) if s > 0 => Some(trip_count(l, u, s)),
                            _ => None,
                        };
                        par.insert(*a, ext);
                    }
                }
            }
        });
        let local = has_lanes && !self.cpu;
        let (mut private, mut in_local) = (HashSet::new(), HashSet::new());
        k.walk_mut(&mut |o| {
            if o.name == "memref.alloca" {
                let space = if local && o.has_attr(BUFFER) {
                    Space::Local
                } else {
                    Space::Private
                };
                match space {
                    Space::Private => private.extend(o.results.iter().copied()),
                    Space::Local => in_local.extend(o.results.iter().copied()),
                    Space::Global => {}
                }
                o.set_attr(SPACE, str_attr(space.name()));
            }
        });
        let stmts = statements(k, &ivs, &defs);
        let items = Items {
            private: &private,
            local: &in_local,
            par: &par,
            groups: &groups,
            ivs: &ivs,
        };
        let deps = dependences(&stmts, &items);
        let ids: Vec<String> = (0..stmts.len()).map(|s| format!("s{s}")).collect();
        let mut n = 0usize;
        annotate(k, &mut vec![], &mut |o, within| {
            let (s, d) = (&stmts[n], &deps[n]);
            o.set_attr(ID, str_attr(&ids[n]));
            o.set_attr(WITHIN, str_array(within));
            if !d.dep.is_empty() {
                let dep: Vec<&String> = d.dep.iter().map(|x| &ids[*x]).collect();
                o.set_attr(DEP, str_array(&dep));
            }
            if !d.nosync.is_empty() {
                let ns: Vec<String> = d.nosync.iter().map(|(x, scope)| format!("{}@{}", ids[*x], scope.name())).collect();
                o.set_attr(NOSYNC, str_array(&ns));
            }
            if s.atomic {
                o.set_attr(ATOMIC, "unit");
            }
            n += 1;
        });
        k.set_attr(KERNEL, str_attr(&name));
        let params: Vec<String> = params.into_iter().collect();
        k.set_attr(PARAMS, str_array(&params));
    }

    /// Names every loop of the kernel that has no name, and tags every one without
    /// tags as today's schedule runs it; `axis` is the next grid axis.
    fn name_loops(&mut self, op: &mut Op, axis: u32) {
        let mut next = axis;
        if is_loop(op) {
            let d = loop_ivs(op).len();
            if op.inames().len() != d {
                let names: Vec<String> = (0..d)
                    .map(|_| {
                        let n = unique_iname(LOOP_NAME, |s| self.taken.contains(s));
                        self.taken.insert(n.clone());
                        n
                    })
                    .collect();
                op.set_inames(&names);
            }
            let kind = LoopKind::of(op).unwrap_or(LoopKind::Plain);
            if op.tags().len() != d {
                let tags: Vec<Tag> = (0..d as u32)
                    .map(|j| match kind {
                        LoopKind::Workers => Tag::Group(axis + j),
                        k => k.tag(j),
                    })
                    .collect();
                op.set_tags(&tags);
            }
            let groups = op.tags().iter().filter(|t| matches!(t, Tag::Group(_))).count() as u32;
            next = axis + groups;
        }
        for r in &mut op.regions {
            for b in &mut r.blocks {
                for o in &mut b.ops {
                    self.name_loops(o, next);
                }
            }
        }
    }

    /// Writes every loop's domain, outermost first (its bounds may use the inames of
    /// the loops around it).
    fn domains(&mut self, op: &mut Op) {
        if is_loop(op) {
            let d = loop_ivs(op).len();
            let names = op.inames();
            let mut bounds: Vec<(Expr, Expr, Expr)> = vec![];
            for j in 0..d {
                let e = |s: &mut Self, x: usize| s.namer.expr(op.operands[x * d + j]);
                let (lb, ub, st) = (e(self, 0), e(self, 1), e(self, 2));
                bounds.push((lb, ub, st));
            }
            for (a, n) in loop_ivs(op).to_vec().iter().zip(&names) {
                self.namer.ivs.insert(*a, n.clone());
            }
            op.set_attr(DOMAIN, str_attr(&domain(&names, &bounds, &self.taken)));
        }
        for r in &mut op.regions {
            for b in &mut r.blocks {
                for o in &mut b.ops {
                    self.domains(o);
                }
            }
        }
    }
}

/// Calls `f` on every statement of `op` in order (the order of
/// `statements::statements`), with the inames of the loops around it.
fn annotate(op: &mut Op, within: &mut Vec<String>, f: &mut impl FnMut(&mut Op, &[String])) {
    if super::statements::is_statement(op) {
        f(op, within);
        return;
    }
    let n = within.len();
    if is_loop(op) {
        within.extend(op.inames());
    }
    for r in &mut op.regions {
        for b in &mut r.blocks {
            for o in &mut b.ops {
                annotate(o, within, f);
            }
        }
    }
    within.truncate(n);
}
