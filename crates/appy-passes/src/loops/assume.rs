//! `appy-assume{iname=j multiple=K}`: Loopy's `assume`, for one fact a schedule can use:
//! the trip count of loop `j` is a multiple of `K`. The loop records it (`appy.multiple`,
//! `appy_ir::schedule::MULTIPLE`), and `appy-split-iname` then splits it by a factor
//! dividing `K` without the rest loop.
//!
//! The pass trusts the fact. From the source, `transform(assume(j, multiple=K))`, the
//! frontend also checks it at run time before every execution of the loop, through the
//! status buffer: a trip count that is not a multiple is the program's error at the
//! clause, never a silently wrong result. A multiple that the loop's constant bounds
//! contradict is refused at compile time.

use super::{Select, no_such_loop, replace_named};
use crate::analyses::nest::{const_bounds, int_constants, trip_count};
use crate::analyses::within::Within;
use crate::{Pass, PassInfo, PassOpt, PassOptions};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::MULTIPLE;

/// The pass.
pub struct Assume {
    /// The loop.
    pub iname: String,
    /// What its trip count is a multiple of.
    pub multiple: i64,
    /// Only the loops this matches (Loopy's `within=`).
    pub within: Option<Within>,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-assume",
    description: "record that the trip count of the loop named `iname` is a multiple of `multiple` (Loopy's assume), for appy-split-iname",
    options: &[
        PassOpt {
            name: "iname",
            kind: crate::OptKind::Loops,
            default: "",
            help: "the loop",
        },
        PassOpt {
            name: "multiple",
            kind: crate::OptKind::Int { min: 1, max: 1 << 30 },
            default: "1",
            help: "what its trip count is a multiple of",
        },
        PassOpt::WITHIN,
    ],
    file: file!(),
    make: |o| Ok(Box::new(Assume::from_options(o)?)),
};

impl Assume {
    /// The pass with the options of a pipeline (or of a `transform(assume(...))` clause).
    pub fn from_options(o: &PassOptions) -> Result<Assume, String> {
        Ok(Assume {
            within: o.within()?,
            iname: o.loops("iname")?,
            multiple: o.int("multiple")?,
        })
    }

    /// Records the fact on the loop in one function's body.
    pub(crate) fn apply(&self, func: &Op, ops: Vec<Op>) -> Result<Vec<Op>, IrError> {
        if self.iname.is_empty() {
            return Err(IrError::user_at(func, "appy-assume needs the loop: iname=NAME"));
        }
        let consts = int_constants(&ops);
        let n = &self.iname;
        let sel = Select::new(func, &ops, n, self.within.as_ref());
        let (out, found) = replace_named(ops, &sel, Default::default(), &mut |mut op, _| {
            if op.name != "scf.for" && op.name != "scf.parallel" {
                return Err(IrError::user_at(&op, format!("`{n}` is not a loop")));
            }
            if let Some((l, u, s)) = const_bounds(&op, &consts)
                && s > 0
                && u.checked_sub(l).and_then(|d| d.checked_add(s)).is_some()
                && trip_count(l, u, s) % self.multiple != 0
            {
                return Err(IrError::user_at(
                    &op,
                    format!(
                        "assume: loop `{n}` runs {} iterations, not a multiple of {}",
                        trip_count(l, u, s),
                        self.multiple
                    ),
                ));
            }
            op.set_attr(MULTIPLE, format!("{} : i64", self.multiple));
            Ok(vec![op])
        })?;
        if !found {
            return Err(no_such_loop(func, INFO.name, &sel, &out));
        }
        Ok(out)
    }
}

/// The multiple a loop's trip count is known to be of (`appy.multiple`), if any.
pub(crate) fn multiple_of(op: &Op) -> Option<i64> {
    op.attr(MULTIPLE)?.split(':').next()?.trim().parse().ok()
}

impl Pass for Assume {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| rw.rewrite_functions(|_, func, ops| self.apply(func, ops)))
    }
}
