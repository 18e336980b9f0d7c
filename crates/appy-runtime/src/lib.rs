//! appy's runtime: host arrays and `.npy` files ([`array`]), the CPU executor
//! ([`cpu`], feature `jit`), and the GPU runner ([`gpu`], feature `cuda`), which runs a
//! compiled [`appy_ir::bundle::Bundle`] with only the NVIDIA driver present.
#![warn(missing_docs)]
// `Diagnostic`, the error of everything that can reject a user's program, is large;
// boxing it would complicate every caller for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod array;
pub mod cache;
#[cfg(feature = "jit")]
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod gpu;
#[cfg(feature = "jit")]
pub mod jit;
pub mod regions;
#[cfg(feature = "cuda")]
pub mod tune;

pub use array::{HostArray, HostValue};

/// Where to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// The GPU when a driver and a device are present, else the CPU.
    Auto,
    /// The CPU back end.
    Cpu,
    /// The GPU (an error when none is usable).
    Gpu,
}
