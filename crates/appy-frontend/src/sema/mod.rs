//! Semantic analysis of a parsed function, before any IR is emitted: what names refer
//! to, which names a statement assigns and reads, reduction detection, and whether an
//! unannotated loop may be vectorized.

pub mod catalog;
pub(crate) mod desugar;
pub(crate) mod names;
pub(crate) mod races;
pub(crate) mod reductions;
pub(crate) mod resolve;
pub(crate) mod simd;

/// A reduction operator (`+`, `*`, `max`, `min`): the IR's one vocabulary for them.
pub(crate) use appy_ir::reduction::Reduction;
