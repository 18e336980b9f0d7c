//! appy's runtime: host arrays and `.npy` files ([`array`](mod@array)), the CPU executor
//! ([`cpu`], feature `jit`), and the GPU runner ([`gpu`], feature `cuda`), which runs a
//! compiled [`appy_ir::bundle::Bundle`] with only the NVIDIA driver present.
#![warn(missing_docs)]
// `Diagnostic`, the error of everything that can reject a user's program, is large;
// boxing it would complicate every caller for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod array;
#[cfg(all(feature = "jit", feature = "cuda"))]
pub mod background;
#[cfg(feature = "jit")]
pub mod blas;
pub mod cache;
#[cfg(feature = "jit")]
pub mod cpu;
pub mod device;
pub mod error;
pub mod exec;
pub mod files;
#[cfg(feature = "cuda")]
pub mod gpu;
#[cfg(feature = "jit")]
pub mod host_device;
pub mod hostmath;
#[cfg(feature = "jit")]
pub mod jit;
#[cfg(feature = "jit")]
mod jitdump;
pub mod lattice;
#[cfg(all(feature = "jit", feature = "cuda"))]
pub mod processors;
pub mod regions;
#[cfg(test)]
mod srchash;
pub mod status;
#[cfg(test)]
mod testlog;
#[cfg(feature = "cuda")]
pub mod tune;

pub use array::{HostArray, HostValue};
pub use error::RunError;

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

impl std::str::FromStr for Device {
    type Err = String;
    /// `auto`, `cpu` or `gpu`.
    fn from_str(s: &str) -> Result<Device, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Device::Auto),
            "cpu" => Ok(Device::Cpu),
            "gpu" | "cuda" => Ok(Device::Gpu),
            other => Err(format!("unknown device `{other}` (expected auto, cpu or gpu)")),
        }
    }
}
