//! A kernel's statements and the dependences between them, from the ops' memory effects
//! (`appy_ir::effects`) and the affine forms of their subscripts
//! (`analyses::index`).
//!
//! A statement is an op without regions that writes memory (a store, an atomic
//! update, a copy, a free, a call), or a region op the effect table does not know (a
//! generic atomic update). It reads the arrays its own effects name and those of the
//! loads that compute its operands (followed through the ops of the kernel; a
//! loop or conditional that computes an operand contributes every load inside it).
//!
//! Statement `t` depends on an earlier statement `s` when one of them writes an array
//! the other reads or writes (arrays are told apart by their root: casts and views of
//! one allocation are one array; distinct parameters are distinct arrays, the
//! assumption every pass of the compiler makes). The dependence needs no barrier
//! (`nosync`, scope `any`) when the array is private to a work item, or when every
//! access of both statements to it has the same subscripts, affine in the kernel's
//! inames, and those subscripts tell the work items apart: for each subscript, its
//! parallel inames (groups and lanes) in mixed radix (each coefficient larger than what
//! the smaller ones span over their constant extents), no sequential iname in it, and
//! every parallel iname in one such subscript. Then each work item reads only what it
//! wrote itself. It needs no barrier between groups (scope `global`) when the same holds
//! of the group inames alone (each group reads only what its own work items wrote, as
//! in `b[i] = ...` by a group followed by its lanes reading `b[i]`), or when the array
//! is in local memory (one per group). Anything else is left to the barrier placement
//! of the back end.

use crate::analyses::index::{IndexForm, Term, index_form_through};
use appy_ir::effects::{Access, effects};
use appy_ir::ir::{Op, Value};
use appy_ir::kernel::Scope;
use std::collections::{HashMap, HashSet};

/// One statement's accesses.
#[derive(Clone, Debug, Default)]
pub struct Stmt {
    /// Arrays written (root values), each with the subscripts of the write (`None`:
    /// not known).
    pub writes: Vec<(Value, Option<Vec<IndexForm>>)>,
    /// Arrays read, likewise.
    pub reads: Vec<(Value, Option<Vec<IndexForm>>)>,
    /// Whether it may touch any memory (a call, an unknown op).
    pub any: bool,
    /// Whether it is an atomic update.
    pub atomic: bool,
    /// The induction variables of the parallel loops around it (its work item).
    pub par: Vec<Value>,
}

/// What one statement depends on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Deps {
    /// The indices of the earlier statements it depends on.
    pub dep: Vec<usize>,
    /// Those of them whose dependence needs no barrier of the given scope.
    pub nosync: Vec<(usize, Scope)>,
}

/// What [`dependences`] knows of the kernel beyond its statements.
pub struct Items<'a> {
    /// The arrays private to a work item.
    pub private: &'a HashSet<Value>,
    /// The arrays in local memory (one per group).
    pub local: &'a HashSet<Value>,
    /// Every parallel induction variable of the kernel with its constant extent
    /// (`None`: not constant).
    pub par: &'a HashMap<Value, Option<i64>>,
    /// Those of the group loops.
    pub groups: &'a HashSet<Value>,
    /// The induction variables of all its loops.
    pub ivs: &'a [Value],
}

/// Whether `o` is a statement.
pub fn is_statement(o: &Op) -> bool {
    let e = effects(o);
    if o.regions.is_empty() {
        e.writes_any()
    } else {
        e.writes == Access::Any
    }
}

/// The root of a memref value: through casts and views, to the allocation or parameter.
pub fn root(v: Value, defs: &HashMap<Value, &Op>) -> Value {
    appy_ir::effects::root(v, |v| defs.get(&v).copied())
}

/// The statements of `kernel` in order, with their accesses; `ivs` are the kernel's
/// induction variables, `outer` the ops of the function around it (subscripts are
/// followed through its integer arithmetic).
pub fn statements(kernel: &Op, ivs: &[Value], outer: &HashMap<Value, &Op>) -> Vec<Stmt> {
    let mut defs: HashMap<Value, &Op> = HashMap::new();
    let mut order: Vec<(&Op, Vec<Value>)> = vec![];
    collect(kernel, &mut defs, &mut order, &mut vec![]);
    let index = |idx: &[Value]| -> Option<Vec<IndexForm>> { idx.iter().map(|v| index_form_through(*v, ivs, &defs, outer, 0)).collect() };
    let access = |o: &Op, mem: usize, idx: usize| (root(o.operands[mem], &defs), index(o.operands.get(idx..).unwrap_or(&[])));
    let mut out = vec![];
    for (o, par) in order {
        let mut s = Stmt { par, ..Stmt::default() };
        match o.name.as_str() {
            "memref.store" => s.writes.push(access(o, 1, 2)),
            "memref.atomic_rmw" => {
                s.atomic = true;
                s.writes.push(access(o, 1, 2));
                s.reads.push(access(o, 1, 2));
            }
            "memref.generic_atomic_rmw" => {
                s.atomic = true;
                s.writes.push(access(o, 0, 1));
                s.reads.push(access(o, 0, 1));
            }
            "memref.copy" => {
                s.reads.push((root(o.operands[0], &defs), None));
                s.writes.push((root(o.operands[1], &defs), None));
            }
            "memref.dealloc" => s.writes.push((root(o.operands[0], &defs), None)),
            _ => s.any = true,
        }
        // The loads computing its operands.
        let mut seen = HashSet::new();
        let mut stack: Vec<Value> = o.operands.clone();
        while let Some(v) = stack.pop() {
            if !seen.insert(v) {
                continue;
            }
            let Some(d) = defs.get(&v) else { continue };
            if d.regions.is_empty() {
                if d.name == "memref.load" {
                    s.reads.push(access(d, 0, 1));
                } else if effects(d).reads == Access::Any {
                    s.any = true;
                }
                stack.extend(d.operands.iter().copied());
            } else {
                d.walk(&mut |x| {
                    if x.name == "memref.load" {
                        s.reads.push(access(x, 0, 1));
                    } else if x.regions.is_empty() && effects(x).reads == Access::Any {
                        s.any = true;
                    }
                });
                stack.extend(d.operands.iter().copied());
            }
        }
        out.push(s);
    }
    out
}

fn collect<'a>(op: &'a Op, defs: &mut HashMap<Value, &'a Op>, order: &mut Vec<(&'a Op, Vec<Value>)>, par: &mut Vec<Value>) {
    for r in &op.results {
        defs.insert(*r, op);
    }
    if is_statement(op) {
        order.push((op, par.clone()));
        op.walk(&mut |x| {
            for r in &x.results {
                defs.insert(*r, x);
            }
        });
        return;
    }
    let n = par.len();
    if op.name == "scf.parallel" {
        par.extend(op.body(0).args.iter().copied());
    }
    for r in &op.regions {
        for b in &r.blocks {
            for o in &b.ops {
                collect(o, defs, order, par);
            }
        }
    }
    par.truncate(n);
}

/// Whether subscripts `f` (the same for every access to an array) reach each element
/// from one work item only: `need` are the induction variables of the parallel loops
/// around the accesses, `par` every parallel induction variable of the kernel with its
/// constant extent (`None`: not constant), `ivs` those of all its loops.
pub fn tells_items_apart(f: &[IndexForm], need: &[Value], par: &HashMap<Value, Option<i64>>, ivs: &[Value]) -> bool {
    let mut covered: HashSet<Value> = HashSet::new();
    for d in f {
        let mut terms: Vec<(i64, Option<i64>, Value)> = vec![];
        let mut ok = true;
        for (t, c) in &d.terms {
            match t {
                Term::Iv(v) if par.contains_key(v) => terms.push((c.unsigned_abs() as i64, par[v], *v)),
                Term::Iv(v) if ivs.contains(v) => ok = false,
                _ => {}
            }
        }
        if !ok {
            continue;
        }
        terms.sort_by_key(|t| t.0);
        let mut span: i64 = 0;
        for (k, (c, ext, _)) in terms.iter().enumerate() {
            if *c <= span {
                ok = false;
                break;
            }
            if k + 1 < terms.len() {
                let Some(e) = ext.filter(|e| *e >= 1) else {
                    ok = false;
                    break;
                };
                match c.checked_mul(e - 1).and_then(|x| x.checked_add(span)) {
                    Some(s) => span = s,
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
        }
        if ok {
            covered.extend(terms.iter().map(|t| t.2));
        }
    }
    need.iter().all(|p| covered.contains(p))
}

/// The dependences of every statement on earlier ones.
pub fn dependences(stmts: &[Stmt], items: &Items<'_>) -> Vec<Deps> {
    let Items {
        private,
        local,
        par,
        groups,
        ivs,
    } = *items;
    let mut out = vec![];
    for (t, st) in stmts.iter().enumerate() {
        let mut d = Deps::default();
        for (s, ss) in stmts[..t].iter().enumerate() {
            let mut conflicts: Vec<Value> = vec![];
            // A call or an unknown op may touch anything.
            let any = ss.any || st.any;
            for (a, b) in [(&ss.writes, &st.reads), (&ss.writes, &st.writes), (&ss.reads, &st.writes)] {
                for (m, _) in a.iter() {
                    if b.iter().any(|(n, _)| n == m) && !conflicts.contains(m) {
                        conflicts.push(*m);
                    }
                }
            }
            if !any && conflicts.is_empty() {
                continue;
            }
            d.dep.push(s);
            // Whether every access of both statements to `m` has the same subscripts
            // and they tell apart the work items of the inames `keep` selects.
            let apart = |m: &Value, keep: &dyn Fn(&Value) -> bool| {
                let forms: Vec<&Option<Vec<IndexForm>>> = ss
                    .writes
                    .iter()
                    .chain(&ss.reads)
                    .chain(&st.writes)
                    .chain(&st.reads)
                    .filter(|(n, _)| n == m)
                    .map(|(_, f)| f)
                    .collect();
                let need: Vec<Value> = ss.par.iter().chain(&st.par).filter(|v| keep(v)).copied().collect();
                !need.is_empty()
                    && forms.iter().all(|f| f.is_some() && *f == forms[0])
                    && forms[0].as_ref().is_some_and(|f| tells_items_apart(f, &need, par, ivs))
            };
            let same_item = |m: &Value| private.contains(m) || apart(m, &|_| true);
            let same_group = |m: &Value| private.contains(m) || local.contains(m) || apart(m, &|v| groups.contains(v));
            if any {
            } else if conflicts.iter().all(same_item) {
                d.nosync.push((s, Scope::Any));
            } else if !groups.is_empty() && conflicts.iter().all(same_group) {
                d.nosync.push((s, Scope::Global));
            }
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(terms: &[(Value, i64)], c: i64) -> IndexForm {
        let mut f = IndexForm::constant(c);
        for (v, k) in terms {
            f = f.checked_add(&IndexForm::var(Term::Iv(*v)).scale(*k).unwrap()).unwrap();
        }
        f
    }

    #[test]
    fn work_items_told_apart() {
        let (g, l, k) = (Value(1), Value(2), Value(3));
        let par = HashMap::from([(g, None), (l, Some(64))]);
        let ivs = [g, l, k];
        let need = [g, l];
        // 64*g + l over l in [0, 64): one element per work item.
        assert!(tells_items_apart(&[form(&[(g, 64), (l, 1)], 3)], &need, &par, &ivs));
        // g + l: two work items reach one element.
        assert!(!tells_items_apart(&[form(&[(g, 1), (l, 1)], 0)], &need, &par, &ivs));
        // A sequential iname in the subscript.
        assert!(!tells_items_apart(&[form(&[(g, 64), (l, 1), (k, 1)], 0)], &need, &par, &ivs));
        // Two subscripts, one per parallel iname.
        assert!(tells_items_apart(&[form(&[(g, 1)], 0), form(&[(l, 2)], 0)], &need, &par, &ivs));
        // The lane missing.
        assert!(!tells_items_apart(&[form(&[(g, 1)], 0)], &need, &par, &ivs));
    }

    #[test]
    fn dependences_and_nosync() {
        let (a, b, t) = (Value(10), Value(11), Value(12));
        let (g, l) = (Value(1), Value(2));
        let par = HashMap::from([(g, None), (l, Some(64))]);
        let own = Some(vec![form(&[(g, 64), (l, 1)], 0)]);
        let other = Some(vec![form(&[(g, 64), (l, 1)], 1)]);
        let st = |writes: Vec<(Value, Option<Vec<IndexForm>>)>, reads: Vec<(Value, Option<Vec<IndexForm>>)>| Stmt {
            writes,
            reads,
            par: vec![g, l],
            ..Stmt::default()
        };
        let stmts = [
            st(vec![(b, own.clone())], vec![(a, own.clone())]),   // b[x] = a[x]
            st(vec![(a, own.clone())], vec![(b, own.clone())]),   // a[x] = b[x]: same item
            st(vec![(b, own.clone())], vec![(a, other.clone())]), // b[x] = a[x+1]: another item's
            st(vec![(t, None)], vec![]),                          // a private slot
            st(vec![(t, None)], vec![(t, None)]),
        ];
        let d = deps_of(&stmts, &[t], &[], &[g], &par, &[g, l]);
        assert_eq!(d[0], Deps::default());
        assert_eq!(
            d[1],
            Deps {
                dep: vec![0],
                nosync: vec![(0, Scope::Any)]
            }
        );
        // a[x+1] may be the next group's element: a barrier of any scope.
        assert_eq!(
            d[2],
            Deps {
                dep: vec![0, 1],
                nosync: vec![(0, Scope::Any)]
            }
        );
        assert_eq!(d[3], Deps::default());
        assert_eq!(
            d[4],
            Deps {
                dep: vec![3],
                nosync: vec![(3, Scope::Any)]
            }
        );
    }

    /// A group writes `b[g]` once, then its lanes read it: no barrier between groups,
    /// one among the group's work items; an array in local memory likewise.
    #[test]
    fn nosync_between_groups() {
        let (a, b, sh) = (Value(10), Value(11), Value(13));
        let (g, l) = (Value(1), Value(2));
        let par = HashMap::from([(g, None), (l, Some(64))]);
        let at_g = Some(vec![form(&[(g, 1)], 0)]);
        let lane = Some(vec![form(&[(g, 64), (l, 1)], 0)]);
        let at_l = Some(vec![form(&[(l, 1)], 0)]);
        let stmts = [
            Stmt {
                writes: vec![(b, at_g.clone())],
                reads: vec![(a, lane.clone())],
                par: vec![g],
                ..Stmt::default()
            },
            Stmt {
                writes: vec![(a, lane.clone())],
                reads: vec![(b, at_g.clone())],
                par: vec![g, l],
                ..Stmt::default()
            },
            Stmt {
                writes: vec![(sh, at_l.clone())],
                reads: vec![],
                par: vec![g, l],
                ..Stmt::default()
            },
            Stmt {
                writes: vec![(a, lane.clone())],
                reads: vec![(sh, Some(vec![form(&[(l, 1)], 1)]))],
                par: vec![g, l],
                ..Stmt::default()
            },
        ];
        let d = deps_of(&stmts, &[], &[sh], &[g], &par, &[g, l]);
        // s1 reads b[g], which s0 wrote for the whole group; s1's write of a[64g+l]
        // and s0's read of it are one item's.
        assert_eq!(d[1].nosync, vec![(0, Scope::Global)]);
        // s3 reads sh[l+1], another lane's, in the group's own local array.
        assert_eq!(d[3].dep, vec![0, 1, 2]);
        assert!(d[3].nosync.contains(&(2, Scope::Global)), "{:?}", d[3]);
        // Without groups nothing is known between them.
        let d = deps_of(&stmts, &[], &[sh], &[], &par, &[g, l]);
        assert!(d[1].nosync.is_empty());
    }

    fn deps_of(
        stmts: &[Stmt],
        private: &[Value],
        local: &[Value],
        groups: &[Value],
        par: &HashMap<Value, Option<i64>>,
        ivs: &[Value],
    ) -> Vec<Deps> {
        let set = |v: &[Value]| v.iter().copied().collect::<HashSet<Value>>();
        let (private, local, groups) = (set(private), set(local), set(groups));
        let items = Items {
            private: &private,
            local: &local,
            par,
            groups: &groups,
            ivs,
        };
        dependences(stmts, &items)
    }
}
