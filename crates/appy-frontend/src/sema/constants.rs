//! Small constant lists and tuples of numbers (`w = [0.25, 0.5, 0.25]`), rewritten away
//! before lowering: `w[1]` becomes the element, `w[k]` a chain of conditional
//! expressions over the valid indices (`-len(w)` to `len(w) - 1`), `len(w)` the length,
//! and the assignment disappears. A name qualifies when it is assigned once, to a
//! display of number literals, and used only indexed by one integer or in `len(...)`;
//! a list display that does not qualify is an error at its use (appy has no lists),
//! a tuple keeps its other meanings (shapes, several return values).
//!
//! The parser gives a list display as a call of [`LIST`] (a reserved name).

use super::types::fold_int;
use crate::ast::*;
use appy_ir::diag::{DResult, Diagnostic, SourceFile, Span};
use std::collections::HashMap;

/// The callee the parser gives a list display: `[a, b]` is `_appy_list(a, b)`.
pub const LIST: &str = "_appy_list";

/// A constant sequence: its elements, and whether it is a list.
#[derive(Clone, Debug)]
struct Seq {
    items: Vec<Expr>,
    list: bool,
}

/// Rewrites the constant sequences of `body` (see the module's documentation).
pub(crate) fn rewrite(file: &SourceFile, body: Vec<Stmt>, params: &[Ident]) -> DResult<Vec<Stmt>> {
    let mut assigned = vec![];
    super::names::ast_names_assigned(&body, &mut assigned);
    let mut count: HashMap<&str, usize> = HashMap::new();
    for (n, _) in &assigned {
        *count.entry(n.as_str()).or_default() += 1;
    }
    let mut seqs: HashMap<String, Seq> = HashMap::new();
    find(&body, &mut |n, seq| {
        if count.get(n) == Some(&1) && !params.iter().any(|p| p.name == n) {
            seqs.insert(n.to_string(), seq);
        }
    });
    // Only names used as `w[k]` and `len(w)` are rewritten.
    let mut bad: HashMap<String, Span> = HashMap::new();
    for s in &body {
        other_uses(s, &seqs, &mut bad);
    }
    for (n, sp) in &bad {
        if seqs[n].list {
            return Err(Diagnostic::error(
                file,
                *sp,
                format!("the list `{n}` can only be indexed (`{n}[k]`) or measured (`len({n})`) here"),
            )
            .with_note("help: appy has no Python lists; a constant list of numbers works as `w[k]`; for anything else use a NumPy array"));
        }
        seqs.remove(n);
    }
    let cx = Cx { file, seqs };
    cx.stmts(body)
}

struct Cx<'a> {
    file: &'a SourceFile,
    seqs: HashMap<String, Seq>,
}

impl Cx<'_> {
    fn stmts(&self, stmts: Vec<Stmt>) -> DResult<Vec<Stmt>> {
        let mut out = Vec::with_capacity(stmts.len());
        for mut s in stmts {
            match &mut s.kind {
                StmtKind::Assign { targets, value } => {
                    if let [t] = targets.as_slice()
                        && let ExprKind::Name(n) = &t.kind
                        && self.seqs.contains_key(n)
                        && sequence(value).is_some()
                    {
                        continue;
                    }
                    for t in targets.iter_mut() {
                        self.expr(t)?;
                    }
                    self.expr(value)?;
                }
                StmtKind::AugAssign { target, value, .. } => {
                    self.expr(target)?;
                    self.expr(value)?;
                }
                StmtKind::For { iter, body, .. } => {
                    self.expr(iter)?;
                    *body = self.stmts(std::mem::take(body))?;
                }
                StmtKind::While { cond, body } => {
                    self.expr(cond)?;
                    *body = self.stmts(std::mem::take(body))?;
                }
                StmtKind::If { cond, then, orelse } => {
                    self.expr(cond)?;
                    *then = self.stmts(std::mem::take(then))?;
                    *orelse = self.stmts(std::mem::take(orelse))?;
                }
                StmtKind::Return(Some(e)) | StmtKind::Expr(e) => self.expr(e)?,
                _ => {}
            }
            out.push(s);
        }
        Ok(out)
    }

    /// The sequence `e` names or writes, if it is a constant one.
    fn seq_of(&self, e: &Expr) -> Option<Seq> {
        match &e.kind {
            ExprKind::Name(n) => self.seqs.get(n).cloned(),
            _ => sequence(e),
        }
    }

    fn expr(&self, e: &mut Expr) -> DResult<()> {
        // A list passed to a module's function (`np.zeros([n, m])`) means what a tuple
        // means there.
        if let ExprKind::Call { func, args, .. } = &mut e.kind
            && matches!(func.kind, ExprKind::Attribute { .. })
        {
            for a in args.iter_mut() {
                if let ExprKind::Call { func: g, args: items, .. } = &mut a.kind
                    && matches!(&g.kind, ExprKind::Name(f) if f == LIST)
                {
                    a.kind = ExprKind::Tuple(std::mem::take(items));
                }
            }
        }
        // Innermost first: an index may itself use a sequence.
        let mut r = Ok(());
        e.for_each_child_mut(&mut |c| {
            if r.is_ok() {
                r = self.expr(c);
            }
        });
        r?;
        match &e.kind {
            ExprKind::Subscript { value, indices } => {
                let Some(seq) = self.seq_of(value) else { return Ok(()) };
                let [Index::Expr(k)] = indices.as_slice() else {
                    return Err(Diagnostic::error(self.file, e.span, "a constant sequence takes one integer index")
                        .with_note("help: slices of constant lists and tuples are not supported; index one element: `w[k]`"));
                };
                *e = self.element(&seq, k, e.span)?;
            }
            ExprKind::Call { func, args, kwargs }
                if matches!(&func.kind, ExprKind::Name(f) if f == "len") && args.len() == 1 && kwargs.is_empty() =>
            {
                if let Some(seq) = self.seq_of(&args[0]) {
                    *e = int(seq.items.len() as i64, e.span);
                }
            }
            ExprKind::Call { func, .. } if matches!(&func.kind, ExprKind::Name(f) if f == LIST) => {
                return Err(Diagnostic::error(
                    self.file,
                    e.span,
                    "list literals are supported only as constant lists of numbers, indexed (`w[k]`) or measured (`len(w)`)",
                )
                .with_note(
                    "help: assign the list to a name once (`w = [0.25, 0.5, 0.25]`) and index it, or pass a NumPy array as a parameter",
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// `seq[k]`: the element for a constant `k`, else a chain over the valid indices.
    fn element(&self, seq: &Seq, k: &Expr, span: Span) -> DResult<Expr> {
        let n = seq.items.len() as i64;
        let at = |i: i64| {
            let mut x = seq.items[i as usize].clone();
            x.span = span;
            x
        };
        if let Some(c) = fold_int(k) {
            let i = if c < 0 { c + n } else { c };
            if !(0..n).contains(&i) {
                let what = if seq.list { "list" } else { "tuple" };
                return Err(
                    Diagnostic::error(self.file, k.span, format!("{what} index {c} out of range (it has {n} elements)"))
                        .with_note(format!("help: an index of this {what} is between {} and {}", -n, n - 1)),
                );
            }
            return Ok(at(i));
        }
        if n == 0 {
            return Err(Diagnostic::error(self.file, span, "indexing an empty sequence"));
        }
        // k == i or k == i - n, from the last element back.
        let mut out = at(n - 1);
        for i in (0..n - 1).rev() {
            let eq = |v: i64| Expr {
                kind: ExprKind::Compare {
                    first: Box::new(k.clone()),
                    rest: vec![(CmpOp::Eq, int(v, k.span))],
                },
                span: k.span,
            };
            out = Expr {
                kind: ExprKind::IfExp {
                    cond: Box::new(Expr {
                        kind: ExprKind::BoolOp {
                            op: BoolOpKind::Or,
                            values: vec![eq(i), eq(i - n)],
                        },
                        span: k.span,
                    }),
                    then: Box::new(at(i)),
                    orelse: Box::new(out),
                },
                span,
            };
        }
        Ok(out)
    }
}

fn int(v: i64, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Int(v),
        span,
    }
}

/// A display of number literals (`-1` and `True` included): a list or a tuple.
fn sequence(e: &Expr) -> Option<Seq> {
    let (items, list) = match &e.kind {
        ExprKind::Tuple(items) => (items, false),
        ExprKind::Call { func, args, kwargs } if kwargs.is_empty() && matches!(&func.kind, ExprKind::Name(f) if f == LIST) => (args, true),
        _ => return None,
    };
    items.iter().all(is_number).then(|| Seq {
        items: items.clone(),
        list,
    })
}

fn is_number(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => true,
        ExprKind::Unary {
            op: UnaryOp::Neg | UnaryOp::Pos,
            operand,
        } => matches!(operand.kind, ExprKind::Int(_) | ExprKind::Float(_)),
        _ => false,
    }
}

/// Calls `f` for each `name = <constant sequence>`.
fn find(stmts: &[Stmt], f: &mut dyn FnMut(&str, Seq)) {
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { targets, value } => {
                if let [t] = targets.as_slice()
                    && let ExprKind::Name(n) = &t.kind
                    && let Some(seq) = sequence(value)
                {
                    f(n, seq);
                }
            }
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => find(body, f),
            StmtKind::If { then, orelse, .. } => {
                find(then, f);
                find(orelse, f);
            }
            _ => {}
        }
    }
}

/// Records the uses of the sequences' names other than `w[k]`, `len(w)` and the
/// assignment that defines them.
fn other_uses(s: &Stmt, seqs: &HashMap<String, Seq>, bad: &mut HashMap<String, Span>) {
    fn expr(e: &Expr, seqs: &HashMap<String, Seq>, bad: &mut HashMap<String, Span>) {
        match &e.kind {
            ExprKind::Name(n) if seqs.contains_key(n) => {
                bad.entry(n.clone()).or_insert(e.span);
            }
            ExprKind::Subscript { value, indices } if matches!(&value.kind, ExprKind::Name(n) if seqs.contains_key(n)) => {
                for i in indices {
                    if let Index::Expr(x) = i {
                        expr(x, seqs, bad);
                    }
                }
            }
            ExprKind::Call { func, args, kwargs }
                if matches!(&func.kind, ExprKind::Name(f) if f == "len")
                    && args.len() == 1
                    && kwargs.is_empty()
                    && matches!(&args[0].kind, ExprKind::Name(n) if seqs.contains_key(n)) => {}
            _ => e.for_each_child(&mut |c| expr(c, seqs, bad)),
        }
    }
    match &s.kind {
        StmtKind::Assign { targets, value } => {
            let defines = matches!(targets.as_slice(), [t] if matches!(&t.kind, ExprKind::Name(n) if seqs.contains_key(n)))
                && sequence(value).is_some();
            if !defines {
                targets.iter().for_each(|t| expr(t, seqs, bad));
                expr(value, seqs, bad);
            }
        }
        StmtKind::AugAssign { target, value, .. } => {
            expr(target, seqs, bad);
            expr(value, seqs, bad);
        }
        StmtKind::For { iter, body, .. } | StmtKind::While { cond: iter, body } => {
            expr(iter, seqs, bad);
            body.iter().for_each(|b| other_uses(b, seqs, bad));
        }
        StmtKind::If { cond, then, orelse } => {
            expr(cond, seqs, bad);
            then.iter().chain(orelse).for_each(|b| other_uses(b, seqs, bad));
        }
        StmtKind::Return(Some(e)) | StmtKind::Expr(e) => expr(e, seqs, bad),
        _ => {}
    }
}
