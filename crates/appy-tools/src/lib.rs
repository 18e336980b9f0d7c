//! appy's commands: the `appy` binary (`src/bin/appy.rs`: `run`, `compile`, `bench`,
//! `exec`) and `appy-opt` ([`opt`], as a library so that the lit tests run it
//! in-process).
//!
//! Built with `--no-default-features --features cuda`, `appy` is the GPU runner alone:
//! `appy exec` runs compiled bundles and needs neither MLIR nor the CUDA toolkit.
#![warn(missing_docs)]
// `Diagnostic`, the error of everything that can reject a user's program, is large;
// boxing it would complicate every caller for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod fault;
#[cfg(feature = "jit")]
pub mod opt;
pub mod output;
