//! The host as a device: a GPU bundle's host program runs unchanged ([`crate::exec`]),
//! with device memory in host memory and each kernel launch run by the kernel's CPU
//! function ([`appy_compiler::Compiler::compile_gpu_for_host`]: the kernel level's
//! groups as OpenMP workers, its lanes as vectorisable loops).
//!
//! A kernel runs over any range of its groups: [`HostDevice::run_groups`] runs groups
//! `[lo, hi)` of a launch, and a launch on a device with [`HostDevice::ranges`] `> 1`
//! runs as that many consecutive ranges, which must give what one launch gives (the
//! groups of a kernel are independent: the GPU runs them in any order). This is the
//! CPU's part of a launch split between processors, and lets every GPU bundle be run
//! and checked on a machine without a GPU.

use crate::device::{Device, DevicePtr, GemmCall, GemvCall, PotrfCall, TrsvCall, reference};
use crate::error::{RunError, RunResult};
use appy_compiler::{Compiler, Options};
use appy_ir::bundle::Bundle;
use appy_ir::diag::{DResult, IrError, SourceFile};
use appy_ir::types::{ArgType, DType};
use melior::ExecutionEngine;
use std::alloc::Layout;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// A kernel's CPU function, through MLIR's packed interface: one pointer per parameter
/// cell of the launch, then one to the number of groups.
pub type KernelFn = unsafe extern "C" fn(*mut *mut ());

/// A bundle's kernels compiled for the CPU, in the order of [`Bundle::kernels`]
/// (the native code lives as long as this).
pub struct HostKernels {
    _engine: ExecutionEngine,
    fns: Vec<KernelFn>,
}

impl HostKernels {
    /// Compiles `func` for the GPU (without PTX) and its kernels for this host; returns
    /// the bundle and its kernels.
    pub fn compile(compiler: &Compiler, file: &SourceFile, func: &str, args: &[ArgType], opts: &Options) -> DResult<(Bundle, HostKernels)> {
        let host = crate::cpu::host();
        let (bundle, llvm) = compiler.compile_gpu_for_host(file, func, args, opts, &host.options(opts))?;
        let fail = |e: String| appy_compiler::mlir_error(file, &IrError::new(e));
        let module = compiler
            .ctx
            .parse(&llvm.to_generic())
            .map_err(|e| appy_compiler::mlir_error(file, &e))?;
        let libs: Vec<String> = host.shared_libs().into_iter().map(|s| s + "\0").collect();
        let libs: Vec<&str> = libs.iter().map(|s| &s[..s.len() - 1]).collect();
        let engine = appy_ir::stack::deep(|| crate::jitdump::quietly(|| ExecutionEngine::new(&module, 3, &libs, false, false)));
        let mut fns = vec![];
        for k in &bundle.kernels {
            let p = engine.lookup(&format!("_mlir_{}", k.name));
            if p.is_null() {
                return Err(fail(format!("the CPU code has no kernel `{}`", k.name)));
            }
            // SAFETY: MLIR's packed wrappers have the signature `void(void **)`.
            fns.push(unsafe { std::mem::transmute::<*mut (), KernelFn>(p) });
        }
        Ok((bundle, HostKernels { _engine: engine, fns }))
    }

    /// The kernels, for [`crate::exec::run`].
    pub fn kernels(&self) -> &[KernelFn] {
        &self.fns
    }
}

/// Device memory in host memory; launches run kernels' CPU functions.
pub struct HostDevice {
    sizes: RefCell<HashMap<DevicePtr, usize>>,
    /// Each launch runs as this many consecutive ranges of its groups (1: at once).
    pub ranges: usize,
    /// Launches so far.
    pub launched: Cell<usize>,
}

impl Default for HostDevice {
    fn default() -> Self {
        HostDevice::new(1)
    }
}

/// Host allocations are aligned as the GPU's (and for vector loads).
const ALIGN: usize = 256;

impl HostDevice {
    /// A host device whose launches run as `ranges` consecutive ranges of groups.
    pub fn new(ranges: usize) -> HostDevice {
        HostDevice {
            sizes: RefCell::default(),
            ranges: ranges.max(1),
            launched: Cell::new(0),
        }
    }

    /// Runs groups `[lo, hi)` of a launch of `kernel` whose parameter cells are
    /// `params` (the executor's marshalling; the last is the block offset, which the
    /// groups are counted from).
    ///
    /// # Safety
    /// `params` are the cells of a launch of this kernel, and its memory parameters
    /// point at live allocations of this device (or host memory) large enough for
    /// every group of the launch.
    pub unsafe fn run_groups(&self, kernel: KernelFn, params: &[u64], lo: u64, hi: u64) {
        if hi <= lo {
            return;
        }
        let mut cells = params.to_vec();
        if let Some(off) = cells.last_mut() {
            *off += lo;
        }
        cells.push(hi - lo);
        let mut ptrs: Vec<*mut ()> = cells.iter_mut().map(|c| c as *mut u64 as *mut ()).collect();
        // SAFETY: the caller's contract; one cell per expanded parameter.
        unsafe { kernel(ptrs.as_mut_ptr()) };
    }

    fn layout(bytes: usize) -> RunResult<Layout> {
        Layout::from_size_align(bytes.max(1), ALIGN).map_err(|_| RunError::OutOfMemory {
            bytes,
            detail: "host".into(),
        })
    }
}

impl Drop for HostDevice {
    fn drop(&mut self) {
        for (p, bytes) in self.sizes.borrow_mut().drain() {
            // SAFETY: allocated by `malloc` below with this layout.
            unsafe { std::alloc::dealloc(p as *mut u8, HostDevice::layout(bytes).expect("valid")) };
        }
    }
}

impl Device for HostDevice {
    type Kernel = KernelFn;

    fn alloc(&self, bytes: usize) -> RunResult<DevicePtr> {
        self.malloc(bytes)
    }

    fn release(&self, ptr: DevicePtr, _bytes: usize) {
        let _ = self.free(ptr);
    }

    fn malloc(&self, bytes: usize) -> RunResult<DevicePtr> {
        let layout = HostDevice::layout(bytes)?;
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(RunError::OutOfMemory {
                bytes,
                detail: "host".into(),
            });
        }
        self.sizes.borrow_mut().insert(p as DevicePtr, bytes);
        Ok(p as DevicePtr)
    }

    fn free(&self, ptr: DevicePtr) -> RunResult<()> {
        let bytes = self
            .sizes
            .borrow_mut()
            .remove(&ptr)
            .ok_or_else(|| RunError::driver("host free", format!("{ptr:#x} is not an allocation")))?;
        // SAFETY: allocated by `malloc` with this layout.
        unsafe { std::alloc::dealloc(ptr as *mut u8, HostDevice::layout(bytes)?) };
        Ok(())
    }

    fn htod(&self, dst: DevicePtr, src: &[u8]) -> RunResult<()> {
        // SAFETY: the executor copies into its own allocations, within their size.
        unsafe { std::ptr::copy(src.as_ptr(), dst as *mut u8, src.len()) };
        Ok(())
    }

    fn dtoh(&self, dst: &mut [u8], src: DevicePtr) -> RunResult<()> {
        // SAFETY: as `htod`.
        unsafe { std::ptr::copy(src as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    fn dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize) -> RunResult<()> {
        // SAFETY: as `htod`.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        Ok(())
    }

    fn synchronize(&self) -> RunResult<()> {
        Ok(())
    }

    fn copy_from_peer(&self, dst: DevicePtr, _from: &Self, src: DevicePtr, bytes: usize) -> RunResult<()> {
        // SAFETY: both are the executor's allocations (of two host devices), within
        // their size.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        Ok(())
    }

    fn launch(&self, kernel: &KernelFn, _name: &str, grid: [u32; 3], _block: [u32; 3], params: &mut [u64]) -> RunResult<()> {
        self.launched.set(self.launched.get() + 1);
        let n: u64 = grid.iter().map(|&g| g as u64).product();
        let parts = self.ranges as u64;
        for r in 0..parts {
            // SAFETY: the executor marshals a launch's cells over its allocations.
            unsafe { self.run_groups(*kernel, params, n * r / parts, n * (r + 1) / parts) };
        }
        Ok(())
    }

    fn free_memory(&self) -> Option<usize> {
        None
    }

    fn gemm(&self, call: &GemmCall) -> RunResult<()> {
        reference::gemm(self, call);
        Ok(())
    }

    fn gemv(&self, call: &GemvCall) -> RunResult<()> {
        reference::gemv(self, call);
        Ok(())
    }

    fn trsv(&self, call: &TrsvCall) -> RunResult<()> {
        reference::trsv(self, call);
        Ok(())
    }

    fn potrf(&self, call: &PotrfCall) -> RunResult<i32> {
        Ok(reference::potrf(self, call))
    }
}

impl reference::Elements for HostDevice {
    fn get(&self, dt: DType, base: DevicePtr, i: usize) -> f64 {
        // SAFETY: library calls address elements of the executor's allocations.
        unsafe {
            match dt {
                DType::F32 => *(base as *const f32).add(i) as f64,
                _ => *(base as *const f64).add(i),
            }
        }
    }
    fn set(&self, dt: DType, base: DevicePtr, i: usize, v: f64) {
        // SAFETY: as `get`.
        unsafe {
            match dt {
                DType::F32 => *(base as *mut f32).add(i) = v as f32,
                _ => *(base as *mut f64).add(i) = v,
            }
        }
    }
}
