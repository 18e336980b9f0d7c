//! Semantic analysis of a parsed function, before any IR is emitted: what names refer
//! to (`resolve`), which names a statement assigns and reads (`names`), which
//! expressions are arrays (`shape`), complex values split into parts (`complex`), the typing rules and the types of expressions
//! (`types`), reduction detection (`reductions`), whether an unannotated loop may be
//! vectorized (`simd`), the atomic updates of `prange` loops (`prange`), races in parallel
//! loops (`races`), and the analysis that lowering
//! reads (`analysis`): the type of every scalar variable, and one plan per loop
//! (`plan`) with its kind, reductions, shared cells and privates.

pub(crate) mod analysis;
pub mod catalog;
pub(crate) mod complex;
pub(crate) mod constants;
pub(crate) mod desugar;
pub(crate) mod jumps;
pub(crate) mod names;
pub(crate) mod plan;
pub(crate) mod prange;
pub(crate) mod prelude;
pub(crate) mod races;
pub(crate) mod reductions;
pub(crate) mod resolve;
pub(crate) mod shader;
pub(crate) mod shape;
pub(crate) mod simd;
pub(crate) mod types;

/// A reduction operator (`+`, `*`, `max`, `min`): the IR's one vocabulary for them.
pub(crate) use appy_ir::reduction::Reduction;
