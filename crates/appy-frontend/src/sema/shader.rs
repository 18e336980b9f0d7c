//! APPy's individual mode (`@appy.shader`, `@appy.cpu_shader`, or `@appy.jit(shader=True)`):
//! the function's top-level `for ... in range(...)` loops are parallel, as if each had
//! `#pragma parallel for` above it, and so is a `range` loop that is the whole body of
//! such a loop (a 2-D grid). Loops inside those stay sequential. A loop that already has
//! a pragma keeps it. As with a written pragma, the race checker then refuses a loop
//! whose iterations conflict.

use super::resolve::{Imports, qualify};
use crate::ast::*;

/// Whether the function's options ask for individual mode (`shader=True`).
pub(crate) fn is_shader(f: &Function) -> bool {
    f.options
        .iter()
        .any(|(k, v)| k.name == "shader" && matches!(v.kind, ExprKind::Bool(true) | ExprKind::Int(1..)))
}

/// Marks the top-level `range` loops of `body` parallel (and a `range` loop that is the
/// whole body of one), looking through `if` statements, not into other loops.
pub(crate) fn parallel_loops(body: Vec<Stmt>, imports: &Imports) -> Vec<Stmt> {
    body.into_iter()
        .map(|mut s| {
            if is_range_loop(&s, imports) {
                mark(&mut s);
                if let StmtKind::For { body, .. } = &mut s.kind
                    && body.len() == 1
                    && is_range_loop(&body[0], imports)
                {
                    mark(&mut body[0]);
                }
            } else if let StmtKind::If { then, orelse, .. } = &mut s.kind {
                *then = parallel_loops(std::mem::take(then), imports);
                *orelse = parallel_loops(std::mem::take(orelse), imports);
            }
            s
        })
        .collect()
}

fn is_range_loop(s: &Stmt, imports: &Imports) -> bool {
    let StmtKind::For { iter, .. } = &s.kind else {
        return false;
    };
    matches!(&iter.kind, ExprKind::Call { func, .. } if qualify(imports, func).as_deref() == Some("builtins.range"))
}

fn mark(s: &mut Stmt) {
    if s.pragma.is_none() {
        s.pragma = Some(Pragma {
            kind: PragmaKind::ParallelFor {
                simd: false,
                shared: vec![],
                transforms: vec![],
            },
            text: "parallel for".into(),
            span: s.span,
        });
    }
}

#[cfg(test)]
mod tests {
    use crate::ast::*;
    use appy_ir::diag::SourceFile;

    /// The pragma kinds of the loops of `body`, outermost first, depth first.
    fn loops(body: &[Stmt], out: &mut Vec<(String, bool)>) {
        for s in body {
            match &s.kind {
                StmtKind::For { var, body, .. } => {
                    let parallel = matches!(s.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::ParallelFor { .. }));
                    out.push((var.name.clone(), parallel));
                    loops(body, out);
                }
                StmtKind::If { then, orelse, .. } => {
                    loops(then, out);
                    loops(orelse, out);
                }
                _ => {}
            }
        }
    }

    fn parallel_loops_of(src: &str) -> Vec<(String, bool)> {
        let file = SourceFile::new("k.py", src);
        let program = crate::parse_function(&file, "f").unwrap();
        let f = crate::sema::desugar::desugar(&file, &program).unwrap().function;
        let mut out = vec![];
        loops(&f.body, &mut out);
        out
    }

    #[test]
    fn top_level_range_loops_and_a_perfectly_nested_one_are_parallel() {
        let src = "import appy\nfrom appy import cpu_shader as cs\n\n@appy.shader\ndef f(a, n):\n    for i in range(n):\n        for j in range(n):\n            for k in range(n):\n                a[i, j] += k\n    if n > 1:\n        for p in range(n):\n            a[p, 0] = 1.0\n            for q in range(n):\n                a[p, q] += 1.0\n";
        let got = parallel_loops_of(src);
        let want = [("i", true), ("j", true), ("k", false), ("p", true), ("q", false)];
        assert_eq!(got, want.map(|(n, p)| (n.to_string(), p)));
        // Under an alias, and through `@appy.jit(shader=True)`; without it nothing changes.
        let aliased = src.replace("@appy.shader", "@cs");
        assert_eq!(parallel_loops_of(&aliased)[0], ("i".to_string(), true));
        let option = src.replace("@appy.shader", "@appy.jit(shader=True)");
        assert_eq!(parallel_loops_of(&option)[1], ("j".to_string(), true));
        let plain = src.replace("@appy.shader", "@appy.jit");
        assert!(parallel_loops_of(&plain).iter().all(|(_, p)| !p));
    }
}
