//! `appy-tag-inames{tags=j:unr,k:ord}`: Loopy's `tag_inames`, setting how named loops
//! run.
//!
//! A sequential loop (`scf.for`) takes `unr` (unrolled by `appy-unroll`; its trip count
//! must be a constant), `ilp` (the same, for a loop whose iterations are independent: one
//! that carries no value from one iteration to the next), `for` or `ord` (in order, as
//! it runs anyway). Groups and threads (`g.N`, `l.N`) come from splitting a parallel
//! loop (`appy-split-iname{outer-tag=g.0 inner-tag=l.0}`), and a parallel loop is not
//! made sequential here; each refusal says so at the loop's source line.

use super::{Place, Select, carried_dependence, no_such_loop, replace_named};
use crate::analyses::nest::{const_bounds, int_constants};
use crate::analyses::within::Within;
use crate::{Pass, PassInfo, PassOpt, PassOptions};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::Tag;
use std::collections::HashMap;

/// The pass.
pub struct TagInames {
    /// Each loop's name and its new tag.
    pub tags: Vec<(String, Tag)>,
    /// Only the loops this matches (Loopy's `within=`).
    pub within: Option<Within>,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-tag-inames",
    description: "tag named loops (Loopy's tag_inames): unr, ilp, for, ord on sequential loops",
    options: &[
        PassOpt {
            name: "tags",
            kind: crate::OptKind::InameTags,
            default: "",
            help: "the loops and their tags, `j:unr,k:ord`",
        },
        PassOpt::WITHIN,
    ],
    file: file!(),
    make: |o| Ok(Box::new(TagInames::from_options(o)?)),
};

impl TagInames {
    /// The pass with the options of a pipeline (or of a `transform(tag(...))` clause).
    pub fn from_options(o: &PassOptions) -> Result<TagInames, String> {
        Ok(TagInames {
            within: o.within()?,
            tags: o.iname_tags("tags")?,
        })
    }

    /// Tags the loops in one function's body.
    pub(crate) fn apply(&self, m: &Module, func: &Op, mut ops: Vec<Op>) -> Result<Vec<Op>, IrError> {
        let consts = int_constants(&ops);
        for (name, tag) in &self.tags {
            let sel = Select::new(func, &ops, name, self.within.as_ref());
            let (new, found) = replace_named(ops, &sel, Place::default(), &mut |mut op, _| {
                check(m, &op, name, *tag, &consts)?;
                op.set_tags(&[*tag]);
                Ok(vec![op])
            })?;
            if !found {
                // Nothing was replaced: `new` is the body as it was.
                return Err(no_such_loop(func, INFO.name, &sel, &new));
            }
            ops = new;
        }
        Ok(ops)
    }
}

/// Whether loop `op` (named `n`) may take `tag`; the refusal says why.
fn check(m: &Module, op: &Op, n: &str, tag: Tag, consts: &HashMap<Value, i64>) -> Result<(), IrError> {
    if op.name != "scf.for" {
        return Err(IrError::user_at(
            op,
            format!(
                "loop `{n}` is parallel: it gets groups and threads by appy-split-iname{{iname={n} outer-tag=g.0 inner-tag=l.0}}; appy-tag-inames tags sequential loops"
            ),
        ));
    }
    match tag {
        Tag::Unr | Tag::Ilp => {
            if const_bounds(op, consts).is_none() {
                return Err(IrError::user_at(
                    op,
                    format!(
                        "loop `{n}` cannot be unrolled: its trip count is not a constant. Split it first and unroll the inner loop: `split({n}, 4, inner={tag})` in a pragma's transform(...), appy-split-iname{{iname={n} factor=4 inner-tag={tag}}} in a pipeline"
                    ),
                ));
            }
            if tag == Tag::Ilp
                && let Some(why) = carried_dependence(m, op)
            {
                return Err(IrError::user_at(
                    op,
                    format!("the iterations of loop `{n}` are not independent as `ilp` requires ({why}): unroll it with `unr` instead"),
                ));
            }
            Ok(())
        }
        Tag::For | Tag::Ord => Ok(()),
        Tag::Group(_) | Tag::Local(_) | Tag::Vec => Err(IrError::user_at(
            op,
            format!(
                "loop `{n}` is sequential: running it as {tag} needs its iterations to be independent, which appy-tag-inames does not prove (a sequential loop takes unr, ilp, for or ord); annotate it as a parallel loop in the source instead"
            ),
        )),
    }
}

impl Pass for TagInames {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| rw.rewrite_functions(|b, func, ops| self.apply(&b.m, func, ops)))
    }
}
