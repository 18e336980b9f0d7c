//! The `kernel` level's vocabulary: Loopy's kernel model (seed 004) written as
//! attributes on the strip-mined loops, so the level prints and re-parses as MLIR.
//!
//! A *kernel* is a top-level parallel nest of a function (what `appy-gpu-outline` makes
//! one `gpu.func` of, and what `appy-cpu-openmp` makes one parallel region of). At this
//! level (`appy-kernel-form`, `appy-opt --emit=kernel`):
//!
//! * the kernel's outermost loop carries its name ([`KERNEL`]) and the domain
//!   parameters its domains use ([`PARAMS`]);
//! * every loop of the kernel carries its inames ([`crate::schedule::INAMES`]), their
//!   tags ([`crate::schedule::TAGS`]) and its **domain** ([`DOMAIN`]), an integer set in
//!   isl's syntax over the parameters and the inames of the enclosing loops. The loop
//!   nesting is Loopy's domain forest: a loop's domain is the child of its enclosing
//!   loop's, so imperfect nests are siblings, and a bound read from memory inside the
//!   kernel is a parameter named `_appy_v<k>` (Loopy's data-dependent domain);
//! * every **statement** (an op that writes memory: a store, an atomic update, a call)
//!   carries an id ([`ID`]), the inames it runs within ([`WITHIN`]), the ids of the
//!   earlier statements it depends on ([`DEP`]), those of them that need no barrier
//!   ([`NOSYNC`], `s0@any`: Loopy's `nosync`), and [`ATOMIC`] when the update is atomic;
//! * every **temporary** carries its address space ([`SPACE`]): `private` (a scalar
//!   slot or array of one work item), `local` (an `appy.buffer` of a group: shared
//!   memory) or `global` (an array the host allocates and the kernel uses).
//!
//! The function names its parameters ([`ARG_NAMES`], from the source), which name the
//! domain parameters. Every name the compiler makes starts with
//! [`crate::schedule::RESERVED_PREFIX`] (`_appy_`), as Loopy's start with `_lp_`.
//!
//! [`verify`] checks a module at this level (ids unique in a kernel, dependences on
//! earlier statements of the same kernel, `within` the enclosing inames, each domain
//! over its loop's inames), so that a hand-edited kernel-level module is refused with a
//! located error before it is lowered; [`strip`] removes the level's attributes once
//! a back end has lowered from it.

use crate::attrs::parse_str;
use crate::diag::IrError;
use crate::ir::{Module, Op};
use crate::schedule::parse_str_array;
use std::collections::HashSet;

/// `appy.kernel = "_appy_f_k0"`: the kernel's name, on its outermost loop (the name of
/// its `gpu.func`).
pub const KERNEL: &str = "appy.kernel";
/// `appy.params = ["n", "a_dim0"]`: the domain parameters of the kernel's domains.
pub const PARAMS: &str = "appy.params";
/// `appy.domain = "[n] -> { [i] : 0 <= i < n }"`: a loop's domain (isl syntax).
pub const DOMAIN: &str = "appy.domain";
/// `appy.id = "s0"`: a statement's id, unique in its kernel.
pub const ID: &str = "appy.id";
/// `appy.within = ["i_outer", "i_inner"]`: the inames a statement runs within.
pub const WITHIN: &str = "appy.within";
/// `appy.dep = ["s0"]`: the earlier statements a statement depends on.
pub const DEP: &str = "appy.dep";
/// `appy.nosync_with = ["s0@any"]`: dependences that need no barrier (same work item,
/// same element, or private memory): Loopy's `nosync`. (A loop's `appy.nosync` mark,
/// `Mark::NoSync`, says the same of all of a tensor statement's loop.)
pub const NOSYNC: &str = "appy.nosync_with";
/// `appy.atomic`: the statement is an atomic update.
pub const ATOMIC: &str = "appy.atomic";
/// `appy.space = "private" | "local" | "global"`: a temporary's address space.
pub const SPACE: &str = "appy.space";
/// `appy.arg_names = ["a", "n"]`: the source names of a function's parameters.
pub const ARG_NAMES: &str = "appy.arg_names";

/// The name the level gives a loop that has none (`_appy_l`, then `_appy_l_1`, ...;
/// [`strip`] removes these names again).
pub const LOOP_NAME: &str = "_appy_l";

/// Whether `name` is one the level made up ([`LOOP_NAME`]).
pub fn is_made_up(name: &str) -> bool {
    name == LOOP_NAME
        || name
            .strip_prefix(LOOP_NAME)
            .and_then(|r| r.strip_prefix('_'))
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// Every attribute of the level (what [`strip`] removes).
pub const ATTRS: [&str; 10] = [KERNEL, PARAMS, DOMAIN, ID, WITHIN, DEP, NOSYNC, ATOMIC, SPACE, ARG_NAMES];

/// The address space of a temporary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// One work item's (registers or local memory).
    Private,
    /// A group's (shared memory).
    Local,
    /// Device memory the host allocates.
    Global,
}

impl Space {
    /// The name the level prints.
    pub fn name(self) -> &'static str {
        match self {
            Space::Private => "private",
            Space::Local => "local",
            Space::Global => "global",
        }
    }
}

/// The barriers a dependence does without (Loopy's `nosync` scopes:
/// `appy.nosync_with = ["s0@any"]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// No barrier at all: each work item reads only what it wrote.
    Any,
    /// No barrier among a group's work items (one between groups may be needed).
    Local,
    /// No barrier between groups: each group reads only what its own work items
    /// wrote; its work items may still need a barrier among themselves.
    Global,
}

impl Scope {
    /// The name the level prints after `@`.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Any => "any",
            Scope::Local => "local",
            Scope::Global => "global",
        }
    }
    /// The scope named `name`.
    pub fn from_name(name: &str) -> Option<Scope> {
        [Scope::Any, Scope::Local, Scope::Global].into_iter().find(|s| s.name() == name)
    }
}

/// Whether `op` is a kernel's outermost loop at this level.
pub fn is_kernel(op: &Op) -> bool {
    op.has_attr(KERNEL)
}

/// The inames of a domain's tuple: `["i", "j"]` for `[n] -> { [i, j] : ... }`; `None`
/// when the text is not a domain.
pub fn domain_inames(text: &str) -> Option<Vec<String>> {
    let set = text.split_once('{')?.1;
    let tuple = set.trim_start().strip_prefix('[')?.split_once(']')?.0;
    Some(tuple.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
}

/// The parameters of a domain's header: `["n"]` for `[n] -> { ... }` (empty when it has
/// none).
pub fn domain_params(text: &str) -> Vec<String> {
    match text.split_once("->") {
        Some((head, _)) => head
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        None => vec![],
    }
}

/// Checks every kernel of `m` (see the module documentation); the error is located at
/// the op that breaks the model.
pub fn verify(m: &Module) -> Result<(), IrError> {
    let mut err = None;
    let mut names: HashSet<&str> = HashSet::new();
    m.op.walk(&mut |o| {
        if err.is_none() && is_kernel(o) {
            if !names.insert(name(o)) {
                err = Some(IrError::at(o, format!("kernel level: two kernels are named `{}`", name(o))));
                return;
            }
            err = verify_kernel(o).err();
        }
    });
    err.map_or(Ok(()), Err)
}

fn verify_kernel(k: &Op) -> Result<(), IrError> {
    let params: HashSet<String> = k.attr(PARAMS).map(parse_str_array).unwrap_or_default().into_iter().collect();
    let mut ids: Vec<String> = vec![];
    let mut within: Vec<String> = vec![];
    walk_kernel(k, &mut within, &mut |o, within| {
        if matches!(o.name.as_str(), "scf.for" | "scf.parallel") {
            let names = o.inames();
            let Some(d) = o.attr(DOMAIN) else {
                return Err(IrError::at(
                    o,
                    format!("kernel level: a loop of `{}` has no domain ({DOMAIN})", name(k)),
                ));
            };
            let d = parse_str(d);
            if domain_inames(d).as_ref() != Some(&names) {
                return Err(IrError::at(
                    o,
                    format!("kernel level: the domain `{d}` is not over the loop's inames {names:?}"),
                ));
            }
            if let Some(p) = domain_params(d).into_iter().find(|p| !params.contains(p)) {
                return Err(IrError::at(
                    o,
                    format!("kernel level: the domain parameter `{p}` is not one of the kernel's {PARAMS}"),
                ));
            }
        }
        if let Some(id) = o.attr(ID) {
            let id = parse_str(id).to_string();
            if ids.contains(&id) {
                return Err(IrError::at(
                    o,
                    format!("kernel level: two statements of `{}` have the id `{id}`", name(k)),
                ));
            }
            let w = o.attr(WITHIN).map(parse_str_array).unwrap_or_default();
            if w != within {
                return Err(IrError::at(
                    o,
                    format!("kernel level: statement `{id}` is within {w:?}, but its loops are {within:?}"),
                ));
            }
            for d in o.attr(DEP).map(parse_str_array).unwrap_or_default() {
                if !ids.contains(&d) {
                    return Err(IrError::at(
                        o,
                        format!(
                            "kernel level: statement `{id}` depends on `{d}`, which is not an earlier statement of `{}` (earlier: {})",
                            name(k),
                            if ids.is_empty() { "none".to_string() } else { ids.join(", ") }
                        ),
                    ));
                }
            }
            for n in o.attr(NOSYNC).map(parse_str_array).unwrap_or_default() {
                let (dep, scope) = n.split_once('@').unwrap_or((n.as_str(), "any"));
                if !ids.iter().any(|i| i == dep) || Scope::from_name(scope).is_none() {
                    return Err(IrError::at(
                        o,
                        format!("kernel level: `{n}` in the nosync of `{id}` is not `ID@any|local|global` of an earlier statement"),
                    ));
                }
            }
            ids.push(id);
        }
        if let Some(s) = o.attr(SPACE)
            && !matches!(parse_str(s), "private" | "local" | "global")
        {
            return Err(IrError::at(
                o,
                format!("kernel level: unknown address space {s} (private, local or global)"),
            ));
        }
        Ok(())
    })
}

fn name(k: &Op) -> &str {
    k.attr(KERNEL).map(parse_str).unwrap_or("?")
}

/// Calls `f` on `op` and every op nested in it in order, with the inames of the loops
/// enclosing each op (a loop's own inames included for the ops in its body).
pub fn walk_kernel(op: &Op, within: &mut Vec<String>, f: &mut impl FnMut(&Op, &[String]) -> Result<(), IrError>) -> Result<(), IrError> {
    f(op, within)?;
    let is_loop = matches!(op.name.as_str(), "scf.for" | "scf.parallel");
    let n = within.len();
    if is_loop {
        within.extend(op.inames());
    }
    for r in &op.regions {
        for b in &r.blocks {
            for o in &b.ops {
                walk_kernel(o, within, f)?;
            }
        }
    }
    within.truncate(n);
    Ok(())
}

/// Removes the level's attributes from every op of `m` (after a back end has read
/// them), and the loop names it made up: the module is then what it was at the `loops`
/// level.
pub fn strip(m: &mut Module) {
    m.op.walk_mut(&mut |o| {
        for a in ATTRS {
            o.remove_attr(a);
        }
        let names = o.inames();
        if !names.is_empty() && names.iter().all(|n| is_made_up(n)) {
            o.remove_attr(crate::schedule::INAMES);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_text() {
        let d = "[n, m] -> { [i_outer, i_inner] : 0 <= i_outer < n and 0 <= i_inner < 4 }";
        assert_eq!(domain_inames(d).unwrap(), ["i_outer", "i_inner"]);
        assert_eq!(domain_params(d), ["n", "m"]);
        assert_eq!(domain_params("{ [j] : 0 <= j < 4 }"), Vec::<String>::new());
        assert_eq!(domain_inames("{ [j] : 0 <= j < 4 }").unwrap(), ["j"]);
        assert!(domain_inames("nonsense").is_none());
    }

    #[test]
    fn made_up_names() {
        assert!(is_made_up("_appy_l") && is_made_up("_appy_l_12"));
        assert!(!is_made_up("_appy_l_") && !is_made_up("_appy_lx") && !is_made_up("i") && !is_made_up("_appy_t0_d0"));
    }

    #[test]
    fn verify_refuses_unknown_dep() {
        let store = |id: &str, dep: &str| {
            Op::new("memref.store")
                .with_attr(ID, format!("\"{id}\""))
                .with_attr(WITHIN, "[\"i\"]")
                .with_attr(DEP, dep)
        };
        let body = |ops: Vec<Op>| crate::ir::Region::single(crate::ir::Block { args: vec![], ops });
        let k = |ops| {
            Op::new("scf.parallel")
                .with_attr(KERNEL, "\"k\"")
                .with_attr(PARAMS, "[\"n\"]")
                .with_attr(crate::schedule::INAMES, "[\"i\"]")
                .with_attr(DOMAIN, "\"[n] -> { [i] : 0 <= i < n }\"")
                .with_region(body(ops))
        };
        let mut m = Module::new();
        m.op = Op::new("builtin.module").with_region(body(vec![k(vec![store("s0", "[]"), store("s1", "[\"s0\"]")])]));
        verify(&m).unwrap();
        m.op = Op::new("builtin.module").with_region(body(vec![k(vec![store("s0", "[\"s1\"]"), store("s1", "[]")])]));
        let e = verify(&m).unwrap_err();
        assert!(e.message.contains("not an earlier statement"), "{}", e.message);
    }
}
