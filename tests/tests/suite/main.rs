//! appy's integration suite (one test binary: every binary that links MLIR is large).
#![allow(clippy::result_large_err)]

mod cases;
mod config;
mod cpu_exp;
mod deep;
mod diff;
mod e2e;
mod erfc;
mod errors;
mod fuzz;
mod identifiers;
mod jit;
mod kernel_level;
mod lit;
mod movement;
mod openmp;
mod same_kernel;
mod tensor_props;
