//! `appy._native`, the extension module of the `appy` Python package.
//!
//! The Python side (`python/appy/`) provides the decorator and the names of APPy;
//! this module provides `kernel::Kernel`, the object an `@appy.jit` function becomes:
//! calling it extracts the arguments (NumPy arrays, GPU arrays through
//! `__cuda_array_interface__` or DLPack, scalars), compiles the specialisation for their
//! types on the first call (`compile`, one worker thread owning the compiler), and
//! runs it on the CPU back end or the GPU runner with the GIL released.
#![warn(missing_docs)]
#![allow(clippy::result_large_err)]

mod args;
mod compile;
mod cupy;
mod devarray;
mod errors;
mod kernel;
mod lend;
mod log;

use appy_runtime::Device;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

/// The process-wide default device (`appy.device(...)`): 0 auto, 1 cpu, 2 gpu.
static DEFAULT_DEVICE: AtomicU8 = AtomicU8::new(u8::MAX);

fn device_code(d: Device) -> u8 {
    match d {
        Device::Auto => 0,
        Device::Cpu => 1,
        Device::Gpu => 2,
    }
}

/// The default device: `appy.device(...)`, else `$APPY_DEVICE`, else auto.
pub(crate) fn default_device() -> Device {
    match DEFAULT_DEVICE.load(Ordering::Relaxed) {
        0 => Device::Auto,
        1 => Device::Cpu,
        2 => Device::Gpu,
        _ => {
            let d = appy_ir::config::device().and_then(|v| v.parse().ok()).unwrap_or(Device::Auto);
            DEFAULT_DEVICE.store(device_code(d), Ordering::Relaxed);
            d
        }
    }
}

/// The GPUs calls use, opened on first use and shared by every kernel (calls hold the
/// lock while they run: the runner uses one stream per GPU): device 0, and the others
/// `APPY_DEVICES` asks for, between which calls on host arrays split every launch
/// (docs/MAPPING.md).
static GPU: OnceLock<Result<Mutex<Vec<appy_runtime::gpu::Gpu>>, String>> = OnceLock::new();

/// The shared GPUs (at least one), or why there is none. Call without the GIL (opening
/// takes a while).
pub(crate) fn gpu() -> Result<&'static Mutex<Vec<appy_runtime::gpu::Gpu>>, String> {
    GPU.get_or_init(|| {
        let set = appy_ir::config::devices()?;
        // GPU arrays (torch, CuPy) live on GPU 0, and calls on them run on the first
        // GPU of the set.
        if let appy_ir::config::Devices::List(l) = &set
            && l.first() != Some(&0)
        {
            return Err(format!(
                "APPY_DEVICES: list GPU 0 first (it runs the calls on GPU arrays), e.g. `0,{}`",
                l.first().copied().unwrap_or(1)
            ));
        }
        let gpus = if set == appy_ir::config::Devices::Count(1) {
            appy_runtime::gpu::Gpu::open().map(|g| vec![g])
        } else {
            appy_runtime::gpu::Gpu::open_many(&set)
        };
        gpus.map(Mutex::new).map_err(String::from)
    })
    .as_ref()
    .map_err(|e| e.clone())
}

/// [`gpu`] from a thread that holds the GIL: released only for the first opening.
pub(crate) fn gpu_with(py: Python<'_>) -> Result<&'static Mutex<Vec<appy_runtime::gpu::Gpu>>, String> {
    match GPU.get() {
        Some(g) => g.as_ref().map_err(|e| e.clone()),
        None => py.detach(gpu),
    }
}

/// Sets the default device for calls (`"cpu"`, `"gpu"` or `"auto"`).
#[pyfunction]
fn set_device(name: &str) -> PyResult<()> {
    let d: Device = name.parse().map_err(pyo3::exceptions::PyValueError::new_err)?;
    DEFAULT_DEVICE.store(device_code(d), Ordering::Relaxed);
    Ok(())
}

/// The default device for calls.
#[pyfunction]
fn get_device() -> &'static str {
    match default_device() {
        Device::Auto => "auto",
        Device::Cpu => "cpu",
        Device::Gpu => "gpu",
    }
}

/// Stops the background compilers of autotuning candidates at exit (registered with
/// `atexit` by the package): candidates not started are dropped, and this waits, at
/// most 5 s, for those being compiled, so that no thread is inside LLVM when the
/// process exits.
#[pyfunction]
fn shutdown_compilers(py: Python<'_>) -> bool {
    py.detach(|| appy_runtime::background::shutdown(std::time::Duration::from_secs(5)))
}

/// Whether a CUDA driver and a GPU are usable (opens the GPU on the first call).
#[pyfunction]
fn gpu_available(py: Python<'_>) -> bool {
    gpu_with(py).is_ok()
}

/// Names the BLAS library the CPU back end uses for matrix products when
/// `APPY_LIBBLAS` is not set (the package passes NumPy's bundled OpenBLAS); no effect
/// after the first CPU compilation.
#[pyfunction]
fn prefer_blas(path: &str) {
    appy_runtime::blas::prefer(std::path::Path::new(path));
}

/// Registers Python's `sys.path` directories, where NVIDIA's pip packages are looked
/// for libdevice (GPU math functions; `appy_compiler::target::libdevice`). An installed
/// wheel (`packaged`) does not look for the development copy of the tree it was built in.
#[pyfunction]
#[pyo3(signature = (dirs, packaged = false))]
fn register_site_dirs(dirs: Vec<String>, packaged: bool) {
    use appy_compiler::target::libdevice;
    libdevice::register_site_dirs(dirs.into_iter().map(std::path::PathBuf::from).collect());
    if packaged {
        libdevice::without_dev_copy();
    }
}

/// Registers the OpenMP runtime the wheel ships (`appy/_vendor/libomp.so.5`), tried
/// after `APPY_LIBOMP` and before the system's copies.
#[pyfunction]
fn register_libomp(path: &str) {
    appy_runtime::cpu::register_bundled_libomp(std::path::PathBuf::from(path));
}

/// What appy finds on this machine, for `python -m appy doctor`: a list of
/// `(item, value)` pairs (the GPU is opened to name it).
#[pyfunction]
fn doctor(py: Python<'_>) -> Vec<(String, String)> {
    let mut out = vec![("appy".to_string(), env!("CARGO_PKG_VERSION").to_string())];
    let host = appy_runtime::cpu::host();
    out.push((
        "CPU back end".into(),
        format!("yes ({})", host.cpu.split_whitespace().next().unwrap_or("host")),
    ));
    out.push((
        "OpenMP".into(),
        match &host.libomp {
            Some(p) => p.display().to_string(),
            None => "not found: parallel loops run on one thread (install LLVM's libomp)".into(),
        },
    ));
    out.push((
        "BLAS".into(),
        match appy_runtime::blas::blas() {
            Some(b) => b.path.display().to_string(),
            None => "not found: matrix products on the CPU are compiled loops".into(),
        },
    ));
    out.push((
        "GPU".into(),
        match gpu_with(py) {
            Ok(g) => g
                .lock()
                .map(|g| {
                    let ordinals: Vec<String> = g.iter().map(|g| g.ordinal().to_string()).collect();
                    if g.len() > 1 {
                        format!("{} (GPUs {}: launches split between them)", g[0].name(), ordinals.join(", "))
                    } else {
                        g[0].name()
                    }
                })
                .unwrap_or_else(|_| "unusable".into()),
            Err(e) => format!("none ({e})"),
        },
    ));
    out.push((
        "libdevice".into(),
        match appy_compiler::target::libdevice::find() {
            Ok(f) => format!("{} ({})", f.path.display(), f.source.describe()),
            Err(m) => {
                let (why, help) = m.explain();
                format!("none: {why}; GPU math functions fail to compile ({help})")
            }
        },
    ));
    out.push((
        "cache".into(),
        match appy_runtime::cache::dir() {
            Some(d) => d.display().to_string(),
            None => "off (APPY_CACHE_DIR is empty, or the directory is not usable)".into(),
        },
    ));
    out
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    log::init();
    m.add_class::<kernel::Kernel>()?;
    m.add_class::<devarray::DeviceArray>()?;
    m.add_function(wrap_pyfunction!(set_device, m)?)?;
    m.add_function(wrap_pyfunction!(get_device, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_available, m)?)?;
    m.add_function(wrap_pyfunction!(prefer_blas, m)?)?;
    m.add_function(wrap_pyfunction!(register_site_dirs, m)?)?;
    m.add_function(wrap_pyfunction!(register_libomp, m)?)?;
    m.add_function(wrap_pyfunction!(doctor, m)?)?;
    m.add_function(wrap_pyfunction!(log::flush_logs, m)?)?;
    m.add_function(wrap_pyfunction!(shutdown_compilers, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_MVL", appy_ir::DEFAULT_MVL)?;
    Ok(())
}
