//! Loops that may stop early: `while` loops, and sequential `for` loops whose body
//! sets a `break` flag ([`StmtKind::For::stop`]). Both become `scf.while`: the
//! condition region evaluates the test, the body region runs the statements.

use super::*;

impl<'a> Lower<'a> {
    /// `while cond: body`.
    pub(super) fn while_loop(&mut self, cond: &Expr, body: &[Stmt], s: &Stmt) -> DResult<()> {
        self.stoppable(body, s, None, None, &mut |l| {
            let c = l.expr(cond)?;
            l.as_bool(c, cond.span)
        })
    }

    /// A sequential `for var in range(lb, ub, step)` whose body sets `flag` to break.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn stop_loop(
        &mut self,
        var: &Ident,
        (lb, ub, step, cstep): (Value, Value, Value, Option<i64>),
        flag: &str,
        body: &[Stmt],
        s: &Stmt,
        iname: &str,
    ) -> DResult<()> {
        let (l, u, st, direct) = self.loop_bounds(lb, ub, step, cstep);
        let prev = self.lookup(&var.name).cloned();
        if let Some(Binding::Slot(..)) = prev {
            return Err(self.err(
                var.span,
                format!("loop variable `{}` is also used as an ordinary variable", var.name),
            ));
        }
        let flag_expr = Expr {
            kind: ExprKind::Name(flag.to_string()),
            span: s.span,
        };
        let counter = Counter {
            l,
            u,
            st,
            lb,
            step,
            direct,
        };
        let r = self.stoppable(body, s, Some((var, counter)), Some(iname), &mut |lw| {
            let f = lw.expr(&flag_expr)?;
            lw.as_bool(f, s.span)
        });
        match prev {
            Some(p) => self.bind(&var.name, p),
            None => self.bind(&var.name, Binding::Private(s.span)),
        }
        r
    }

    /// An `scf.while` running `body` while `test` holds (and, with a counter, while
    /// the counter is in range and `test`, the break flag, is false); the arrays the
    /// body rebinds are carried. A counted loop carries its iname, as an `scf.for`.
    fn stoppable(
        &mut self,
        body: &[Stmt],
        s: &Stmt,
        counter: Option<(&Ident, Counter)>,
        iname: Option<&str>,
        test: &mut dyn FnMut(&mut Self) -> DResult<Value>,
    ) -> DResult<()> {
        let carried = self.carried_arrays(&[body])?;
        let mut inits = Self::carried_inits(&carried);
        if let Some((_, c)) = &counter {
            inits.insert(0, c.l);
        }
        let region_args = |l: &mut Self| -> (Option<Value>, Vec<Value>) {
            let k = counter.as_ref().map(|_| l.b.m.value("index"));
            let vals = l.carried_values(&carried);
            l.bind_carried(&carried, &vals);
            (k, vals)
        };
        // The test.
        let (kb, before) = region_args(self);
        self.b.begin();
        let t = test(self)?;
        let go = match (&counter, kb) {
            (Some((_, c)), Some(k)) => {
                let in_range = self.b.cmpi(IPred::Slt, k, c.u);
                let t_ = self.b.int(1, "i1");
                let not_stopped = self.b.bin("arith.xori", t, t_);
                self.b.bin("arith.andi", in_range, not_stopped)
            }
            _ => t,
        };
        let passed: Vec<Value> = kb.into_iter().chain(before.iter().copied()).collect();
        self.b
            .push(Op::new("scf.condition").with_operands(std::iter::once(go).chain(passed.iter().copied())));
        let before_ops = self.b.end();
        // The body.
        let (ka, after) = region_args(self);
        self.b.begin();
        if let (Some((var, c)), Some(k)) = (&counter, ka) {
            let i = self.iv_value(k, c.lb, c.step, c.direct);
            self.bind(&var.name, Binding::Val(V::S(i, STy::INT)));
        }
        self.block(body)?;
        let mut yields = self.carried_yields(&carried, s.span)?;
        if let (Some((_, c)), Some(k)) = (&counter, ka) {
            yields.insert(0, self.b.bin("arith.addi", k, c.st));
        }
        self.b.push(Builder::yield_op(&yields));
        let after_ops = self.b.end();
        self.set_loc(s.span);
        let kr = counter.as_ref().map(|_| self.b.m.value("index"));
        let results = self.carried_values(&carried);
        let mut op = Op::new("scf.while")
            .with_operands(inits)
            .with_results(kr.into_iter().chain(results.iter().copied()))
            .with_region(Builder::region(kb.into_iter().chain(before).collect(), before_ops))
            .with_region(Builder::region(ka.into_iter().chain(after).collect(), after_ops));
        if let Some(n) = iname {
            op.set_inames(&[n]);
        }
        self.b.push(op);
        self.bind_carried(&carried, &results);
        Ok(())
    }
}

/// The counter of a `for` loop that may stop early: it runs over `[l, u)` by `st`, and
/// the loop variable is [`Lower::iv_value`] of it.
#[derive(Clone, Copy)]
struct Counter {
    l: Value,
    u: Value,
    st: Value,
    lb: Value,
    step: Value,
    direct: bool,
}
