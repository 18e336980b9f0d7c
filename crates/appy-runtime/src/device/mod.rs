//! What the host-program executor ([`crate::exec`]) needs from a device: memory, copies,
//! kernel launches and the library calls of `appy.gemm`, `appy.trsv` and `appy.potrf`.
//! [`crate::gpu::Gpu`] implements it with the CUDA driver, cuBLAS and cuSOLVER; the
//! executor's tests implement it in host memory, so that scalar semantics, host loops,
//! residency bookkeeping and tiling are tested without a GPU.

use crate::error::RunResult;
use crate::lattice::Rows;
use appy_ir::types::DType;

/// A device address.
pub type DevicePtr = u64;

/// `C = alpha * op(A) @ op(B) + beta * C` on row-major sub-matrices: each operand is its
/// first element's address and its row stride (leading dimension) in elements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmCall {
    /// Element type (`f32` or `f64`).
    pub dtype: DType,
    /// `op(A) = Aᵀ`.
    pub trans_a: bool,
    /// `op(B) = Bᵀ`.
    pub trans_b: bool,
    /// Rows of C.
    pub m: i32,
    /// Columns of C.
    pub n: i32,
    /// The contracted extent.
    pub k: i32,
    /// alpha.
    pub alpha: f64,
    /// beta.
    pub beta: f64,
    /// A and its leading dimension.
    pub a: (DevicePtr, i32),
    /// B and its leading dimension.
    pub b: (DevicePtr, i32),
    /// C and its leading dimension.
    pub c: (DevicePtr, i32),
}

/// `y = alpha * op(A) @ x + beta * y` with row-major `A` (`rows x cols`, leading
/// dimension `lda`) and contiguous vectors.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemvCall {
    /// Element type.
    pub dtype: DType,
    /// `op(A) = Aᵀ`.
    pub trans: bool,
    /// Rows of the stored A.
    pub rows: i32,
    /// Columns of the stored A.
    pub cols: i32,
    /// alpha.
    pub alpha: f64,
    /// beta.
    pub beta: f64,
    /// A.
    pub a: DevicePtr,
    /// Leading dimension of A.
    pub lda: i32,
    /// x.
    pub x: DevicePtr,
    /// y.
    pub y: DevicePtr,
}

/// `x = L⁻¹ x` with the lower triangle of the row-major `L[:n, :n]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrsvCall {
    /// Element type.
    pub dtype: DType,
    /// n.
    pub n: i32,
    /// L.
    pub l: DevicePtr,
    /// Leading dimension of L.
    pub ld: i32,
    /// x (n contiguous elements).
    pub x: DevicePtr,
}

/// The lower triangle of the row-major `A[:n, :n]` becomes its Cholesky factor; the
/// upper triangle is left as it was.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PotrfCall {
    /// Element type.
    pub dtype: DType,
    /// n.
    pub n: i32,
    /// A.
    pub a: DevicePtr,
    /// Leading dimension of A.
    pub ld: usize,
}

/// A device the executor runs a host program against.
pub trait Device {
    /// A loaded kernel.
    type Kernel;

    /// `bytes` bytes of device memory, reused from a pool when possible.
    fn alloc(&self, bytes: usize) -> RunResult<DevicePtr>;
    /// Returns memory from [`Device::alloc`] to the pool.
    fn release(&self, ptr: DevicePtr, bytes: usize);
    /// `bytes` bytes of device memory outside the pool (tiles), freed with
    /// [`Device::free`].
    fn malloc(&self, bytes: usize) -> RunResult<DevicePtr>;
    /// Frees memory from [`Device::malloc`].
    fn free(&self, ptr: DevicePtr) -> RunResult<()>;
    /// Copies host → device (synchronously).
    fn htod(&self, dst: DevicePtr, src: &[u8]) -> RunResult<()>;
    /// Copies a few bytes host → device after the work queued so far, without waiting
    /// for it (a host store into a device array between launches). The default waits,
    /// then copies.
    fn htod_ordered(&self, dst: DevicePtr, src: &[u8]) -> RunResult<()> {
        self.synchronize()?;
        self.htod(dst, src)
    }
    /// Copies device → host (synchronously).
    fn dtoh(&self, dst: &mut [u8], src: DevicePtr) -> RunResult<()>;
    /// Copies device → device, ordered with the launches.
    fn dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize) -> RunResult<()>;
    /// Copies the strided `rows` of the host array `host` to the same bytes of the
    /// device array at `dst` (synchronously): only those bytes cross to the device
    /// (strided transfers, [`crate::lattice`]). The default copies row by row.
    fn htod_rows(&self, dst: DevicePtr, host: &[u8], rows: &[Rows]) -> RunResult<()> {
        for r in rows {
            for h in 0..r.height {
                let o = r.offset + h * r.pitch;
                self.htod(dst + o as u64, &host[o..o + r.width])?;
            }
        }
        Ok(())
    }
    /// Copies the strided `rows` of the device array at `src` to the same bytes of the
    /// host array `host` (synchronously). The default copies row by row.
    fn dtoh_rows(&self, host: &mut [u8], src: DevicePtr, rows: &[Rows]) -> RunResult<()> {
        for r in rows {
            for h in 0..r.height {
                let o = r.offset + h * r.pitch;
                self.dtoh(&mut host[o..o + r.width], src + o as u64)?;
            }
        }
        Ok(())
    }
    /// Waits for everything launched so far.
    fn synchronize(&self) -> RunResult<()>;
    /// Makes this device the one the calling thread's operations go to. The executor
    /// calls it before it uses one of several devices ([`crate::exec::run_split`]); a
    /// call on one device never needs it.
    fn activate(&self) -> RunResult<()> {
        Ok(())
    }
    /// Copies `bytes` bytes at `src` on device `from` to `dst` on this device, device to
    /// device (peer to peer over NVLink or PCIe on GPUs), without waiting on the host:
    /// the copy comes after the work queued on `from` so far, the work queued on this
    /// device after it comes after the copy, and so does the work queued on `from`
    /// after it (which may overwrite `src`).
    fn copy_from_peer(&self, dst: DevicePtr, from: &Self, src: DevicePtr, bytes: usize) -> RunResult<()>;
    /// Launches `kernel` on a grid of `grid` blocks of `block` threads with parameters
    /// `params` (one 8-byte cell each).
    fn launch(&self, kernel: &Self::Kernel, name: &str, grid: [u32; 3], block: [u32; 3], params: &mut [u64]) -> RunResult<()>;
    /// Free device memory in bytes, if the device can tell.
    fn free_memory(&self) -> Option<usize>;
    /// A matrix product.
    fn gemm(&self, call: &GemmCall) -> RunResult<()>;
    /// A matrix-vector product.
    fn gemv(&self, call: &GemvCall) -> RunResult<()>;
    /// A triangular solve.
    fn trsv(&self, call: &TrsvCall) -> RunResult<()>;
    /// A Cholesky factorisation: returns LAPACK's `info` (0, or `j` when the leading
    /// minor of order `j` is not positive definite).
    fn potrf(&self, call: &PotrfCall) -> RunResult<i32>;
}

pub mod reference;
