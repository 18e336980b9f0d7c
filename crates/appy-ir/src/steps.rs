//! The step schedule of a `gpu`-level function (seed 003's FlatAPT): its top-level work
//! (kernel launches, library calls, host loops, the host's own array operations) as a
//! data-flow graph, and the steps of that graph: sets of nodes that depend on nothing in
//! their own step, each node after a node it depends on in the step before. Nodes of
//! one step may run at the same time (on separate streams, or split between devices).
//!
//! Dependences are those of the arrays each node reads and writes (read after write,
//! write after read, write after write), by their root (parameter or allocation, through
//! views), and of the values a node computes that a later node uses. A kernel reads or
//! writes the arrays passed for the parameters its body reads or writes. Whole arrays
//! are compared here; the runtime's access boxes can only remove edges.

use crate::attrs::parse_str;
use crate::effects::{Access, effects};
use crate::ir::{Module, Op, Value};
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write;

/// What a node of the schedule is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// Launches of these kernels (one, unless a host branch holds several).
    Kernel(Vec<String>),
    /// A library call (`appy.gemm`, `appy.trsv`, `appy.potrf`).
    Library(String),
    /// A host loop whose body launches kernels or calls libraries (a time loop).
    Loop(Vec<String>),
    /// The host's own operation on arrays (an allocation, a store, a load, a copy).
    Host(String),
}

/// One node: what it is, the arrays it reads and writes (source or host names).
#[derive(Clone, Debug)]
pub struct Node {
    /// What it is.
    pub kind: NodeKind,
    /// The arrays it reads.
    pub reads: BTreeSet<String>,
    /// The arrays it writes.
    pub writes: BTreeSet<String>,
}

/// A function's step schedule.
#[derive(Debug)]
pub struct Steps {
    /// The function's name.
    pub func: String,
    /// The data-flow graph: an edge from each node to the nodes that depend on it.
    pub graph: DiGraph<Node, ()>,
    /// The steps, in order; each holds node indices in program order.
    pub steps: Vec<Vec<NodeIndex>>,
}

impl Steps {
    /// The most nodes of one step.
    pub fn width(&self) -> usize {
        self.steps.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// The schedule as `appy-opt --emit=schedule` prints it.
    pub fn render(&self) -> String {
        let mut s = format!(
            "// step schedule of @{}: {} nodes in {} steps, at most {} at once\n",
            self.func,
            self.graph.node_count(),
            self.steps.len(),
            self.width()
        );
        for (k, step) in self.steps.iter().enumerate() {
            let _ = writeln!(s, "step {k}:");
            for n in step {
                let node = &self.graph[*n];
                let what = match &node.kind {
                    NodeKind::Kernel(k) => format!("kernel {}", k.join(" + ")),
                    NodeKind::Library(l) => format!("library {l}"),
                    NodeKind::Loop(k) => format!("loop over {}", k.join(", ")),
                    NodeKind::Host(op) => format!("host {op}"),
                };
                let list = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(", ");
                let _ = writeln!(
                    s,
                    "  n{}: {what} (reads: {}; writes: {})",
                    n.index(),
                    list(&node.reads),
                    list(&node.writes)
                );
            }
        }
        s
    }
}

/// The step schedules of the host functions of a `gpu`-level module.
pub fn of_module(m: &Module) -> Vec<Steps> {
    let kernels = kernel_effects(m);
    m.body()
        .iter()
        .filter(|f| f.name == "func.func" && !f.regions.is_empty() && !f.regions[0].blocks.is_empty())
        .map(|f| of_function(f, &kernels))
        .collect()
}

/// Per kernel: for each parameter, whether the body reads it and whether it writes it.
type KernelEffects = HashMap<String, Vec<(bool, bool)>>;

fn kernel_effects(m: &Module) -> KernelEffects {
    let mut out = HashMap::new();
    for gm in m.body().iter().filter(|o| o.name == "gpu.module") {
        for k in gm.regions.iter().flat_map(|r| &r.blocks).flat_map(|b| &b.ops) {
            let Some(blk) = k.regions.first().and_then(|r| r.blocks.first()) else {
                continue;
            };
            let name = k.attr("sym_name").map(parse_str).unwrap_or("").to_string();
            let mut defs = HashMap::new();
            for o in &blk.ops {
                o.walk(&mut |x| {
                    for r in &x.results {
                        defs.insert(*r, x.clone());
                    }
                });
            }
            let root = |v: Value| crate::effects::root(v, |v| defs.get(&v));
            let mut rw = vec![(false, false); blk.args.len()];
            for o in &blk.ops {
                o.walk(&mut |x| {
                    let e = effects(x);
                    for (access, write) in [(e.reads, false), (e.writes, true)] {
                        let touched: Vec<Value> = match access {
                            Access::None => vec![],
                            Access::Operands(ix) => ix.iter().filter_map(|i| x.operands.get(*i).copied()).collect(),
                            Access::Any => x.operands.clone(),
                        };
                        for v in touched {
                            if let Some(p) = blk.args.iter().position(|a| *a == root(v)) {
                                if write {
                                    rw[p].1 = true;
                                } else {
                                    rw[p].0 = true;
                                }
                            }
                        }
                    }
                });
            }
            out.insert(name, rw);
        }
    }
    out
}

/// A node's accesses while it is being formed.
#[derive(Default)]
struct Acc {
    reads: HashSet<Value>,
    writes: HashSet<Value>,
    kernels: Vec<String>,
    library: Option<String>,
}

fn of_function(f: &Op, kernels: &KernelEffects) -> Steps {
    let func = f.attr("sym_name").map(parse_str).unwrap_or("").to_string();
    let blk = &f.regions[0].blocks[0];
    let arg_names: Vec<String> = f.attr("appy.arg_names").map(crate::schedule::parse_str_array).unwrap_or_default();
    let mut names: HashMap<Value, String> = HashMap::new();
    for (k, a) in blk.args.iter().enumerate() {
        names.insert(*a, arg_names.get(k).cloned().unwrap_or_else(|| format!("arg{k}")));
    }
    let mut defs: HashMap<Value, &Op> = HashMap::new();
    for o in &blk.ops {
        o.walk(&mut |x| {
            for r in &x.results {
                defs.insert(*r, x);
            }
        });
    }
    let mut allocs = 0;
    let mut graph: DiGraph<Node, ()> = DiGraph::new();
    // The nodes each value was computed from; the last writer and the readers since,
    // per array root.
    let mut producers: HashMap<Value, BTreeSet<NodeIndex>> = HashMap::new();
    let mut last_write: HashMap<Value, NodeIndex> = HashMap::new();
    let mut readers: HashMap<Value, Vec<NodeIndex>> = HashMap::new();
    let mut slot_producers: HashMap<Value, BTreeSet<NodeIndex>> = HashMap::new();
    for op in &blk.ops {
        if op.name == "func.return" {
            continue;
        }
        let mut acc = Acc::default();
        collect(op, kernels, &|v| crate::effects::root(v, |v| defs.get(&v).copied()), &mut acc);
        // Arrays are allocated with `memref.alloc`; `memref.alloca` makes the host's
        // scalar slots.
        let allocates = op.walk_any(&|o| o.name == "memref.alloc");
        // Rank-0 slots are the host's scalars: their stores and loads are value flow.
        let is_slot = |v: &Value| defs.get(v).is_some_and(|d| d.name == "memref.alloca");
        let arrays = |set: &HashSet<Value>| -> Vec<Value> { set.iter().copied().filter(|v| !is_slot(v)).collect() };
        let (reads, writes) = (arrays(&acc.reads), arrays(&acc.writes));
        let mut from: BTreeSet<NodeIndex> = op
            .free_values()
            .iter()
            .chain(&op.operands)
            .filter_map(|v| producers.get(v))
            .flatten()
            .copied()
            .collect();
        for v in acc.reads.iter().filter(|v| is_slot(v)) {
            from.extend(slot_producers.get(v).into_iter().flatten());
        }
        let slot_writes: Vec<Value> = acc.writes.iter().copied().filter(|v| is_slot(v)).collect();
        if reads.is_empty() && writes.is_empty() && !allocates {
            // Value flow only: the results come from what the operands came from.
            for r in &op.results {
                producers.insert(*r, from.clone());
            }
            for v in slot_writes {
                slot_producers.insert(v, from.clone());
            }
            continue;
        }
        if op.name == "memref.alloc" {
            names.entry(op.results[0]).or_insert_with(|| {
                allocs += 1;
                op.attr("appy.name")
                    .map(|n| parse_str(n).to_string())
                    .unwrap_or(format!("alloc{}", allocs - 1))
            });
        }
        let name = |v: &Value| names.get(v).cloned().unwrap_or_else(|| format!("%{}", v.0));
        let kind = if !acc.kernels.is_empty() {
            if op.name == "scf.for" || op.name == "scf.while" {
                NodeKind::Loop(acc.kernels.clone())
            } else {
                NodeKind::Kernel(acc.kernels.clone())
            }
        } else if let Some(l) = &acc.library {
            NodeKind::Library(l.clone())
        } else {
            NodeKind::Host(op.name.clone())
        };
        let mut node = Node {
            kind,
            reads: reads.iter().map(name).collect(),
            writes: writes.iter().map(name).collect(),
        };
        if op.name == "memref.alloc" {
            node.writes.insert(name(&op.results[0]));
        }
        let n = graph.add_node(node);
        let mut deps = from;
        for r in &reads {
            deps.extend(last_write.get(r));
        }
        for w in &writes {
            deps.extend(last_write.get(w));
            deps.extend(readers.get(w).into_iter().flatten());
        }
        for d in deps {
            if d != n {
                graph.update_edge(d, n, ());
            }
        }
        for r in &reads {
            readers.entry(*r).or_default().push(n);
        }
        for w in writes.iter().chain(op.results.iter().filter(|_| op.name == "memref.alloc")) {
            last_write.insert(*w, n);
            readers.remove(w);
        }
        for r in &op.results {
            producers.insert(*r, BTreeSet::from([n]));
        }
        for v in slot_writes {
            slot_producers.insert(v, BTreeSet::from([n]));
        }
    }
    // ASAP levels: a node's step is one after the latest step of what it depends on.
    let mut level = vec![0usize; graph.node_count()];
    for n in graph.node_indices() {
        level[n.index()] = graph
            .neighbors_directed(n, petgraph::Direction::Incoming)
            .map(|p| level[p.index()] + 1)
            .max()
            .unwrap_or(0);
    }
    let depth = level.iter().map(|l| l + 1).max().unwrap_or(0);
    let mut steps = vec![vec![]; depth];
    for n in graph.node_indices() {
        steps[level[n.index()]].push(n);
    }
    Steps { func, graph, steps }
}

/// The arrays `op` and the ops in it read and write, the kernels it launches and the
/// library it calls.
fn collect(op: &Op, kernels: &KernelEffects, root: &dyn Fn(Value) -> Value, acc: &mut Acc) {
    op.walk(&mut |x| {
        if x.name == "gpu.launch_func" {
            let kname = x.attr("kernel").and_then(|k| k.rsplit("::@").next()).unwrap_or("?").to_string();
            // The launch's operands: 6 sizes (grid, block), then the kernel's arguments.
            let args = x.operands.get(6..).unwrap_or(&[]);
            match kernels.get(&kname) {
                Some(rw) => {
                    for (a, (r, w)) in args.iter().zip(rw) {
                        if *r {
                            acc.reads.insert(root(*a));
                        }
                        if *w {
                            acc.writes.insert(root(*a));
                        }
                    }
                }
                None => {
                    acc.reads.extend(args.iter().map(|a| root(*a)));
                    acc.writes.extend(args.iter().map(|a| root(*a)));
                }
            }
            if !acc.kernels.contains(&kname) {
                acc.kernels.push(kname);
            }
            return;
        }
        if x.name.starts_with("appy.") && acc.library.is_none() && matches!(x.name.as_str(), "appy.gemm" | "appy.trsv" | "appy.potrf") {
            acc.library = Some(x.name["appy.".len()..].to_string());
        }
        let e = effects(x);
        for (access, set) in [(e.reads, &mut acc.reads), (e.writes, &mut acc.writes)] {
            if let Access::Operands(ix) = access {
                set.extend(ix.iter().filter_map(|i| x.operands.get(*i)).map(|v| root(*v)));
            }
        }
    });
}
