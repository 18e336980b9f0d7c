//! appy from Rust: compile a Python source annotated with APPy's pragmas once, then
//! call its `@appy.jit` functions on [`ndarray`] arrays, on an NVIDIA GPU when one is
//! present and on the CPU back end otherwise.
//!
//! This crate is the one to depend on: it gathers the embedding API of appy's layers
//! (`appy-runtime`'s [`Jit`], `appy-compiler`'s [`Options`], the errors) at its root.
//!
//! ```
//! use appy::{Device, Jit, ViewArg, ndarray::Array1};
//!
//! let src = r#"
//! import appy
//!
//! @appy.jit
//! def axpy(alpha, x, y, N):
//!     #pragma parallel for simd
//!     for i in range(N):
//!         y[i] += alpha * x[i]
//! "#;
//! let mut jit = Jit::from_source("axpy.py", src, Device::Cpu);
//! let mut x = Array1::from_vec(vec![1.0f64, 2.0, 3.0]);
//! let mut y = Array1::from_vec(vec![10.0f64, 20.0, 30.0]);
//! jit.call_views(
//!     "axpy",
//!     &mut [
//!         ViewArg::float(2.0),
//!         x.view_mut().into(),
//!         y.view_mut().into(),
//!         ViewArg::int(3),
//!     ],
//! )?;
//! assert_eq!(y.to_vec(), vec![12.0, 24.0, 36.0]);
//! # Ok::<(), appy::Error>(())
//! ```
//!
//! - The first call of a function with new argument types (dtype and rank of each
//!   array, kind of each scalar) compiles a specialisation; later calls with the same
//!   types run the compiled code. Compiled code is also kept in the persistent cache
//!   (`~/.cache/appy`, `APPY_CACHE_DIR`; [`Jit::with_cache_dir`]), so a later process
//!   does not compile again.
//! - [`Device::Auto`] runs on the GPU when a driver and a device are present
//!   (feature `gpu`, on by default), else on the CPU back end (LLVM, OpenMP threads).
//!   [`Jit::on_gpu`] says which.
//! - An array argument is updated in place, as in Python. A returned value comes back
//!   as a [`HostValue`].
//! - A program that appy does not accept, or an error while it runs (an index out of
//!   bounds in checked mode, no GPU with [`Device::Gpu`]), is an [`Error`]: a
//!   diagnostic located in the source (`FILE:LINE:COL: error: ...`) with what to write
//!   instead.
#![warn(missing_docs)]

pub use appy_compiler::Options;
pub use appy_ir::diag::Diagnostic;
pub use appy_ir::types::DType;
pub use appy_runtime::jit::{Jit, ViewArg};
pub use appy_runtime::{Device, HostArray, HostValue, RunError};
/// The `ndarray` version appy's views use.
pub use ndarray;

/// The error of compiling and calling: a located diagnostic (`Display` renders it as
/// `FILE:LINE:COL: error: ...` with the source line and notes).
pub type Error = Diagnostic;

/// The result of compiling and calling.
pub type Result<T> = std::result::Result<T, Error>;

/// appy's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The default device, as the Python package chooses it: `APPY_DEVICE` (`cpu`, `gpu` or
/// `auto`), else [`Device::Auto`]. An unknown value is an error that says what is
/// expected.
pub fn default_device() -> std::result::Result<Device, String> {
    appy_ir::config::device().map_or(Ok(Device::Auto), |v| v.parse().map_err(|e| format!("APPY_DEVICE: {e}")))
}
