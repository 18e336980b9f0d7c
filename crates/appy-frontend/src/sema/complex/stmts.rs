//! Statements with complex values: stores of both parts, updates, pragmas.

use super::build::*;
use super::{CVar, Cx};
use crate::ast::*;
use appy_ir::diag::{DResult, Span};

impl Cx<'_> {
    /// The statements of a block, rewritten.
    pub(super) fn block(&mut self, body: Vec<Stmt>) -> DResult<Vec<Stmt>> {
        let mut out = Vec::with_capacity(body.len());
        for s in body {
            let mut rewritten = self.stmt(s)?;
            out.append(&mut std::mem::take(&mut self.pre));
            out.append(&mut rewritten);
        }
        Ok(out)
    }

    pub(super) fn stmt(&mut self, s: Stmt) -> DResult<Vec<Stmt>> {
        let span = s.span;
        let pragma = match s.pragma {
            Some(p) => Some(self.pragma(p)?),
            None => None,
        };
        let mut out = match s.kind {
            StmtKind::Assign { targets, value } => {
                let complex = self.is_complex(&value) || targets.iter().any(|t| self.is_complex(t));
                if !complex {
                    let value = self.real(&value)?;
                    let targets = targets.iter().map(|t| self.real(t)).collect::<DResult<Vec<_>>>()?;
                    vec![Stmt {
                        kind: StmtKind::Assign { targets, value },
                        span,
                        pragma: None,
                    }]
                } else {
                    let [target] = targets.as_slice() else {
                        return Err(self
                            .err(span, "a complex value assigned to several targets is not supported")
                            .with_note("help: assign it to one name, then copy it"));
                    };
                    self.store(target, &value, span)?
                }
            }
            StmtKind::AugAssign { target, op, value } => {
                if !self.is_complex(&target) && !self.is_complex(&value) {
                    let target = self.real(&target)?;
                    let value = self.real(&value)?;
                    vec![Stmt {
                        kind: StmtKind::AugAssign { target, op, value },
                        span,
                        pragma: None,
                    }]
                } else {
                    self.update(&target, op, &value, span)?
                }
            }
            StmtKind::For { var, iter, body, stop } => {
                let iter = self.real_operand(&iter)?;
                let pre = std::mem::take(&mut self.pre);
                let body = self.block(body)?;
                self.pre = pre;
                vec![Stmt {
                    kind: StmtKind::For { var, iter, body, stop },
                    span,
                    pragma: None,
                }]
            }
            StmtKind::While { cond, body } => {
                let cond = self.real_operand(&cond)?;
                // The condition is evaluated each time: nothing may be hoisted before it.
                let hoisted = std::mem::take(&mut self.pre);
                if !hoisted.is_empty() {
                    return Err(self
                        .err(cond.span, "this complex computation is too large for a `while` condition")
                        .with_note("help: compute it into a variable in the loop"));
                }
                let body = self.block(body)?;
                vec![Stmt {
                    kind: StmtKind::While { cond, body },
                    span,
                    pragma: None,
                }]
            }
            StmtKind::If { cond, then, orelse } => {
                let cond = self.real_operand(&cond)?;
                let pre = std::mem::take(&mut self.pre);
                let then = self.block(then)?;
                let orelse = self.block(orelse)?;
                self.pre = pre;
                vec![Stmt {
                    kind: StmtKind::If { cond, then, orelse },
                    span,
                    pragma: None,
                }]
            }
            StmtKind::Return(Some(e)) => {
                let complex = match &e.kind {
                    ExprKind::Tuple(es) => es.iter().any(|x| self.is_complex(x)),
                    _ => self.is_complex(&e),
                };
                if complex {
                    return Err(self
                        .err(e.span, "returning a complex value is not supported")
                        .with_note("help: store it into a complex array argument, or return its `.real` and `.imag`"));
                }
                vec![Stmt {
                    kind: StmtKind::Return(Some(self.real(&e)?)),
                    span,
                    pragma: None,
                }]
            }
            StmtKind::Expr(e) => {
                let e = self.real_operand(&e)?;
                vec![Stmt {
                    kind: StmtKind::Expr(e),
                    span,
                    pragma: None,
                }]
            }
            k @ (StmtKind::Return(None) | StmtKind::Pass | StmtKind::Continue | StmtKind::Break) => vec![Stmt {
                kind: k,
                span,
                pragma: None,
            }],
        };
        if let Some(p) = pragma {
            out[0].pragma = Some(p);
        }
        Ok(out)
    }

    /// A pragma whose `shared(...)` names complex variables names their parts.
    pub(super) fn pragma(&self, mut p: Pragma) -> DResult<Pragma> {
        match &mut p.kind {
            PragmaKind::ParallelFor { shared, .. } => {
                let mut out = vec![];
                for s in shared.drain(..) {
                    if self.vars.get(&s.name) == Some(&CVar::Local) {
                        for k in 0..2 {
                            out.push(Ident {
                                name: part_name(&s.name, k),
                                span: s.span,
                            });
                        }
                    } else {
                        out.push(s);
                    }
                }
                *shared = out;
            }
            PragmaKind::Tensor(dims) => {
                for d in dims.iter() {
                    for prop in &d.props {
                        if let TensorProp::Reduce { var, .. } = prop
                            && self.vars.contains_key(&var.name)
                        {
                            return Err(self
                                .err(var.span, "a tensor reduction into a complex variable is not supported")
                                .with_note("help: reduce into two real variables"));
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(p)
    }

    /// The parts of a store target: a complex variable or an element or slice of a
    /// complex array.
    pub(super) fn target_parts(&mut self, target: &Expr) -> DResult<Option<(Expr, Expr, Vec<String>)>> {
        match &target.kind {
            ExprKind::Name(n) => match self.vars.get(n) {
                Some(CVar::Local) => {
                    let (re, im) = (part_name(n, 0), part_name(n, 1));
                    Ok(Some((name(&re, target.span), name(&im, target.span), vec![re])))
                }
                Some(CVar::Param(_)) => Err(self
                    .err(target.span, format!("the complex array argument `{n}` cannot be rebound"))
                    .with_note(format!("help: write into it: `{n}[:] = ...`"))),
                None => Ok(None),
            },
            ExprKind::Subscript { value, .. } if self.is_complex(value) => {
                let (re, im) = self.parts(target)?;
                // What a store into an array may change: every complex array.
                let arrays = self
                    .vars
                    .iter()
                    .flat_map(|(n, v)| match v {
                        CVar::Param(_) => vec![n.clone()],
                        CVar::Local => vec![part_name(n, 0), part_name(n, 1)],
                    })
                    .collect();
                Ok(Some((re, im.expect("complex"), arrays)))
            }
            _ => Ok(None),
        }
    }

    /// `target = value` with a complex side.
    pub(super) fn store(&mut self, target: &Expr, value: &Expr, span: Span) -> DResult<Vec<Stmt>> {
        if matches!(target.kind, ExprKind::Tuple(_)) {
            return Err(self
                .err(span, "complex values in a tuple assignment are not supported")
                .with_note("help: assign each value on its own line"));
        }
        let Some((tre, tim, written)) = self.target_parts(target)? else {
            return Err(self
                .err(target.span, "storing a complex value into a real array discards its imaginary part")
                .with_note("help: store `.real` (or `abs(...)`) explicitly, or make the array complex"));
        };
        let (re, im) = self.parts(value)?;
        let im = im.unwrap_or_else(|| float(0.0, value.span));
        Ok(self.ordered(tre, tim, re, im, &written, span))
    }

    /// `t_re = re; t_im = im`, in an order in which neither reads a part the other
    /// wrote (through a temporary when both would).
    pub(super) fn ordered(&mut self, tre: Expr, tim: Expr, re: Expr, im: Expr, written: &[String], span: Span) -> Vec<Stmt> {
        if !reads(&im, written) {
            vec![assign(tre, re, span), assign(tim, im, span)]
        } else if !reads(&re, written) {
            vec![assign(tim, im, span), assign(tre, re, span)]
        } else {
            self.counter += 1;
            let t = format!("_appy_c{}", self.counter);
            vec![
                assign(name(&t, span), im, span),
                assign(tre, re, span),
                assign(tim, name(&t, span), span),
            ]
        }
    }

    /// `target op= value` with a complex side: `+=` and `-=` update each part (a
    /// reduction stays one); the others are `target = target op value`.
    pub(super) fn update(&mut self, target: &Expr, op: BinOp, value: &Expr, span: Span) -> DResult<Vec<Stmt>> {
        let expanded = || {
            mk(
                ExprKind::Binary {
                    op,
                    lhs: Box::new(target.clone()),
                    rhs: Box::new(value.clone()),
                },
                span,
            )
        };
        if !matches!(op, BinOp::Add | BinOp::Sub) {
            return self.store(target, &expanded(), span);
        }
        let Some((tre, tim, written)) = self.target_parts(target)? else {
            return Err(self
                .err(target.span, "updating a real value with a complex one discards its imaginary part")
                .with_note("help: update it with `.real` explicitly, or make it complex"));
        };
        let (re, im) = self.parts(value)?;
        // The real part's update must not change what the imaginary part's reads.
        if im.as_ref().is_some_and(|im| reads(im, &written)) {
            return self.store(target, &expanded(), span);
        }
        let upd = |t: Expr, v: Expr| Stmt {
            kind: StmtKind::AugAssign { target: t, op, value: v },
            span,
            pragma: None,
        };
        let mut out = vec![upd(tre, re)];
        if let Some(im) = im {
            out.push(upd(tim, im));
        }
        Ok(out)
    }
}
