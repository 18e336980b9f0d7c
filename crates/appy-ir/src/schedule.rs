//! appy's loop vocabulary, in one place: the marks a loop carries at the `appy` and
//! `loops` levels ([`Mark`], each a unit attribute), the loop kinds they make
//! ([`LoopKind`]), and Loopy's iname tags ([`Tag`]: `g.N`, `l.N`, `unr`, `ilp`, `vec`,
//! `ord`, `for`), which name what each kind of loop is run as today.
//!
//! Passes ask an op for its marks and kind here instead of matching attribute names:
//!
//! ```
//! use appy_ir::ir::Op;
//! use appy_ir::schedule::{LoopKind, Mark, Tag};
//! let op = Op::new("scf.parallel").with_mark(Mark::Parallel);
//! assert!(op.has_mark(Mark::Parallel));
//! assert_eq!(LoopKind::of(&op), Some(LoopKind::Workers));
//! assert_eq!(LoopKind::Workers.tag(0), Tag::Group(0));
//! assert_eq!("l.0".parse::<Tag>(), Ok(Tag::Local(0)));
//! ```

use crate::attrs::{Scalar, parse_constant, str_attr, unescape_str};
use crate::ir::Op;
use std::fmt;
use std::str::FromStr;

/// A mark on a loop (a unit attribute): what the frontend, the tensor passes and
/// strip-mining say the loop is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mark {
    /// `appy.parallel`: a parallel loop, whose iterations are workers (`#pragma
    /// parallel for`, `prange`, a tensor statement's parallel dimension).
    Parallel,
    /// `appy.simd`: a vector loop (`#pragma simd`, a tensor statement's simd dimension).
    Simd,
    /// `appy.auto_simd`: a vector loop the compiler chose (inner-loop vectorisation).
    AutoSimd,
    /// `appy.prange`: a parallel loop written with `prange`.
    Prange,
    /// `appy.sequential`: a loop annotated as sequential.
    Sequential,
    /// `appy.lanes`: the lanes of one MVL-wide vector (`loops` level).
    Lanes,
    /// `appy.chunks`: the loop over a vector loop's MVL-wide chunks (`loops` level).
    Chunks,
    /// `appy.nosync`: the loop's writes need no barrier around it (`appy-tensor-sync`).
    NoSync,
    /// `appy.zero_fill`: the fill loop of an `np.zeros` array.
    ZeroFill,
}

impl Mark {
    /// Every mark.
    pub const ALL: [Mark; 9] = [
        Mark::Parallel,
        Mark::Simd,
        Mark::AutoSimd,
        Mark::Prange,
        Mark::Sequential,
        Mark::Lanes,
        Mark::Chunks,
        Mark::NoSync,
        Mark::ZeroFill,
    ];

    /// The attribute's name.
    pub const fn attr(self) -> &'static str {
        match self {
            Mark::Parallel => "appy.parallel",
            Mark::Simd => "appy.simd",
            Mark::AutoSimd => "appy.auto_simd",
            Mark::Prange => "appy.prange",
            Mark::Sequential => "appy.sequential",
            Mark::Lanes => "appy.lanes",
            Mark::Chunks => "appy.chunks",
            Mark::NoSync => "appy.nosync",
            Mark::ZeroFill => "appy.zero_fill",
        }
    }
}

/// `appy.le`: a simd dimension's bound `le(c)` from a tensor pragma (the extent is at
/// most `c`), an `i64` attribute.
pub const LE: &str = "appy.le";

impl Op {
    /// Whether the op carries mark `m`.
    pub fn has_mark(&self, m: Mark) -> bool {
        self.has_attr(m.attr())
    }
    /// Adds mark `m`.
    pub fn set_mark(&mut self, m: Mark) {
        self.set_attr(m.attr(), "unit");
    }
    /// Builder: adds mark `m`.
    pub fn with_mark(mut self, m: Mark) -> Self {
        self.set_mark(m);
        self
    }
    /// Removes mark `m` (whether it was there).
    pub fn clear_mark(&mut self, m: Mark) -> bool {
        self.remove_attr(m.attr()).is_some()
    }
    /// The `le(c)` bound of a simd loop ([`LE`]), when it has one.
    pub fn le_bound(&self) -> Option<i64> {
        match parse_constant(self.attr(LE)?, "i64")? {
            Scalar::Int(c) => Some(c),
            Scalar::Float(_) => None,
        }
    }
    /// Sets the `le(c)` bound.
    pub fn set_le_bound(&mut self, c: i64) {
        self.set_attr(LE, format!("{c} : i64"));
    }
}

/// `appy.buffer`: on a `memref.alloca` of a static size, a parallel iteration's
/// scratchpad (`appy.buffer(size, dtype)` in the source, APPy's group mode): on the GPU
/// the group's shared memory (`appy-gpu-outline`), on the CPU a thread's stack array.
pub const BUFFER: &str = "appy.buffer";

/// The largest `appy.buffer` scratchpads of one parallel iteration, in bytes: the static
/// shared memory of a GPU group.
pub const BUFFER_BYTES: i64 = 48 * 1024;

/// `appy.transforms`: on a loop with a pragma, the transforms its `transform(...)`
/// clause asks for, as pass invocations with the loops' inames resolved
/// (`["appy-split-iname{iname=j factor=4 outer-tag=for inner-tag=unr}"]`); the frontend
/// writes it, `appy-schedule` applies and removes it.
pub const TRANSFORMS: &str = "appy.transforms";

/// On a loop: a number its trip count is a multiple of (`appy-assume`, from a
/// `transform(assume(j, multiple=K))` clause, which the frontend also checks at run
/// time); `appy-split-iname` then needs no rest loop for a factor dividing it.
pub const MULTIPLE: &str = "appy.multiple";

/// `appy.inames`: the names of a loop's dimensions, one per induction variable, as an
/// array of strings (`appy.inames = ["i"]`). A loop written in the source is named after
/// its loop variable, made unique in the function (`i`, then `i_1`, `i_2`, ... for later
/// loops over another `i`), so that a transform can address it by name, as Loopy's
/// inames are addressed.
pub const INAMES: &str = "appy.inames";

/// The prefix of every name the compiler makes (inames, kernels, scalars), which user
/// code should not use (as Loopy reserves `_lp_`).
pub const RESERVED_PREFIX: &str = "_appy_";

/// `base`, else `base_1`, `base_2`, ...: the first name that is not `taken` (how a
/// second loop over `i` becomes `i_1`).
pub fn unique_iname(base: &str, taken: impl Fn(&str) -> bool) -> String {
    let mut name = base.to_string();
    let mut k = 0;
    while taken(&name) {
        k += 1;
        name = format!("{base}_{k}");
    }
    name
}

impl Op {
    /// The names of the loop's dimensions ([`INAMES`]); empty when it has none.
    pub fn inames(&self) -> Vec<String> {
        self.attr(INAMES).map(parse_str_array).unwrap_or_default()
    }
    /// Names the loop's dimensions.
    pub fn set_inames<S: AsRef<str>>(&mut self, names: &[S]) {
        self.set_attr(INAMES, str_array(names));
    }

    /// The loop's iname tags ([`TAGS`]), one per dimension; empty when it has none (an
    /// unknown tag reads as none: the verifier of the passes that set tags checks them).
    pub fn tags(&self) -> Vec<Tag> {
        let Some(text) = self.attr(TAGS) else { return vec![] };
        parse_str_array(text)
            .iter()
            .map(|t| t.parse())
            .collect::<Result<_, _>>()
            .unwrap_or_default()
    }
    /// Tags the loop's dimensions.
    pub fn set_tags(&mut self, tags: &[Tag]) {
        let items: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
        self.set_attr(TAGS, str_array(&items));
    }
    /// Builder: tags the loop's dimensions.
    pub fn with_tags(mut self, tags: &[Tag]) -> Self {
        self.set_tags(tags);
        self
    }
}

/// `appy.tags`: how each dimension of a loop is run, as Loopy's iname tags (an array
/// of strings, `appy.tags = ["g.0"]`). A loop that has tags is scheduled: strip-mining
/// leaves it as it is, and code generation reads its kind from them ([`LoopKind::of`]).
pub const TAGS: &str = "appy.tags";

/// An MLIR array of string attributes (`["i", "j_1"]`), escaped.
pub fn str_array<S: AsRef<str>>(items: &[S]) -> String {
    let items: Vec<String> = items.iter().map(|n| str_attr(n.as_ref())).collect();
    format!("[{}]", items.join(", "))
}

/// The strings of an MLIR array of string attributes (`["i", "j_1"]`), unescaped.
pub fn parse_str_array(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut rest = text.trim().trim_start_matches('[');
    while let Some(start) = rest.find('"') {
        let body = &rest[start + 1..];
        // The closing quote: the first one not escaped.
        let mut end = None;
        let mut k = 0;
        let bytes = body.as_bytes();
        while k < bytes.len() {
            match bytes[k] {
                b'\\' => k += 2,
                b'"' => {
                    end = Some(k);
                    break;
                }
                _ => k += 1,
            }
        }
        let Some(end) = end else { break };
        out.push(unescape_str(&body[..end]));
        rest = &body[end + 1..];
    }
    out
}

/// What a loop is, from its op and marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoopKind {
    /// `scf.parallel` marked [`Mark::Parallel`]: workers (thread blocks on the GPU,
    /// OpenMP iterations on the CPU).
    Workers,
    /// `scf.parallel` marked [`Mark::Simd`] only: a vector loop inside a worker.
    Simd,
    /// `scf.parallel` marked [`Mark::Lanes`]: the lanes of one MVL-wide vector.
    Lanes,
    /// `scf.for` marked [`Mark::Chunks`]: a vector loop's chunks, one after another.
    Chunks,
    /// `scf.for` marked [`Mark::Sequential`].
    Sequential,
    /// Any other `scf.for` or `scf.parallel`.
    Plain,
}

impl LoopKind {
    /// The kind of `op`; `None` when it is not an `scf.for` or `scf.parallel`. A
    /// scheduled loop's first tag decides (`g.N`: workers, `l.N`: lanes, `vec`: a vector
    /// loop, `unr`/`ilp`: a loop to unroll); otherwise its marks do.
    pub fn of(op: &Op) -> Option<LoopKind> {
        if !matches!(op.name.as_str(), "scf.parallel" | "scf.for") {
            return None;
        }
        // A scheduled loop: its tags say how it runs.
        match op.tags().first() {
            Some(Tag::Group(_)) if op.name == "scf.parallel" => return Some(LoopKind::Workers),
            Some(Tag::Local(_)) if op.name == "scf.parallel" => return Some(LoopKind::Lanes),
            Some(Tag::Vec) if op.name == "scf.parallel" => return Some(LoopKind::Simd),
            Some(Tag::Unr | Tag::Ilp) => return Some(LoopKind::Plain),
            _ => {}
        }
        match op.name.as_str() {
            "scf.parallel" => Some(if op.has_mark(Mark::Lanes) {
                LoopKind::Lanes
            } else if op.has_mark(Mark::Parallel) {
                LoopKind::Workers
            } else if op.has_mark(Mark::Simd) {
                LoopKind::Simd
            } else {
                LoopKind::Plain
            }),
            "scf.for" => Some(if op.has_mark(Mark::Chunks) {
                LoopKind::Chunks
            } else if op.has_mark(Mark::Sequential) {
                LoopKind::Sequential
            } else {
                LoopKind::Plain
            }),
            _ => None,
        }
    }

    /// The Loopy tag today's GPU schedule gives dimension `dim` of such a loop: workers
    /// are groups (`g.dim`), lanes are a group's threads (`l.0`), a vector loop before
    /// strip-mining is `vec`, its chunks run in order (`for`), and other loops are
    /// sequential (`ord` when annotated, `for` otherwise).
    pub fn tag(self, dim: u32) -> Tag {
        match self {
            LoopKind::Workers => Tag::Group(dim),
            LoopKind::Lanes => Tag::Local(dim),
            LoopKind::Simd => Tag::Vec,
            LoopKind::Chunks | LoopKind::Plain => Tag::For,
            LoopKind::Sequential => Tag::Ord,
        }
    }
}

/// A Loopy iname tag: how the loop over an iname is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tag {
    /// `g.N`: axis N of the grid of groups (thread blocks, OpenMP workers).
    Group(u32),
    /// `l.N`: axis N of a group's work items (threads).
    Local(u32),
    /// `unr`: unrolled.
    Unr,
    /// `ilp`: unrolled, iterations independent (instruction-level parallelism).
    Ilp,
    /// `vec`: a vector loop.
    Vec,
    /// `ord`: sequential, in order (annotated).
    Ord,
    /// `for`: sequential.
    For,
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tag::Group(n) => write!(f, "g.{n}"),
            Tag::Local(n) => write!(f, "l.{n}"),
            Tag::Unr => f.write_str("unr"),
            Tag::Ilp => f.write_str("ilp"),
            Tag::Vec => f.write_str("vec"),
            Tag::Ord => f.write_str("ord"),
            Tag::For => f.write_str("for"),
        }
    }
}

impl FromStr for Tag {
    type Err = String;
    fn from_str(s: &str) -> Result<Tag, String> {
        let axis = |n: &str| -> Result<u32, String> {
            n.parse::<u32>()
                .ok()
                .filter(|n| *n < 3)
                .ok_or_else(|| format!("bad tag `{s}`: the axis must be 0, 1 or 2"))
        };
        match s {
            "unr" => Ok(Tag::Unr),
            "ilp" => Ok(Tag::Ilp),
            "vec" => Ok(Tag::Vec),
            "ord" => Ok(Tag::Ord),
            "for" => Ok(Tag::For),
            _ => {
                if let Some(n) = s.strip_prefix("g.") {
                    Ok(Tag::Group(axis(n)?))
                } else if let Some(n) = s.strip_prefix("l.") {
                    Ok(Tag::Local(axis(n)?))
                } else {
                    Err(format!("unknown tag `{s}` (known: g.N, l.N, unr, ilp, vec, ord, for)"))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_print_and_parse_back() {
        for t in [
            Tag::Group(0),
            Tag::Group(2),
            Tag::Local(1),
            Tag::Unr,
            Tag::Ilp,
            Tag::Vec,
            Tag::Ord,
            Tag::For,
        ] {
            assert_eq!(t.to_string().parse::<Tag>(), Ok(t));
        }
        assert!("g.3".parse::<Tag>().is_err());
        assert!("l.x".parse::<Tag>().is_err());
        assert!("par".parse::<Tag>().unwrap_err().contains("known: g.N"));
    }

    #[test]
    fn kinds_from_marks() {
        let par = |m: &[Mark]| m.iter().fold(Op::new("scf.parallel"), |o, m| o.with_mark(*m));
        let for_ = |m: &[Mark]| m.iter().fold(Op::new("scf.for"), |o, m| o.with_mark(*m));
        assert_eq!(LoopKind::of(&par(&[Mark::Parallel, Mark::Simd])), Some(LoopKind::Workers));
        assert_eq!(LoopKind::of(&par(&[Mark::Simd])), Some(LoopKind::Simd));
        assert_eq!(LoopKind::of(&par(&[Mark::Lanes, Mark::NoSync])), Some(LoopKind::Lanes));
        assert_eq!(LoopKind::of(&par(&[])), Some(LoopKind::Plain));
        assert_eq!(LoopKind::of(&for_(&[Mark::Chunks])), Some(LoopKind::Chunks));
        assert_eq!(LoopKind::of(&for_(&[Mark::Sequential])), Some(LoopKind::Sequential));
        assert_eq!(LoopKind::of(&Op::new("scf.if")), None);
    }

    #[test]
    fn inames_round_trip_through_mlir_escapes() {
        let mut op = Op::new("scf.parallel");
        assert!(op.inames().is_empty());
        op.set_inames(&["i", "j_1", "é", "a\"b\\c"]);
        assert_eq!(op.attr(INAMES), Some(r#"["i", "j_1", "\C3\A9", "a\22b\5Cc"]"#));
        assert_eq!(op.inames(), ["i", "j_1", "é", "a\"b\\c"]);
        // MLIR's own short escapes read back too.
        op.set_attr(INAMES, r#"["x\"y", "t\\u"]"#);
        assert_eq!(op.inames(), ["x\"y", "t\\u"]);
    }

    #[test]
    fn tags_round_trip_and_decide_the_kind() {
        let mut op = Op::new("scf.parallel").with_mark(Mark::Simd);
        assert!(op.tags().is_empty());
        assert_eq!(LoopKind::of(&op), Some(LoopKind::Simd));
        op.set_tags(&[Tag::Local(0)]);
        assert_eq!(op.attr(TAGS), Some(r#"["l.0"]"#));
        assert_eq!(op.tags(), [Tag::Local(0)]);
        assert_eq!(LoopKind::of(&op), Some(LoopKind::Lanes));
        op.set_tags(&[Tag::Group(0)]);
        assert_eq!(LoopKind::of(&op), Some(LoopKind::Workers));
        // `vec` makes a vector loop of a loop with no mark of its own.
        let v = Op::new("scf.parallel").with_tags(&[Tag::Vec]);
        assert_eq!(LoopKind::of(&v), Some(LoopKind::Simd));
        assert_eq!(LoopKind::of(&Op::new("scf.parallel")), Some(LoopKind::Plain));
        let f = Op::new("scf.for").with_mark(Mark::Sequential).with_tags(&[Tag::Unr]);
        assert_eq!(LoopKind::of(&f), Some(LoopKind::Plain));
        let f = Op::new("scf.for").with_mark(Mark::Chunks).with_tags(&[Tag::For]);
        assert_eq!(LoopKind::of(&f), Some(LoopKind::Chunks));
    }

    #[test]
    fn unique_inames_take_the_first_free_suffix() {
        assert_eq!(unique_iname("i", |_| false), "i");
        assert_eq!(unique_iname("i", |n| n == "i" || n == "i_1"), "i_2");
    }

    #[test]
    fn marks_set_clear_and_le() {
        let mut op = Op::new("scf.parallel");
        op.set_mark(Mark::NoSync);
        assert!(op.has_mark(Mark::NoSync) && op.attr("appy.nosync") == Some("unit"));
        assert!(op.clear_mark(Mark::NoSync) && !op.clear_mark(Mark::NoSync));
        assert_eq!(op.le_bound(), None);
        op.set_le_bound(64);
        assert_eq!(op.le_bound(), Some(64));
        let names: std::collections::HashSet<_> = Mark::ALL.iter().map(|m| m.attr()).collect();
        assert_eq!(names.len(), Mark::ALL.len());
    }
}
