//! A human-readable, indented dump of the AST (`appy-opt --emit=ast`).
//!
//! One node per line, children indented by two spaces, each node followed by its
//! `@LINE:COL`, e.g.
//!
//! ```text
//! Function spmv(A_row, A_col, A_val, x, y, N) @5:5
//!   For i @7:5
//!     pragma parallel for @6:5
//!     iter: Call @7:14
//! ```

use std::fmt::Write as _;

use crate::ast::*;

/// Renders `program` as an indented tree, each node with its `line:col`.
pub fn dump(program: &Program) -> String {
    appy_ir::stack::deep(|| dump_on_stack(program))
}

fn dump_on_stack(program: &Program) -> String {
    let mut p = Printer {
        src: &program.source,
        out: String::new(),
    };
    p.program(program);
    p.out
}

struct Printer<'a> {
    src: &'a Source,
    out: String,
}

impl Printer<'_> {
    fn line(&mut self, depth: usize, text: &str, span: Span) {
        let (l, c) = self.src.line_col(span.start);
        let _ = writeln!(self.out, "{}{text} @{l}:{c}", "  ".repeat(depth));
    }

    fn program(&mut self, p: &Program) {
        let _ = writeln!(self.out, "Program {}", p.source.0.name());
        for imp in &p.imports {
            match imp {
                Import::Module { module, alias, span } => self.line(1, &format!("Import {module} as {alias}"), *span),
                Import::From { module, names, span } => {
                    let names: Vec<String> = names
                        .iter()
                        .map(|(n, a)| if n == a { n.clone() } else { format!("{n} as {a}") })
                        .collect();
                    self.line(1, &format!("ImportFrom {module}: {}", names.join(", ")), *span);
                }
            }
        }
        let f = &p.function;
        let params: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
        self.line(1, &format!("Function {}({})", f.name.name, params.join(", ")), f.span);
        for (k, v) in &f.options {
            self.line(2, &format!("option {}", k.name), k.span);
            self.expr(3, "", v);
        }
        self.stmts(2, &f.body);
    }

    fn stmts(&mut self, depth: usize, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(depth, s);
        }
    }

    fn stmt(&mut self, d: usize, s: &Stmt) {
        let head = match &s.kind {
            StmtKind::Assign { .. } => "Assign".to_string(),
            StmtKind::AugAssign { op, .. } => format!("AugAssign {}=", op.symbol()),
            StmtKind::For { var, stop, .. } => match stop {
                Some(f) => format!("For {} (stops when {f})", var.name),
                None => format!("For {}", var.name),
            },
            StmtKind::While { .. } => "While".to_string(),
            StmtKind::If { .. } => "If".to_string(),
            StmtKind::Return(_) => "Return".to_string(),
            StmtKind::Pass => "Pass".to_string(),
            StmtKind::Continue => "Continue".to_string(),
            StmtKind::Break => "Break".to_string(),
            StmtKind::Expr(_) => "ExprStmt".to_string(),
        };
        self.line(d, &head, s.span);
        if let Some(p) = &s.pragma {
            self.pragma(d + 1, p);
        }
        match &s.kind {
            StmtKind::Assign { targets, value } => {
                for t in targets {
                    self.expr(d + 1, "target: ", t);
                }
                self.expr(d + 1, "value: ", value);
            }
            StmtKind::AugAssign { target, value, .. } => {
                self.expr(d + 1, "target: ", target);
                self.expr(d + 1, "value: ", value);
            }
            StmtKind::For { iter, body, .. } => {
                self.expr(d + 1, "iter: ", iter);
                self.block(d + 1, "body", body, s.span);
            }
            StmtKind::While { cond, body } => {
                self.expr(d + 1, "cond: ", cond);
                self.block(d + 1, "body", body, s.span);
            }
            StmtKind::If { cond, then, orelse } => {
                self.expr(d + 1, "cond: ", cond);
                self.block(d + 1, "then", then, s.span);
                if !orelse.is_empty() {
                    self.block(d + 1, "else", orelse, s.span);
                }
            }
            StmtKind::Return(Some(e)) | StmtKind::Expr(e) => self.expr(d + 1, "", e),
            StmtKind::Return(None) | StmtKind::Pass | StmtKind::Continue | StmtKind::Break => {}
        }
    }

    fn block(&mut self, d: usize, label: &str, body: &[Stmt], span: Span) {
        let first = body.first().map_or(span, |s| s.span);
        self.line(d, &format!("{label}:"), first);
        self.stmts(d + 1, body);
    }

    fn pragma(&mut self, d: usize, p: &Pragma) {
        match &p.kind {
            PragmaKind::ParallelFor { simd, shared, transforms } => {
                let mut s = "pragma parallel for".to_string();
                if *simd {
                    s.push_str(" simd");
                }
                if !shared.is_empty() {
                    let names: Vec<&str> = shared.iter().map(|i| i.name.as_str()).collect();
                    let _ = write!(s, " shared({})", names.join(", "));
                }
                if !transforms.is_empty() {
                    let items: Vec<String> = transforms.iter().map(crate::pragma::transform_text).collect();
                    let _ = write!(s, " transform({})", items.join(", "));
                }
                self.line(d, &s, p.span);
            }
            PragmaKind::Simd => self.line(d, "pragma simd", p.span),
            PragmaKind::SequentialFor => self.line(d, "pragma sequential for", p.span),
            PragmaKind::Atomic => self.line(d, "pragma atomic", p.span),
            PragmaKind::Tensor(dims) => {
                self.line(d, "pragma tensor", p.span);
                for dim in dims {
                    let props: Vec<String> = dim
                        .props
                        .iter()
                        .map(|p| match p {
                            TensorProp::Parallel => "parallel".to_string(),
                            TensorProp::Simd => "simd".to_string(),
                            TensorProp::Reduce { op, var } => format!("reduce({op}:{})", var.name),
                            TensorProp::Le(n) => format!("le({n})"),
                        })
                        .collect();
                    self.line(d + 1, &format!("dim {} => {}", dim.text, props.join(",")), dim.span);
                    if let Some(lo) = &dim.lower {
                        self.expr(d + 2, "lower: ", lo);
                    }
                    if let Some(hi) = &dim.upper {
                        self.expr(d + 2, "upper: ", hi);
                    }
                }
            }
        }
    }

    fn expr(&mut self, d: usize, label: &str, e: &Expr) {
        let head = match &e.kind {
            ExprKind::Int(v) => format!("Int {v}"),
            ExprKind::Float(v) => format!("Float {v:?}"),
            ExprKind::Imag(v) => format!("Imag {v:?}"),
            ExprKind::Bool(v) => format!("Bool {}", if *v { "True" } else { "False" }),
            ExprKind::None => "None".to_string(),
            ExprKind::Str(s) => format!("Str {s:?}"),
            ExprKind::FString(parts) => format!("FString ({} parts)", parts.len()),
            ExprKind::Name(n) => format!("Name {n}"),
            ExprKind::Unary { op, .. } => format!(
                "Unary {}",
                match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Pos => "+",
                    UnaryOp::Not => "not",
                    UnaryOp::Invert => "~",
                }
            ),
            ExprKind::Binary { op, .. } => format!("Binary {}", op.symbol()),
            ExprKind::Compare { rest, .. } => {
                let ops: Vec<&str> = rest.iter().map(|(op, _)| cmpop(*op)).collect();
                format!("Compare {}", ops.join(" "))
            }
            ExprKind::BoolOp { op, .. } => format!("BoolOp {}", if *op == BoolOpKind::And { "and" } else { "or" }),
            ExprKind::IfExp { .. } => "IfExp".to_string(),
            ExprKind::Call { .. } => "Call".to_string(),
            ExprKind::Attribute { attr, .. } => format!("Attribute .{}", attr.name),
            ExprKind::Subscript { .. } => "Subscript".to_string(),
            ExprKind::Tuple(_) => "Tuple".to_string(),
        };
        self.line(d, &format!("{label}{head}"), e.span);
        let d = d + 1;
        match &e.kind {
            ExprKind::Unary { operand, .. } => self.expr(d, "", operand),
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(d, "", lhs);
                self.expr(d, "", rhs);
            }
            ExprKind::Compare { first, rest } => {
                self.expr(d, "", first);
                for (_, r) in rest {
                    self.expr(d, "", r);
                }
            }
            ExprKind::BoolOp { values, .. } | ExprKind::Tuple(values) => {
                for v in values {
                    self.expr(d, "", v);
                }
            }
            ExprKind::IfExp { cond, then, orelse } => {
                self.expr(d, "cond: ", cond);
                self.expr(d, "then: ", then);
                self.expr(d, "else: ", orelse);
            }
            ExprKind::Call { func, args, kwargs } => {
                self.expr(d, "func: ", func);
                for a in args {
                    self.expr(d, "arg: ", a);
                }
                for (k, v) in kwargs {
                    self.expr(d, &format!("{}=", k.name), v);
                }
            }
            ExprKind::Attribute { value, .. } => self.expr(d, "", value),
            ExprKind::Subscript { value, indices } => {
                self.expr(d, "value: ", value);
                for i in indices {
                    match i {
                        Index::Expr(e) => self.expr(d, "index: ", e),
                        Index::NewAxis(s) => self.line(d, "index: NewAxis", *s),
                        Index::Slice { lower, upper, step, span } => {
                            self.line(d, "index: Slice", *span);
                            for (l, part) in [("lower: ", lower), ("upper: ", upper), ("step: ", step)] {
                                if let Some(p) = part {
                                    self.expr(d + 1, l, p);
                                }
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

fn cmpop(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
        CmpOp::Eq => "==",
        CmpOp::Ne => "!=",
    }
}
