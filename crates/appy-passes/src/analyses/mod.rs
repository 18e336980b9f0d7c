//! Analyses that passes share (they rewrite nothing):
//! - `uniform`: which values vary in the innermost loop around them;
//! - `barriers`: barrier placement in kernels;
//! - `nest`: the depth of rectangular perfect nests of parallel loops;
//! - `ranges`: integer ranges of a kernel's index values (thread ids under
//!   `known_block_size`), which decide bound checks;
//! - `index`: the affine forms of subscripts over loop variables (what reordering
//!   iterations must know);
//! - `within`: the loops a transform addresses (a name or glob, Loopy's `within=`
//!   match expressions);
//! - `affine` (from `appy-ir`, as the frontend's race checker uses it too): affine forms
//!   and the integer linear algebra of dependence tests.

pub use appy_ir::affine;
pub mod barriers;
pub mod index;
pub mod nest;
pub mod ranges;
pub mod uniform;
pub mod within;
