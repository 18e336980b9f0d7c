//! GPUs and the host's cores as processors of one split call (seed 003: the CPU as a
//! processor): [`Processor`] is either device, so [`crate::exec::run_split`] can give
//! a range of each launch's groups to the host (its kernels' CPU code, the groups as
//! OpenMP workers, [`crate::host_device`]) while the GPUs run theirs.
//!
//! Put the host last: its launches run on the calling thread, so the GPUs' ranges,
//! queued before it, run meanwhile. Data moves between the host's memory and a GPU with
//! plain copies (the host's work is finished when its launch returns; a copy from a GPU
//! waits for that GPU).

use crate::device::{Device, DevicePtr, GemmCall, GemvCall, PotrfCall, TrsvCall};
use crate::error::{RunError, RunResult};
use crate::gpu::Gpu;
use crate::host_device::{HostDevice, KernelFn};
use cudarc::driver::CudaFunction;

/// A GPU or the host.
// A process has a handful of processors: their size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Processor {
    /// A GPU.
    Gpu(Gpu),
    /// The host's cores.
    Host(HostDevice),
}

/// A kernel loaded on a [`Processor`].
#[derive(Clone)]
pub enum ProcessorKernel {
    /// Loaded on a GPU.
    Gpu(CudaFunction),
    /// The kernel's CPU code.
    Host(KernelFn),
}

macro_rules! both {
    ($self:expr, $d:ident => $e:expr) => {
        match $self {
            Processor::Gpu($d) => $e,
            Processor::Host($d) => $e,
        }
    };
}

impl Device for Processor {
    type Kernel = ProcessorKernel;

    fn alloc(&self, bytes: usize) -> RunResult<DevicePtr> {
        both!(self, d => d.alloc(bytes))
    }
    fn release(&self, ptr: DevicePtr, bytes: usize) {
        both!(self, d => d.release(ptr, bytes))
    }
    fn malloc(&self, bytes: usize) -> RunResult<DevicePtr> {
        both!(self, d => d.malloc(bytes))
    }
    fn free(&self, ptr: DevicePtr) -> RunResult<()> {
        both!(self, d => d.free(ptr))
    }
    fn htod(&self, dst: DevicePtr, src: &[u8]) -> RunResult<()> {
        both!(self, d => d.htod(dst, src))
    }
    fn htod_ordered(&self, dst: DevicePtr, src: &[u8]) -> RunResult<()> {
        both!(self, d => d.htod_ordered(dst, src))
    }
    fn dtoh(&self, dst: &mut [u8], src: DevicePtr) -> RunResult<()> {
        both!(self, d => d.dtoh(dst, src))
    }
    fn dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize) -> RunResult<()> {
        both!(self, d => d.dtod(dst, src, bytes))
    }
    fn synchronize(&self) -> RunResult<()> {
        both!(self, d => d.synchronize())
    }
    fn activate(&self) -> RunResult<()> {
        both!(self, d => d.activate())
    }
    fn copy_from_peer(&self, dst: DevicePtr, from: &Self, src: DevicePtr, bytes: usize) -> RunResult<()> {
        match (self, from) {
            (Processor::Gpu(a), Processor::Gpu(b)) => a.copy_from_peer(dst, b, src, bytes),
            (Processor::Host(a), Processor::Host(b)) => a.copy_from_peer(dst, b, src, bytes),
            (Processor::Gpu(g), Processor::Host(_)) => {
                // SAFETY: `src` is the host device's allocation, `bytes` long from there.
                let s = unsafe { std::slice::from_raw_parts(src as *const u8, bytes) };
                g.activate()?;
                g.htod(dst, s)
            }
            (Processor::Host(_), Processor::Gpu(g)) => {
                // SAFETY: `dst` is the host device's allocation, `bytes` long from there.
                let d = unsafe { std::slice::from_raw_parts_mut(dst as *mut u8, bytes) };
                g.activate()?;
                g.synchronize()?;
                g.dtoh(d, src)
            }
        }
    }
    fn launch(&self, kernel: &ProcessorKernel, name: &str, grid: [u32; 3], block: [u32; 3], params: &mut [u64]) -> RunResult<()> {
        match (self, kernel) {
            (Processor::Gpu(g), ProcessorKernel::Gpu(f)) => g.launch(f, name, grid, block, params),
            (Processor::Host(h), ProcessorKernel::Host(f)) => h.launch(f, name, grid, block, params),
            _ => Err(RunError::Bundle(format!("kernel {name}: loaded for another processor"))),
        }
    }
    fn free_memory(&self) -> Option<usize> {
        both!(self, d => d.free_memory())
    }
    fn gemm(&self, call: &GemmCall) -> RunResult<()> {
        both!(self, d => d.gemm(call))
    }
    fn gemv(&self, call: &GemvCall) -> RunResult<()> {
        both!(self, d => d.gemv(call))
    }
    fn trsv(&self, call: &TrsvCall) -> RunResult<()> {
        both!(self, d => d.trsv(call))
    }
    fn potrf(&self, call: &PotrfCall) -> RunResult<i32> {
        both!(self, d => d.potrf(call))
    }
}
