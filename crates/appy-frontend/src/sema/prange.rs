//! `prange` loops without a pragma (seed 000's automatic interface): an update of an
//! array element that several iterations may make is a reduction across the
//! iterations, and becomes atomic here, before the race check and the analysis.
//!
//! An element target is *distinct per iteration* when one of its indices is an affine
//! function of the loop variable with a nonzero coefficient whose other names the body
//! never assigns (`out[i]`, `out[2 * i + 1, j]`, `out[N - 1 - i]`): no two iterations
//! meet there, and its updates stay as written. Every other element target (`s[0]`,
//! `s[j]` with `j` from outside, `hist[idx[i]]`, `s[i // 2]`, `s[k]` of an inner loop)
//! may be shared:
//!
//! * `t += v`, `t -= v`, `t *= v`, and the same written out (`t = t + v`, `t = v + t`,
//!   `t = t - v`, `t = t * v`, `t = v * t`) become atomic updates (`+=`, `-=`, `*=`;
//!   lowering refuses an atomic `*=`, which neither back end has);
//! * `t = max(t, v)`, `t = min(v, t)` (builtin or NumPy) become atomic max/min;
//! * any other update of a shared element that reads it (`t = t / 2 + v`, `t //= v`)
//!   is an error: it cannot be made atomic, and the iterations would lose updates.
//!
//! The iterations run in any order, so a reduction's partial values are not values
//! Python would compute: an array that the loop updates atomically (also with
//! `#pragma atomic` or `appy.atomic_*`) and accesses in any other way in the loop, or
//! updates with two different operations (a sum and a product of one element), is an
//! error, unless the other updates are of different constant elements.
//!
//! Under `#pragma parallel for` the loop is the user's choice: the race check warns
//! about such updates instead (`races.rs`).

use super::Reduction;
use super::catalog;
use super::names::ast_names_assigned;
use super::races::affine;
use super::resolve::{Imports, qualify};
use crate::ast::*;
use appy_ir::diag::{DResult, Diagnostic, SourceFile, Span};
use std::collections::HashSet;

/// Makes the shared element updates of every `prange` loop (without a pragma) in
/// `body` atomic; an error for those that cannot be.
pub(crate) fn atomics(file: &SourceFile, body: Vec<Stmt>, imports: &Imports) -> DResult<Vec<Stmt>> {
    let cx = Cx { file, imports };
    cx.stmts(body)
}

struct Cx<'a> {
    file: &'a SourceFile,
    imports: &'a Imports,
}

/// An atomic update in a `prange` loop: its array, operation, indices, statement.
struct Update {
    array: String,
    op: Reduction,
    indices: Vec<Expr>,
    span: Span,
}

impl Cx<'_> {
    fn stmts(&self, stmts: Vec<Stmt>) -> DResult<Vec<Stmt>> {
        let mut out = Vec::with_capacity(stmts.len());
        for mut s in stmts {
            let is_prange = s.pragma.is_none() && matches!(&s.kind, StmtKind::For { iter, .. } if self.is_prange(iter));
            match &mut s.kind {
                StmtKind::For { var, body, .. } => {
                    let mut b = std::mem::take(body);
                    if is_prange {
                        let mut local = vec![];
                        ast_names_assigned(&b, &mut local);
                        let local: HashSet<String> = local.into_iter().map(|(n, _)| n).collect();
                        b = self.mark(b, &var.name, &local)?;
                        self.check(&b, &var.name)?;
                    }
                    *body = self.stmts(b)?;
                }
                StmtKind::While { body, .. } => *body = self.stmts(std::mem::take(body))?,
                StmtKind::If { then, orelse, .. } => {
                    *then = self.stmts(std::mem::take(then))?;
                    *orelse = self.stmts(std::mem::take(orelse))?;
                }
                _ => {}
            }
            out.push(s);
        }
        Ok(out)
    }

    fn is_prange(&self, iter: &Expr) -> bool {
        matches!(&iter.kind, ExprKind::Call { func, .. } if qualify(self.imports, func).is_some_and(|q| q.ends_with(".prange")))
    }

    /// Marks (or rewrites into) atomic updates the updates of shared elements in the
    /// body of the `prange` loop over `var` (`local`: the names the body assigns).
    fn mark(&self, stmts: Vec<Stmt>, var: &str, local: &HashSet<String>) -> DResult<Vec<Stmt>> {
        let mut out = Vec::with_capacity(stmts.len());
        for mut s in stmts {
            match &mut s.kind {
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => *body = self.mark(std::mem::take(body), var, local)?,
                StmtKind::If { then, orelse, .. } => {
                    *then = self.mark(std::mem::take(then), var, local)?;
                    *orelse = self.mark(std::mem::take(orelse), var, local)?;
                }
                _ if s.pragma.is_some() => {}
                StmtKind::AugAssign { target, op, .. } => {
                    if let Some((arr, _)) = element(target)
                        && !distinct(target, var, local)
                    {
                        if !matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul) {
                            return Err(self.not_atomic(target, var, arr));
                        }
                        s.pragma = Some(atomic_pragma(s.span));
                    }
                }
                StmtKind::Assign { targets, value } if targets.len() == 1 => {
                    let t = &targets[0];
                    if let Some((arr, _)) = element(t)
                        && !distinct(t, var, local)
                        && reads_array(value, arr)
                    {
                        match self.assign_form(t, value, arr) {
                            Some(Form::Aug(op, v)) => {
                                s.kind = StmtKind::AugAssign {
                                    target: t.clone(),
                                    op,
                                    value: v,
                                };
                                s.pragma = Some(atomic_pragma(s.span));
                            }
                            Some(Form::MaxMin) => s.pragma = Some(atomic_pragma(s.span)),
                            None => return Err(self.not_atomic(t, var, arr)),
                        }
                    }
                }
                _ => {}
            }
            out.push(s);
        }
        Ok(out)
    }

    /// `t = t + v` (and the other forms of the module's list) as an atomic form.
    fn assign_form(&self, t: &Expr, value: &Expr, arr: &str) -> Option<Form> {
        match &value.kind {
            ExprKind::Binary { op, lhs, rhs } => {
                let other = match op {
                    BinOp::Add | BinOp::Mul if same(rhs, t) => lhs,
                    BinOp::Add | BinOp::Sub | BinOp::Mul if same(lhs, t) => rhs,
                    _ => return None,
                };
                (!reads_array(other, arr)).then(|| Form::Aug(*op, (**other).clone()))
            }
            ExprKind::Call { func, args, kwargs } if args.len() == 2 && kwargs.is_empty() => {
                catalog::max_min(&qualify(self.imports, func)?)?;
                let other = if same(&args[0], t) {
                    &args[1]
                } else if same(&args[1], t) {
                    &args[0]
                } else {
                    return None;
                };
                (!reads_array(other, arr)).then_some(Form::MaxMin)
            }
            _ => None,
        }
    }

    fn not_atomic(&self, t: &Expr, var: &str, arr: &str) -> Diagnostic {
        let text = self.text(t.span);
        Diagnostic::error(
            self.file,
            t.span,
            format!(
                "`{text}` may be updated by several iterations of this `prange` loop at once (its index is not a different element for each `{var}`), and this update cannot be made atomic"
            ),
        )
        .with_note(format!(
            "help: `prange` makes `{text} += v`, `{text} -= v` and `{text} = max({text}, v)` / `min` (with `v` not reading `{arr}`) atomic; write the update in one of these forms, or loop over `range` to run the loop sequentially"
        ))
    }

    /// Errors for an array that the loop updates atomically and also accesses otherwise,
    /// or updates atomically with two operations.
    fn check(&self, body: &[Stmt], var: &str) -> DResult<()> {
        let mut updates = vec![];
        self.updates(body, &mut updates);
        for (k, u) in updates.iter().enumerate() {
            if let Some(w) = updates[..k]
                .iter()
                .find(|w| w.array == u.array && w.op != u.op && !different_constants(&w.indices, &u.indices))
            {
                let (l, c) = self.file.line_col(w.span.start);
                return Err(Diagnostic::error(
                    self.file,
                    u.span,
                    format!(
                        "`{}` is updated atomically with two different operations in this `prange` loop (here and at line {l}, column {c}); the result would depend on the order of the iterations",
                        u.array
                    ),
                )
                .with_note("help: use one operation per array (e.g. two arrays), or loop over `range` to run the loop sequentially"));
            }
        }
        let arrays: HashSet<&str> = updates.iter().map(|u| u.array.as_str()).collect();
        let mut other = vec![];
        other_uses(body, &arrays, &mut other);
        if let Some((arr, sp)) = other.into_iter().min_by_key(|(_, sp)| sp.start) {
            let u = updates.iter().find(|u| u.array == arr).expect("an updated array");
            let (l, c) = self.file.line_col(u.span.start);
            return Err(Diagnostic::error(
                self.file,
                sp,
                format!(
                    "`{arr}` is updated atomically by the iterations of this `prange` loop (at line {l}, column {c}) and also used here; the iterations run in any order, so the value seen here is not one Python would compute"
                ),
            )
            .with_note(format!(
                "help: use `{arr}` after the loop, or loop over `range` to run the loop sequentially (`{var}` in order)"
            )));
        }
        Ok(())
    }

    /// The atomic updates of a loop body (statements under `#pragma atomic`, calls of
    /// `appy.atomic_*`).
    fn updates(&self, stmts: &[Stmt], out: &mut Vec<Update>) {
        for s in stmts {
            match &s.kind {
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => self.updates(body, out),
                StmtKind::If { then, orelse, .. } => {
                    self.updates(then, out);
                    self.updates(orelse, out);
                }
                StmtKind::AugAssign { target, op, .. } if is_atomic(s) => {
                    if let Some((arr, idx)) = element(target) {
                        let op = if *op == BinOp::Mul { Reduction::Prod } else { Reduction::Sum };
                        out.push(update(arr, op, idx, s.span));
                    }
                }
                StmtKind::Assign { targets, value } if is_atomic(s) && targets.len() == 1 => {
                    if let (Some((arr, idx)), ExprKind::Call { func, .. }) = (element(&targets[0]), &value.kind)
                        && let Some(op) = qualify(self.imports, func).as_deref().and_then(catalog::max_min)
                    {
                        out.push(update(arr, op, idx, s.span));
                    }
                }
                StmtKind::Expr(Expr {
                    kind: ExprKind::Call { func, args, .. },
                    ..
                }) => {
                    let q = qualify(self.imports, func).unwrap_or_default();
                    let op = match q.as_str() {
                        "appy.atomic_add" => Reduction::Sum,
                        "appy.atomic_max" => Reduction::Max,
                        "appy.atomic_min" => Reduction::Min,
                        _ => continue,
                    };
                    if let [a, i, _] = args.as_slice()
                        && let ExprKind::Name(arr) = &a.kind
                    {
                        let idx = match &i.kind {
                            ExprKind::Tuple(xs) => xs.clone(),
                            _ => vec![i.clone()],
                        };
                        out.push(Update {
                            array: arr.clone(),
                            op,
                            indices: idx,
                            span: s.span,
                        });
                    }
                }
                _ => {}
            }
        }
    }

    fn text(&self, span: Span) -> String {
        let t = self.file.text().get(span.start..span.end).unwrap_or("");
        t.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// An atomic form of `t = ...`: an augmented assignment `t op= v`, or `t = max(t, v)`.
enum Form {
    Aug(BinOp, Expr),
    MaxMin,
}

fn atomic_pragma(span: Span) -> Pragma {
    Pragma {
        kind: PragmaKind::Atomic,
        text: "atomic".into(),
        span,
    }
}

fn is_atomic(s: &Stmt) -> bool {
    matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic))
}

fn update(arr: &str, op: Reduction, idx: &[Index], span: Span) -> Update {
    let indices = idx
        .iter()
        .filter_map(|i| match i {
            Index::Expr(x) => Some(x.clone()),
            _ => None,
        })
        .collect();
    Update {
        array: arr.to_string(),
        op,
        indices,
        span,
    }
}

/// `a[i, j]` with every index an expression: (`a`, indices).
fn element(e: &Expr) -> Option<(&str, &[Index])> {
    let ExprKind::Subscript { value, indices } = &e.kind else {
        return None;
    };
    let ExprKind::Name(a) = &value.kind else { return None };
    indices
        .iter()
        .all(|i| matches!(i, Index::Expr(_)))
        .then_some((a.as_str(), indices.as_slice()))
}

/// Whether the element `t` is a different one in each iteration of the loop over
/// `var`: one index is `a·var + ...` with `a ≠ 0`, its other names not assigned in the
/// body (`local`).
fn distinct(t: &Expr, var: &str, local: &HashSet<String>) -> bool {
    let Some((_, indices)) = element(t) else { return false };
    indices.iter().any(|i| {
        let Index::Expr(x) = i else { return false };
        affine(x).is_some_and(|a| a.terms.get(var).is_some_and(|k| *k != 0) && a.terms.keys().all(|n| n == var || !local.contains(n)))
    })
}

/// Whether `e` reads an element (or the whole) of the array `arr`.
fn reads_array(e: &Expr, arr: &str) -> bool {
    let mut found = false;
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match &e.kind {
            ExprKind::Name(n) if n == arr => found = true,
            ExprKind::Attribute { value, attr } if matches!(attr.name.as_str(), "shape" | "size" | "ndim" | "dtype") => {
                if !matches!(&value.kind, ExprKind::Name(_)) {
                    stack.push(value);
                }
            }
            _ => e.for_each_child(&mut |c| stack.push(c)),
        }
    }
    found
}

/// Two index lists that are both integer constants and differ somewhere.
fn different_constants(a: &[Expr], b: &[Expr]) -> bool {
    let c = |xs: &[Expr]| xs.iter().map(super::types::const_int).collect::<Option<Vec<i64>>>();
    matches!((c(a), c(b)), (Some(x), Some(y)) if x != y)
}

/// Structural equality (spans ignored).
pub(crate) fn same(a: &Expr, b: &Expr) -> bool {
    fn zero(e: &Expr) -> Expr {
        let mut e = e.clone();
        fn go(e: &mut Expr) {
            e.span = Span::new(0, 0);
            e.for_each_child_mut(&mut go);
        }
        go(&mut e);
        e
    }
    zero(a) == zero(b)
}

/// Uses of the arrays `arrays` other than as the target of an atomic update (or the
/// array argument of `appy.atomic_*`) and their shapes: (array, where).
fn other_uses(stmts: &[Stmt], arrays: &HashSet<&str>, out: &mut Vec<(String, Span)>) {
    let mut uses = |e: &Expr, out: &mut Vec<(String, Span)>| {
        let mut stack = vec![e];
        while let Some(e) = stack.pop() {
            match &e.kind {
                ExprKind::Name(n) if arrays.contains(n.as_str()) => out.push((n.clone(), e.span)),
                // `s[0]`: the element is what is used (its indices may use others).
                ExprKind::Subscript { value, indices } if matches!(&value.kind, ExprKind::Name(n) if arrays.contains(n.as_str())) => {
                    if let ExprKind::Name(n) = &value.kind {
                        out.push((n.clone(), e.span));
                    }
                    indices.iter().for_each(|i| match i {
                        Index::Expr(x) => stack.push(x),
                        Index::Slice { lower, upper, step, .. } => [lower, upper, step].into_iter().flatten().for_each(|x| stack.push(x)),
                        Index::NewAxis(_) => {}
                    });
                }
                ExprKind::Attribute { value, attr }
                    if matches!(attr.name.as_str(), "shape" | "size" | "ndim" | "dtype") && matches!(value.kind, ExprKind::Name(_)) => {}
                _ => e.for_each_child(&mut |c| stack.push(c)),
            }
        }
    };
    for s in stmts {
        let atomic = is_atomic(s);
        match &s.kind {
            StmtKind::For { iter, body, .. } | StmtKind::While { cond: iter, body } => {
                uses(iter, out);
                other_uses(body, arrays, out);
            }
            StmtKind::If { cond, then, orelse } => {
                uses(cond, out);
                other_uses(then, arrays, out);
                other_uses(orelse, arrays, out);
            }
            StmtKind::AugAssign { target, value, .. } => {
                match element(target) {
                    Some((_, idx)) if atomic => idx.iter().for_each(|i| index_uses(i, &mut uses, out)),
                    _ => uses(target, out),
                }
                uses(value, out);
            }
            StmtKind::Assign { targets, value } => {
                for t in targets {
                    match element(t) {
                        Some((_, idx)) if atomic => idx.iter().for_each(|i| index_uses(i, &mut uses, out)),
                        _ => uses(t, out),
                    }
                }
                match (&value.kind, atomic) {
                    // `t = max(t, v)`: `t` is the update's own read.
                    (ExprKind::Call { args, .. }, true) if targets.len() == 1 => {
                        args.iter().filter(|a| !same(a, &targets[0])).for_each(|a| uses(a, out))
                    }
                    _ => uses(value, out),
                }
            }
            StmtKind::Expr(e) => match &e.kind {
                ExprKind::Call { func, args, .. }
                    if matches!(&func.kind, ExprKind::Attribute { attr, .. } if attr.name.starts_with("atomic_"))
                        || matches!(&func.kind, ExprKind::Name(n) if n.starts_with("atomic_")) =>
                {
                    args.iter().skip(1).for_each(|a| uses(a, out))
                }
                _ => uses(e, out),
            },
            StmtKind::Return(Some(e)) => uses(e, out),
            _ => {}
        }
    }
}

fn index_uses(i: &Index, uses: &mut impl FnMut(&Expr, &mut Vec<(String, Span)>), out: &mut Vec<(String, Span)>) {
    match i {
        Index::Expr(x) => uses(x, out),
        Index::Slice { lower, upper, step, .. } => [lower, upper, step].into_iter().flatten().for_each(|x| uses(x, out)),
        Index::NewAxis(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(body: &str) -> Result<Vec<Stmt>, String> {
        let text = format!("import numpy as np\nimport appy\n\n\n@appy.jit\ndef k(a, s, idx, N, j):\n{body}");
        let file = SourceFile::new("t.py", &text);
        let p = crate::parse_function(&file, "k").map_err(|e| e.render())?;
        crate::sema::desugar::desugar(&file, &p)
            .map(|d| d.function.body)
            .map_err(|e| e.render())
    }

    /// The statements of the first loop's body that are atomic, as `atomic <kind>` lines.
    fn atomic_stmts(body: &str) -> Vec<String> {
        let b = run(body).unwrap_or_else(|e| panic!("{e}"));
        let StmtKind::For { body, .. } = &b[0].kind else { panic!("a loop") };
        fn walk(stmts: &[Stmt], out: &mut Vec<String>) {
            for s in stmts {
                match &s.kind {
                    StmtKind::For { body, .. } => walk(body, out),
                    StmtKind::If { then, orelse, .. } => {
                        walk(then, out);
                        walk(orelse, out);
                    }
                    StmtKind::AugAssign { op, .. } if is_atomic(s) => out.push(format!("aug {op:?}")),
                    StmtKind::Assign { .. } if is_atomic(s) => out.push("assign".into()),
                    _ => {}
                }
            }
        }
        let mut out = vec![];
        walk(body, &mut out);
        out
    }

    #[test]
    fn shared_element_updates_become_atomic() {
        let l = "    for i in appy.prange(N):\n";
        for (stmt, want) in [
            ("s[0] += a[i]", "aug Add"),
            ("s[0] -= a[i]", "aug Sub"),
            ("s[0] *= a[i]", "aug Mul"),
            ("s[0] = s[0] + a[i]", "aug Add"),
            ("s[0] = a[i] + s[0]", "aug Add"),
            ("s[0] = s[0] - a[i]", "aug Sub"),
            ("s[0] = a[i] * s[0]", "aug Mul"),
            ("s[0] = max(s[0], a[i])", "assign"),
            ("s[0] = np.minimum(a[i], s[0])", "assign"),
            ("s[j] += a[i]", "aug Add"),
            ("s[idx[i]] += 1", "aug Add"),
            ("s[i // 2] += a[i]", "aug Add"),
            ("s[0, 0] += a[i]", "aug Add"),
        ] {
            assert_eq!(atomic_stmts(&format!("{l}        {stmt}\n")), vec![want.to_string()], "{stmt}");
        }
        // Nested under an inner loop and an `if`.
        assert_eq!(
            atomic_stmts(&format!(
                "{l}        for k in range(3):\n            if a[i] > 0:\n                s[k] += a[i]\n"
            )),
            vec!["aug Add".to_string()]
        );
    }

    #[test]
    fn distinct_elements_stay_as_written() {
        let l = "    for i in appy.prange(N):\n";
        for stmt in [
            "s[i] += a[i]",
            "s[2 * i + 1] = s[2 * i + 1] + a[i]",
            "s[N - 1 - i] *= a[i]",
            "s[i, idx[i]] += 1.0",
            "s[i] = max(s[i], a[i])",
        ] {
            assert!(atomic_stmts(&format!("{l}        {stmt}\n")).is_empty(), "{stmt}");
        }
        // Under `#pragma parallel for` the updates stay as written (the race check warns).
        assert!(atomic_stmts("    #pragma parallel for\n    for i in range(N):\n        s[0] += a[i]\n").is_empty());
    }

    #[test]
    fn updates_that_cannot_be_atomic_are_errors() {
        let l = "    for i in appy.prange(N):\n";
        for (stmt, what) in [
            ("s[0] = s[0] / 2.0 + a[i]", "cannot be made atomic"),
            ("s[0] = a[i] - s[0]", "cannot be made atomic"),
            ("s[0] /= a[i]", "cannot be made atomic"),
            ("s[0] += s[1] * a[i]", "also used here"),
            ("s[0] += a[i]\n        a[i] = s[0]", "also used here"),
            ("s[0] += a[i]\n        s[0] *= 2.0", "two different operations"),
        ] {
            let e = run(&format!("{l}        {stmt}\n")).expect_err(stmt);
            assert!(e.contains(what), "{stmt}: {e}");
            assert!(e.starts_with("t.py:"), "{e}");
        }
        // Different constant elements may take different operations.
        assert_eq!(
            atomic_stmts(&format!("{l}        s[0] += a[i]\n        s[1] = max(s[1], a[i])\n")).len(),
            2
        );
    }
}
