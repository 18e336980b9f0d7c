//! Array names rebound in sequential loops and `if` statements: `a, b = b, a` in a time
//! loop, `tmp = a; a = b; b = tmp`, `if flip: a = b`.
//!
//! An array name is a value, not storage: rebinding it swaps which buffer the name
//! means, as in Python, with no copy. A sequential loop whose body rebinds array names
//! that were bound before it carries them as loop values (`scf.for` iteration
//! arguments, yielded at the end of each iteration and bound to the loop's results
//! after it); an `if` whose branches rebind them yields them as `scf.if` results. So
//! every iteration sees the buffers the previous one left, and code after the loop or
//! branch sees the last ones: the caller's arrays then hold what NumPy's would (each
//! buffer holds what the program wrote into it).
//!
//! A carried name must stay an array of one element type and rank; views (`b = a[1:]`)
//! bound before the loop or branch and rebound in it are refused with a located error
//! (their offsets would have to be carried too).

use super::*;

/// An array name carried through a loop or a branch.
pub(super) struct Carried {
    name: String,
    /// Its value before the loop or branch.
    init: Value,
    /// The MLIR type every carried value has.
    ty: String,
    dtype: DType,
    rank: usize,
}

impl Lower<'_> {
    /// The array names `body` (the statements of a loop or of both branches) rebinds
    /// that are bound to arrays now: they are carried. A view bound now and rebound in
    /// `body` is an error.
    pub(super) fn carried_arrays(&mut self, bodies: &[&[Stmt]]) -> DResult<Vec<Carried>> {
        let mut assigned = vec![];
        for b in bodies {
            ast_names_assigned(b, &mut assigned);
        }
        let mut seen = HashSet::new();
        let mut out = vec![];
        for (n, span) in assigned {
            if !seen.insert(n.clone()) {
                continue;
            }
            match self.lookup(&n).cloned() {
                Some(Binding::Val(V::Arr(v, dtype, rank))) => {
                    let ty = self.b.m.ty(v).to_string();
                    out.push(Carried {
                        name: n,
                        init: v,
                        ty,
                        dtype,
                        rank,
                    });
                }
                Some(Binding::Val(V::View(_))) => {
                    return Err(self
                        .err(
                            span,
                            format!("`{n}` is a view bound before this loop or branch; rebinding it here is not supported"),
                        )
                        .with_note("help: give the new view its own name, or index the whole array instead of rebinding a view of it"));
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// Binds each carried name to `vals` (the loop's block arguments, or its results).
    pub(super) fn bind_carried(&mut self, carried: &[Carried], vals: &[Value]) {
        for (c, v) in carried.iter().zip(vals) {
            self.bind(&c.name, Binding::Val(V::Arr(*v, c.dtype, c.rank)));
        }
    }

    /// Fresh values of the carried names' types (block arguments, results).
    pub(super) fn carried_values(&mut self, carried: &[Carried]) -> Vec<Value> {
        carried.iter().map(|c| self.b.m.value(c.ty.clone())).collect()
    }

    /// The initial values of the carried names.
    pub(super) fn carried_inits(carried: &[Carried]) -> Vec<Value> {
        carried.iter().map(|c| c.init).collect()
    }

    /// The values the carried names have now (at the end of a loop body or branch). A name rebound to something else than an array of
    /// its element type and rank is an error at `span` (the loop or `if`).
    pub(super) fn carried_yields(&mut self, carried: &[Carried], span: Span) -> DResult<Vec<Value>> {
        let mut out = vec![];
        for c in carried {
            let v = match self.lookup(&c.name).cloned() {
                Some(Binding::Val(V::Arr(v, dt, r))) if dt == c.dtype && r == c.rank => v,
                _ => {
                    return Err(self
                        .err(
                            span,
                            format!(
                                "`{}` is an array of {} and rank {} before this loop or branch, and is rebound in it to something else",
                                c.name,
                                c.dtype.numpy(),
                                c.rank
                            ),
                        )
                        .with_note(
                            "help: rebind array names only to arrays of the same dtype and rank (`a, b = b, a`), or use a new name",
                        ));
                }
            };
            // Arrays of one dtype and rank have one type at this level (layouts come
            // later, `appy-cpu-strided`).
            if self.b.m.ty(v) != c.ty {
                return Err(self.err(
                    span,
                    format!("internal error: `{}` is carried as {} but is {}", c.name, c.ty, self.b.m.ty(v)),
                ));
            }
            out.push(v);
        }
        Ok(out)
    }
}
