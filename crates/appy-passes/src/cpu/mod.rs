//! The CPU back end's passes: `appy` → `cpu` (OpenMP regions, sequential loops) and the LLVM dialect's math, calls and allocation.

pub mod alloc;
pub mod atomics;
pub mod blas;
pub mod exp;
pub mod fuse;
pub mod kernels;
pub mod libm;
pub mod minmax;
pub mod openmp;
pub mod print;
pub mod strided;
pub mod vector_math;
pub mod wide_math;
pub mod zeros;
