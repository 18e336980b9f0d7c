//! A [`Rewriter`]: owns a module while a pass rewrites it, with a [`Builder`] over the
//! module's value table (new values and ops, at the builder's insertion point) and the
//! module's top-level ops held apart, so that a pass can hold a function mutably and
//! create values at the same time.

use crate::build::Builder;
use crate::ir::{Module, Op};

/// A module being rewritten (see the module docs).
pub struct Rewriter {
    /// Creates values and ops; `b.m` is the module without its top-level ops.
    pub b: Builder,
    /// The module's top-level ops (functions, the kernel module).
    pub top: Vec<Op>,
}

impl Rewriter {
    /// Takes over `m`.
    pub fn new(mut m: Module) -> Rewriter {
        let top = std::mem::take(m.body_mut());
        Rewriter { b: Builder::over(m), top }
    }

    /// The module, with the top-level ops back in place.
    pub fn finish(self) -> Module {
        let mut m = self.b.m;
        *m.body_mut() = self.top;
        m
    }

    /// Calls `f` on each `func.func` with a body: `f(builder, function, body ops)`
    /// returns the new body. Each function starts with no current location.
    pub fn rewrite_functions<E>(&mut self, mut f: impl FnMut(&mut Builder, &Op, Vec<Op>) -> Result<Vec<Op>, E>) -> Result<(), E> {
        for func in &mut self.top {
            if func.name != "func.func" || func.regions.is_empty() || func.regions[0].blocks.is_empty() {
                continue;
            }
            let ops = std::mem::take(&mut func.regions[0].blocks[0].ops);
            self.b.loc = None;
            let new = f(&mut self.b, func, ops)?;
            func.regions[0].blocks[0].ops = new;
        }
        Ok(())
    }
}

/// Rewrites `m` in place with `f`; the module is whole again when `f` returns, also on
/// an error.
pub fn rewrite<R>(m: &mut Module, f: impl FnOnce(&mut Rewriter) -> R) -> R {
    let mut rw = Rewriter::new(std::mem::take(m));
    let r = f(&mut rw);
    *m = rw.finish();
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Region;

    #[test]
    fn rewrites_function_bodies_with_new_values() {
        let mut m = Module::new();
        let f = Op::new("func.func").with_region(Region::single(crate::ir::Block::default()));
        m.body_mut().push(f);
        let r: Result<(), String> = rewrite(&mut m, |rw| {
            rw.rewrite_functions(|b, _, mut ops| {
                let c = b.index(3);
                ops.extend(b.take());
                ops.push(Op::new("func.return").with_operands([c]));
                Ok(ops)
            })
        });
        r.unwrap();
        assert_eq!(m.body().len(), 1);
        let ops = &m.body()[0].body(0).ops;
        assert_eq!(ops.len(), 2);
        assert_eq!(m.ty(ops[0].result()), "index");
    }
}
