//! The affine forms of memref subscripts over loop variables: what `appy-cpu-fuse` and
//! `appy-reorder` ask of a loop body before they change the order of its iterations.
//!
//! A subscript is followed through `arith.constant`, integer casts, `addi`, `subi` and
//! `muli` down to the loop variables (`Term::Iv`) and values that do not change inside
//! the body (`Term::Sym`: defined outside it, or computed inside from such values
//! only). Anything else, or an overflow, is not affine.

use appy_ir::affine::Affine;
use appy_ir::ir::{Op, Value};
use std::collections::HashMap;

/// A term of a subscript's affine form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Term {
    /// A loop variable.
    Iv(Value),
    /// A value that does not change inside the body.
    Sym(Value),
}

/// A subscript as an affine form over loop variables and invariant values.
pub type IndexForm = Affine<Term>;

/// One load or store of a body.
#[derive(Clone, Debug)]
pub struct Access {
    /// The memref.
    pub mem: Value,
    /// A store (else a load).
    pub store: bool,
    /// Its subscripts' affine forms.
    pub index: Vec<IndexForm>,
}

/// Copies of the integer arithmetic of `ops` (constants, casts, `addi`, `subi`,
/// `muli`, nested regions included): the `outer` of [`index_form_through`].
pub fn arith_ops(ops: &[Op]) -> Vec<Op> {
    let mut out = vec![];
    for o in ops {
        o.walk(&mut |x| {
            let affine = matches!(
                x.name.as_str(),
                "arith.constant" | "arith.index_cast" | "arith.index_castui" | "arith.extsi" | "arith.addi" | "arith.subi" | "arith.muli"
            );
            if affine && x.regions.is_empty() && x.results.len() == 1 {
                out.push(x.clone());
            }
        });
    }
    out
}

/// The affine form of `v`, with `ivs` the loop variables and `defs` the ops of the body.
pub fn index_form(v: Value, ivs: &[Value], defs: &HashMap<Value, &Op>, depth: usize) -> Option<IndexForm> {
    index_form_through(v, ivs, defs, &HashMap::new(), depth)
}

/// [`index_form`], following values defined outside the body through the integer
/// arithmetic of `outer` (constants, casts, `addi`, `subi`, `muli` of the enclosing
/// code), so that `i - 1` and `i + 1` computed outside are `Sym(i) - 1` and
/// `Sym(i) + 1`, not two unrelated symbols.
pub fn index_form_through(
    v: Value,
    ivs: &[Value],
    defs: &HashMap<Value, &Op>,
    outer: &HashMap<Value, &Op>,
    depth: usize,
) -> Option<IndexForm> {
    if ivs.contains(&v) {
        return Some(IndexForm::var(Term::Iv(v)));
    }
    if depth > 16 {
        return None;
    }
    let Some(op) = defs.get(&v) else {
        // Defined outside the body: invariant, through the arithmetic that made it.
        let through = outer.get(&v).and_then(|op| {
            let x = |k: usize| index_form_through(op.operands[k], ivs, defs, outer, depth + 1);
            match op.name.as_str() {
                "arith.constant" => {
                    let n: i64 = op.attr("value")?.split(':').next()?.trim().parse().ok()?;
                    Some(IndexForm::constant(n))
                }
                "arith.index_cast" | "arith.index_castui" | "arith.extsi" => x(0),
                "arith.addi" => x(0)?.checked_add(&x(1)?),
                "arith.subi" => x(0)?.checked_sub(&x(1)?),
                "arith.muli" => x(0)?.checked_mul(x(1)?),
                _ => None,
            }
        });
        return Some(through.unwrap_or_else(|| IndexForm::var(Term::Sym(v))));
    };
    let x = |k: usize| index_form_through(op.operands[k], ivs, defs, outer, depth + 1);
    match op.name.as_str() {
        "arith.constant" => {
            let text = op.attr("value")?;
            let n: i64 = text.split(':').next()?.trim().parse().ok()?;
            Some(IndexForm::constant(n))
        }
        "arith.index_cast" | "arith.index_castui" | "arith.extsi" => x(0),
        "arith.addi" => x(0)?.checked_add(&x(1)?),
        "arith.subi" => x(0)?.checked_sub(&x(1)?),
        "arith.muli" => x(0)?.checked_mul(x(1)?),
        _ => {
            // Any other op of the body that does not involve a loop variable.
            let varies = op.operands.iter().any(|o| ivs.contains(o) || defs.contains_key(o));
            (!varies).then(|| IndexForm::var(Term::Sym(v)))
        }
    }
}

/// Every load and store in `ops` (nested regions included) with its subscripts' affine
/// forms over `ivs`; `None` when a subscript is not affine.
pub fn accesses(ops: &[Op], ivs: &[Value]) -> Option<Vec<Access>> {
    accesses_through(ops, ivs, &HashMap::new())
}

/// [`accesses`], following values defined outside `ops` through the integer
/// arithmetic of `outer` (see [`index_form_through`]): a constant defined outside the
/// body is a constant, not a symbol.
pub fn accesses_through(ops: &[Op], ivs: &[Value], outer: &HashMap<Value, &Op>) -> Option<Vec<Access>> {
    let mut all = vec![];
    for o in ops {
        o.walk(&mut |x| all.push(x));
    }
    let mut defs: HashMap<Value, &Op> = HashMap::new();
    for o in &all {
        for r in &o.results {
            defs.insert(*r, o);
        }
    }
    let mut out = vec![];
    for o in &all {
        let (mem, idx, store) = match o.name.as_str() {
            "memref.load" => (o.operands[0], &o.operands[1..], false),
            "memref.store" => (o.operands[1], &o.operands[2..], true),
            _ => continue,
        };
        let index: Option<Vec<IndexForm>> = idx.iter().map(|v| index_form_through(*v, ivs, &defs, outer, 0)).collect();
        out.push(Access { mem, store, index: index? });
    }
    Some(out)
}

/// Why two different iterations of the loops `ivs` (one or two of them) of a body with
/// the accesses `acc` may touch one element of an array the body writes; `None` when
/// they cannot: every array written is accessed at one subscript only, and that
/// subscript reaches a different element in every iteration (the coefficients of `ivs`
/// have full rank). Then the iterations may run in any order, or interleaved.
pub fn cross_iteration_conflict(acc: &[Access], ivs: &[Value]) -> Option<&'static str> {
    for w in acc.iter().filter(|a| a.store) {
        if !acc.iter().filter(|a| a.mem == w.mem).all(|a| a.index == w.index) {
            return Some("an array the body writes is also accessed at another subscript");
        }
        let cs: Vec<Vec<i64>> = w
            .index
            .iter()
            .map(|f| ivs.iter().map(|v| f.coeff(&Term::Iv(*v))).collect())
            .collect();
        let full = match ivs.len() {
            1 => cs.iter().any(|c| c[0] != 0),
            2 => cs.iter().enumerate().any(|(p, a)| {
                cs[p + 1..]
                    .iter()
                    .any(|b| a[0] as i128 * b[1] as i128 != a[1] as i128 * b[0] as i128)
            }),
            _ => false,
        };
        if !full {
            return Some("an array the body writes is written at the same element by several iterations");
        }
    }
    None
}
