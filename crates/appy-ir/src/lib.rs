//! appy's IR layer: source locations and diagnostics ([`diag`]), the owned mirror of
//! MLIR operations that Rust passes rewrite ([`ir`]), and (feature `mlir`) the bridge
//! to MLIR itself ([`mlir`]): context, parsing, verification, pass pipelines.
#![warn(missing_docs)]

pub mod build;
pub mod bundle;
pub mod diag;
pub mod ir;
pub mod types;
#[cfg(feature = "mlir")]
pub mod mlir;
