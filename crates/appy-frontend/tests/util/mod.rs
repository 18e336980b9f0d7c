//! Helpers shared by the integration tests.
#![allow(dead_code)]

use appy_frontend::ast::*;
use appy_frontend::parse_function;
use appy_ir::diag::{Diagnostic, SourceFile};

/// Lines before the body in [`file_with_body`].
pub const HEADER: &str = "import numpy as np\nimport appy\n\n@appy.jit\ndef f(a, b, c, N):\n";
/// File line of the body's first line.
pub const FIRST_BODY_LINE: usize = 6;

/// A file with a jitted `f(a, b, c, N)` whose body is `body` indented by 4 spaces.
pub fn file_with_body(body: &str) -> SourceFile {
    let mut text = HEADER.to_string();
    for line in body.lines() {
        if !line.trim().is_empty() {
            text.push_str("    ");
        }
        text.push_str(line);
        text.push('\n');
    }
    SourceFile::new("t.py", text)
}

/// Parses `body` as the body of a jitted function.
pub fn body(body: &str) -> Vec<Stmt> {
    let file = file_with_body(body);
    match parse_function(&file, "f") {
        Ok(p) => p.function.body,
        Err(e) => panic!("unexpected error:\n{}", e.render()),
    }
}

/// The error of parsing `body`.
pub fn err(body: &str) -> Diagnostic {
    let file = file_with_body(body);
    match parse_function(&file, "f") {
        Ok(p) => panic!("expected an error for {body:?}, got {:#?}", p.function.body),
        Err(e) => e,
    }
}

/// `(line, col)` of a diagnostic, with the line counted from the body's first line (1).
pub fn body_loc(d: &Diagnostic) -> (usize, usize) {
    let (_, l, c) = d.location().expect("diagnostic has a location");
    match ((l + 1).checked_sub(FIRST_BODY_LINE), c.checked_sub(4)) {
        (Some(l), Some(c)) => (l, c),
        _ => panic!("error outside the body:\n{}", d.render()),
    }
}

/// Asserts that `body` fails with a message containing `msg` at body `line:col`.
#[track_caller]
pub fn assert_err(body: &str, msg: &str, line: usize, col: usize) {
    let d = err(body);
    assert!(
        d.message.contains(msg),
        "for {body:?}: expected message containing {msg:?}, got:\n{}",
        d.render()
    );
    assert_eq!(body_loc(&d), (line, col), "for {body:?}, location of:\n{}", d.render());
}

/// The value of `x = <src>`.
pub fn expr(src: &str) -> Expr {
    match body(&format!("x = {src}")).remove(0).kind {
        StmtKind::Assign { value, .. } => value,
        k => panic!("not an assignment: {k:?}"),
    }
}

/// A compact s-expression of an expression, for precedence tests.
pub fn sx(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => format!("{v:?}"),
        ExprKind::Imag(v) => format!("{v:?}j"),
        ExprKind::Bool(v) => if *v { "True" } else { "False" }.to_string(),
        ExprKind::None => "None".to_string(),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::FString(parts) => format!("(fstring {})", parts.len()),
        ExprKind::Name(n) => n.clone(),
        ExprKind::Unary { op, operand } => {
            let op = match op {
                UnaryOp::Neg => "neg",
                UnaryOp::Pos => "pos",
                UnaryOp::Not => "not",
                UnaryOp::Invert => "inv",
            };
            format!("({op} {})", sx(operand))
        }
        ExprKind::Binary { op, lhs, rhs } => format!("({} {} {})", op.symbol(), sx(lhs), sx(rhs)),
        ExprKind::Compare { first, rest } => {
            let mut s = format!("(cmp {}", sx(first));
            for (op, e) in rest {
                let op = match op {
                    CmpOp::Lt => "<",
                    CmpOp::Le => "<=",
                    CmpOp::Gt => ">",
                    CmpOp::Ge => ">=",
                    CmpOp::Eq => "==",
                    CmpOp::Ne => "!=",
                };
                s.push_str(&format!(" {op} {}", sx(e)));
            }
            s + ")"
        }
        ExprKind::BoolOp { op, values } => {
            let op = if *op == BoolOpKind::And { "and" } else { "or" };
            format!("({op} {})", values.iter().map(sx).collect::<Vec<_>>().join(" "))
        }
        ExprKind::IfExp { cond, then, orelse } => {
            format!("(if {} {} {})", sx(cond), sx(then), sx(orelse))
        }
        ExprKind::Call { func, args, kwargs } => {
            let mut parts = vec![sx(func)];
            parts.extend(args.iter().map(sx));
            parts.extend(kwargs.iter().map(|(k, v)| format!("{}={}", k.name, sx(v))));
            format!("(call {})", parts.join(" "))
        }
        ExprKind::Attribute { value, attr } => format!("{}.{}", sx(value), attr.name),
        ExprKind::Subscript { value, indices } => {
            let idx: Vec<String> = indices
                .iter()
                .map(|i| match i {
                    Index::Expr(e) => sx(e),
                    Index::NewAxis(_) => "None".to_string(),
                    Index::Slice { lower, upper, step, .. } => {
                        let f = |x: &Option<Box<Expr>>| x.as_ref().map(|e| sx(e)).unwrap_or_default();
                        match step {
                            Some(_) => format!("{}:{}:{}", f(lower), f(upper), f(step)),
                            None => format!("{}:{}", f(lower), f(upper)),
                        }
                    }
                })
                .collect();
            format!("{}[{}]", sx(value), idx.join(", "))
        }
        ExprKind::Tuple(items) => format!("(tuple {})", items.iter().map(sx).collect::<Vec<_>>().join(" ")),
    }
}

/// A compact rendering of statements: one line per statement, nested bodies indented.
pub fn stmts_sx(stmts: &[Stmt]) -> String {
    let mut out = String::new();
    fn go(out: &mut String, stmts: &[Stmt], d: usize) {
        for s in stmts {
            let pad = "  ".repeat(d);
            let pragma = s.pragma.as_ref().map(|p| format!(" #{}", p.text)).unwrap_or_default();
            match &s.kind {
                StmtKind::Assign { targets, value } => {
                    let t: Vec<String> = targets.iter().map(sx).collect();
                    out.push_str(&format!("{pad}{} = {}{pragma}\n", t.join(" = "), sx(value)));
                }
                StmtKind::AugAssign { target, op, value } => {
                    out.push_str(&format!("{pad}{} {}= {}{pragma}\n", sx(target), op.symbol(), sx(value)))
                }
                StmtKind::For { var, iter, body, .. } => {
                    out.push_str(&format!("{pad}for {} in {}{pragma}\n", var.name, sx(iter)));
                    go(out, body, d + 1);
                }
                StmtKind::While { cond, body } => {
                    out.push_str(&format!("{pad}while {}{pragma}\n", sx(cond)));
                    go(out, body, d + 1);
                }
                StmtKind::If { cond, then, orelse } => {
                    out.push_str(&format!("{pad}if {}{pragma}\n", sx(cond)));
                    go(out, then, d + 1);
                    if !orelse.is_empty() {
                        out.push_str(&format!("{pad}else\n"));
                        go(out, orelse, d + 1);
                    }
                }
                StmtKind::Return(v) => out.push_str(&format!(
                    "{pad}return{}{pragma}\n",
                    v.as_ref().map(|e| format!(" {}", sx(e))).unwrap_or_default()
                )),
                StmtKind::Pass => out.push_str(&format!("{pad}pass{pragma}\n")),
                StmtKind::Continue => out.push_str(&format!("{pad}continue{pragma}\n")),
                StmtKind::Break => out.push_str(&format!("{pad}break{pragma}\n")),
                StmtKind::Expr(e) => out.push_str(&format!("{pad}{}{pragma}\n", sx(e))),
            }
        }
    }
    go(&mut out, stmts, 0);
    out
}
