//! Vector statements (`appy.vidx`): lane loops and lane reductions.

use super::*;
use appy_ir::schedule::Mark;

impl Lower<'_> {
    // ----- vector statements (appy.vidx) ----------------------------------------------

    pub(super) fn vidx_of(&self, e: &Expr) -> Option<(Value, Value, Value)> {
        let mut names = vec![];
        expr_names(e, &mut names);
        names.iter().find_map(|(n, _)| match self.lookup(n) {
            Some(Binding::Val(V::Vidx { start, len, bound })) => Some((*start, *len, *bound)),
            _ => None,
        })
    }

    /// Runs a statement over the lanes of the vector(s) it uses. Reductions of vectors
    /// (`sum(a[vi])`) are computed first, each by a lane loop with a reduction.
    pub(super) fn vector_stmt(&mut self, s: &Stmt) -> DResult<()> {
        let mut stmt = s.clone();
        stmt.pragma = s.pragma.clone();
        // Hoist vector reductions into scalars bound to fresh names.
        let mut counter = 0;
        let mut hoisted: Vec<(String, Reduction, Expr)> = vec![];
        let mut rewrite = |e: &mut Expr, this: &Self| {
            crate::sema::shape::hoist_vector_reductions(this, e, &mut counter, &mut hoisted);
        };
        match &mut stmt.kind {
            StmtKind::Assign { value, .. } => rewrite(value, self),
            StmtKind::AugAssign { value, .. } => rewrite(value, self),
            _ => {}
        }
        for (name, op, arg) in &hoisted {
            let (start, len, bound) = self.vidx_of(arg).expect("vector reduction");
            let r = self.lane_loop(start, len, bound, Some((*op, arg)), None)?;
            let (v, t) = r.expect("reduction result");
            self.bind(name, Binding::Val(V::S(v, t)));
        }
        let uses = match &stmt.kind {
            StmtKind::Assign { targets, value } => targets.iter().any(|t| self.vidx_of(t).is_some()) || self.vidx_of(value).is_some(),
            StmtKind::AugAssign { target, value, .. } => self.vidx_of(target).is_some() || self.vidx_of(value).is_some(),
            _ => false,
        };
        if !uses {
            return self.stmt(&stmt);
        }
        let probe = match &stmt.kind {
            StmtKind::Assign { targets, value } => targets.iter().find_map(|t| self.vidx_of(t)).or_else(|| self.vidx_of(value)),
            StmtKind::AugAssign { target, value, .. } => self.vidx_of(target).or_else(|| self.vidx_of(value)),
            _ => None,
        };
        let (start, len, bound) = probe.expect("vector statement");
        for t in targets_of(&stmt.kind) {
            if let ExprKind::Name(n) = &t.kind {
                return Err(self.err(
                    t.span,
                    format!("cannot assign a vector to the scalar `{n}`; reduce it with sum/max/min or store it into an array"),
                ));
            }
        }
        self.lane_loop(start, len, bound, None, Some(&stmt))?;
        Ok(())
    }

    /// A lane loop `for l in [0, min(len, bound - start))` with every vidx name bound
    /// to `start + l`; either reduces `red` or runs `stmt` per lane.
    pub(super) fn lane_loop(
        &mut self,
        start: Value,
        len: Value,
        bound: Value,
        red: Option<(Reduction, &Expr)>,
        stmt: Option<&Stmt>,
    ) -> DResult<Option<(Value, STy)>> {
        let rem = self.b.bin("arith.subi", bound, start);
        let n = self.b.bin("arith.minsi", len, rem);
        let zero = self.b.int(0, "i64");
        let n = self.b.bin("arith.maxsi", n, zero);
        let c0 = self.b.index(0);
        let c1 = self.b.index(1);
        let ni = self.b.to_index(n);
        let iv = self.b.m.value("index");
        // Names bound to vidx objects with this start become lane indices.
        let vnames: Vec<String> = self
            .scopes
            .iter()
            .flat_map(|s| s.vars.iter())
            .filter_map(|(k, b)| match b {
                Binding::Val(V::Vidx { start: s0, .. }) if *s0 == start => Some(k.clone()),
                _ => None,
            })
            .collect();
        // Infer the reduction's type by evaluating once in a throwaway region.
        self.b.begin();
        self.push_scope(ScopeKind::Simd, NO_SCOPE);
        let k = self.b.to_i64(iv);
        let lane = self.b.bin("arith.addi", start, k);
        for n in &vnames {
            self.bind(n, Binding::Val(V::S(lane, STy::INT)));
        }
        let mut out = None;
        let mut red_ty = None;
        if let Some((op, e)) = red {
            let V::S(x, t) = self.expr(e)? else {
                return Err(self.err(e.span, "cannot reduce this expression"));
            };
            self.reduction_type_ok(op, t.dt, e.span)?;
            red_ty = Some((op, t));
            let mut reduce = Op::new("scf.reduce").with_operands([x]);
            reduce.regions.push(self.b.combiner(op, t.mlir()));
            self.b.push(reduce);
        } else if let Some(s) = stmt {
            let mut s2 = s.clone();
            if !matches!(s2.pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic)) {
                s2.pragma = None;
            }
            match &s2.kind {
                StmtKind::Assign { targets, value } => self.assign(targets, value, &s2)?,
                StmtKind::AugAssign { target, op, value } => self.aug_assign(target, *op, value, &s2)?,
                _ => unreachable!("vector statements are assignments"),
            }
            self.b.op0("scf.reduce", &[], &[]);
        }
        let mut ops = self.b.end();
        self.pop_scope(&mut ops);
        let mut op = Op::new("scf.parallel")
            .with_mark(Mark::Simd)
            .with_region(Builder::region(vec![iv], ops));
        if let Some((rop, t)) = red_ty {
            let init = self.b.constant(rop.identity(t.dt), t.mlir());
            let r = self.b.m.value(t.mlir());
            op.operands = vec![c0, ni, c1, init];
            op.results = vec![r];
            op.set_attr("operandSegmentSizes", "array<i32: 1, 1, 1, 1>");
            out = Some((r, t));
        } else {
            op.operands = vec![c0, ni, c1];
            op.set_attr("operandSegmentSizes", "array<i32: 1, 1, 1, 0>");
        }
        op.loc = self.b.loc.clone();
        self.b.push(op);
        Ok(out)
    }
}
