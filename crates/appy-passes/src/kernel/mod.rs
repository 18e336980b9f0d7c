//! The `kernel` level (Loopy's kernel model, seed 004): `loops` → `kernel` with
//! `appy-kernel-form`, which writes the model as attributes (`appy_ir::kernel`); the
//! GPU (`appy-gpu-outline`) and the CPU (`appy-cpu-openmp`) lower from it.

pub mod domain;
pub mod form;
pub mod statements;
