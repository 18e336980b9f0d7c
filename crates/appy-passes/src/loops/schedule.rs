//! `appy-schedule`: runs the transforms a program asks for in its pragmas
//! (`#pragma parallel for transform(split(j, 4, inner=unr))`). The frontend records
//! them on the annotated loop as `appy.transforms` (`appy_ir::schedule::TRANSFORMS`), an array of pass invocations with
//! the loops' inames resolved (`["appy-split-iname{iname=j factor=4 outer-tag=for
//! inner-tag=unr}"]`); this pass applies them in source order, through the same
//! passes and option parsing as a pipeline, and removes the attribute.
//!
//! With `cpu=1` (the CPU back end), a split into groups and threads (`g.0`/`l.0`) is a
//! GPU schedule and is skipped: the loop stays one parallel loop, which OpenMP
//! schedules. Splits and tags of sequential loops apply on both back ends.
//!
//! A prefetch into shared memory (`appy-add-prefetch`) needs the lanes that
//! strip-mining makes: it stays recorded on the loop (`appy.transforms`, which the
//! loop's other transforms carry along) for `appy-add-prefetch` after strip-mining. On
//! the CPU, which has no shared memory, it is dropped.

use super::add_prefetch::{self, AddPrefetch};
use super::assume::{self, Assume};
use super::join_inames::{self, JoinInames};
use super::privatize::{self, Privatize};
use super::reorder::{self, Reorder};
use super::split_iname::{self, SplitIname};
use super::tag_inames::{self, TagInames};
use crate::{Pass, PassInfo, PassOpt, PassOptions};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;
use appy_ir::schedule::{TRANSFORMS, Tag, parse_str_array, str_array};

/// The pass.
pub struct Schedule {
    /// For the CPU back end.
    pub cpu: bool,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-schedule",
    description: "apply the transforms the pragmas ask for (`transform(...)` clauses, recorded as appy.transforms)",
    options: &[PassOpt::CPU],
    file: file!(),
    make: |o| Ok(Box::new(Schedule { cpu: o.flag("cpu")? })),
};

/// One recorded transform.
enum Transform {
    Split(SplitIname),
    Tag(TagInames),
    Reorder(Reorder),
    Join(JoinInames),
    Prefetch(AddPrefetch),
    Assume(Assume),
    Privatize(Privatize),
}

/// Parses one recorded invocation (`appy-split-iname{...}`) with its pass's options.
fn parse(text: &str, at: &Op) -> Result<Transform, IrError> {
    let (name, rest) = text.split_once('{').unwrap_or((text, "}"));
    let opts = rest.strip_suffix('}').unwrap_or(rest);
    let bad = |e: String| IrError::user_at(at, format!("bad transform `{text}`: {e}"));
    let options = |info: &PassInfo| PassOptions::parse(info, opts).map_err(bad);
    match name {
        "appy-split-iname" => Ok(Transform::Split(
            SplitIname::from_options(&options(&split_iname::INFO)?).map_err(bad)?,
        )),
        "appy-tag-inames" => Ok(Transform::Tag(TagInames::from_options(&options(&tag_inames::INFO)?).map_err(bad)?)),
        "appy-reorder" => Ok(Transform::Reorder(Reorder::from_options(&options(&reorder::INFO)?).map_err(bad)?)),
        "appy-privatize" => Ok(Transform::Privatize(
            Privatize::from_options(&options(&privatize::INFO)?).map_err(bad)?,
        )),
        "appy-assume" => Ok(Transform::Assume(Assume::from_options(&options(&assume::INFO)?).map_err(bad)?)),
        "appy-add-prefetch" => Ok(Transform::Prefetch(
            AddPrefetch::from_options(&options(&add_prefetch::INFO)?).map_err(bad)?,
        )),
        "appy-join-inames" => Ok(Transform::Join(
            JoinInames::from_options(&options(&join_inames::INFO)?).map_err(bad)?,
        )),
        _ => Err(bad(
            "known transforms: appy-split-iname, appy-tag-inames, appy-reorder, appy-join-inames, appy-assume, appy-privatize, appy-add-prefetch".into(),
        )),
    }
}

/// Takes the recorded transforms out of `ops`, in program order: each with the
/// annotated loop's location and the attribute's strings. Prefetches stay on the loop
/// for `appy-add-prefetch`, except on the CPU (`args`: the function's parameters),
/// where they are checked against the loop and left in the list.
fn take_recorded(ops: &mut [Op], out: &mut Vec<(Op, Vec<String>)>, cpu: Option<&[Value]>) -> Result<(), IrError> {
    for o in ops {
        if let Some(v) = o.remove_attr(TRANSFORMS) {
            let at = Op::new(o.name.clone()).with_loc(o.loc.clone());
            let (prefetch, now): (Vec<String>, Vec<String>) =
                parse_str_array(&v).into_iter().partition(|t| t.starts_with("appy-add-prefetch{"));
            match cpu {
                None => {
                    if !prefetch.is_empty() {
                        o.set_attr(TRANSFORMS, str_array(&prefetch));
                    }
                    out.push((at, now));
                }
                Some(args) => {
                    for text in &prefetch {
                        if let Transform::Prefetch(p) = parse(text, &at)?
                            && let Some(a) = usize::try_from(p.array).ok().and_then(|k| args.get(k))
                        {
                            p.check_loop(o, *a)?;
                        }
                    }
                    out.push((at, now.into_iter().chain(prefetch).collect()));
                }
            }
        }
        for r in &mut o.regions {
            for b in &mut r.blocks {
                take_recorded(&mut b.ops, out, cpu)?;
            }
        }
    }
    Ok(())
}

impl Pass for Schedule {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| {
            rw.rewrite_functions(|b, func, mut ops| {
                let mut recorded = vec![];
                let args = func.regions[0].blocks[0].args.clone();
                take_recorded(&mut ops, &mut recorded, self.cpu.then_some(args.as_slice()))?;
                for (at, list) in recorded {
                    for text in list {
                        match parse(&text, &at)? {
                            Transform::Split(s) => {
                                if self.cpu && s.outer == Tag::Group(0) && s.inner == Tag::Local(0) {
                                    tracing::debug!(
                                        iname = s.iname.as_str(),
                                        "a split into groups and threads is a GPU schedule: skipped on the CPU"
                                    );
                                    continue;
                                }
                                ops = s.apply(b, func, ops)?;
                            }
                            Transform::Tag(t) => ops = t.apply(&b.m, func, ops)?,
                            Transform::Reorder(r) => ops = r.apply(&b.m, func, ops)?,
                            Transform::Join(j) => ops = j.apply(b, func, ops)?,
                            Transform::Assume(a) => ops = a.apply(func, ops)?,
                            Transform::Privatize(p) => ops = p.apply(b, func, ops)?,
                            Transform::Prefetch(p) => {
                                // Checked as on the GPU, then dropped: no shared memory.
                                p.array_value(b, func, &ops)?;
                                tracing::debug!("a prefetch into shared memory is a GPU schedule: skipped on the CPU");
                            }
                        }
                    }
                }
                Ok(ops)
            })
        })
    }
}
