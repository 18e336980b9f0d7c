//! The GPU runner: runs a [`Bundle`] with the CUDA driver (through cudarc).
//!
//! [`Gpu`] is the device handle with its memory pool and the modules loaded on it; it
//! implements [`Device`] for the host-program executor ([`crate::exec`]), which runs
//! the bundle's host program (scalar code, host loops, allocations, transfers,
//! launches), and calls cuBLAS and cuSOLVER (`blas`) for library ops.

mod blas;
mod rows;

use crate::array::HostValue;
use crate::device::{Device, DevicePtr, GemmCall, GemvCall, PotrfCall, TrsvCall};
use crate::error::{RunError, RunResult};
use crate::exec::{Executor, Limits};
pub use crate::exec::{RunOptions, Timing};
use crate::lattice::Rows;
use appy_ir::bundle::Bundle;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, result, sys};
use std::collections::HashMap;
use std::sync::Arc;

/// How [`Gpu::bench_with`] may stop early.
#[derive(Clone, Copy, Default)]
pub struct BenchOptions<'a> {
    /// Asked between host loop iterations, as in a call ([`RunOptions::interrupt`]):
    /// `true` stops the timing with [`RunError::Interrupted`].
    pub interrupt: Option<&'a dyn Fn() -> bool>,
    /// No further call after one that took longer than this (seconds).
    pub stop_after: Option<f64>,
}

/// A device, with the modules loaded on it.
pub struct Gpu {
    /// Page-locked staging memory of strided transfers (`rows.rs`), allocated on first
    /// use (`None`: refused), freed on drop.
    staging: std::cell::OnceCell<Option<usize>>,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// cuBLAS, loaded on the first matrix product (`appy.gemm`).
    blas: std::cell::OnceCell<RunResult<cudarc::cublas::sys::cublasHandle_t>>,
    /// cuSOLVER, loaded on the first factorisation (`appy.potrf`).
    solver: std::cell::OnceCell<RunResult<cudarc::cusolver::sys::cusolverDnHandle_t>>,
    /// Device buffers of finished calls, by size, for reuse (allocating device memory
    /// synchronises and costs tens of microseconds per buffer).
    pool: std::sync::Mutex<HashMap<usize, Vec<u64>>>,
    /// An event that orders copies between devices ([`Device::copy_from_peer`]),
    /// created on first use.
    event: std::cell::OnceCell<RunResult<sys::CUevent>>,
    /// The kernels of strided transfers (`rows.rs`), loaded on first use.
    rows: std::cell::OnceCell<RunResult<rows::RowKernels>>,
}

// SAFETY: the cuBLAS and cuSOLVER handles (raw pointers) may be used from any thread,
// one thread at a time; `Gpu` is not `Sync`, so callers that share it across threads
// put it behind a lock.
unsafe impl Send for Gpu {}

/// Device memory owned by the caller (a result of [`Gpu::run_with`] with
/// `results_on_device`): freed when dropped.
pub struct DeviceBuffer {
    /// The device address.
    pub ptr: u64,
    ctx: Arc<CudaContext>,
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.ptr != 0 && self.ctx.bind_to_thread().is_ok() {
            unsafe {
                let _ = result::free_sync(self.ptr);
            }
        }
    }
}

/// A bundle's kernels loaded on a device, in the order of [`Bundle::kernels`].
pub struct Loaded {
    _module: Option<Arc<CudaModule>>,
    funcs: Vec<CudaFunction>,
}

impl Loaded {
    /// The kernels, in the order of [`Bundle::kernels`].
    pub fn functions(&self) -> &[CudaFunction] {
        &self.funcs
    }
}

impl Gpu {
    /// Opens device 0. Fails cleanly (no abort) when no driver or device is present.
    pub fn open() -> RunResult<Gpu> {
        Self::open_ordinal(0)
    }

    /// Opens device `ordinal` (CUDA's numbering, after `CUDA_VISIBLE_DEVICES`).
    pub fn open_ordinal(ordinal: usize) -> RunResult<Gpu> {
        if !unsafe { sys::is_culib_present() } {
            return Err(RunError::Unavailable(
                "no CUDA driver found (libcuda.so could not be loaded)".to_string(),
            ));
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| RunError::Unavailable(format!("no usable CUDA device {ordinal}: {e:?}")))?;
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            blas: std::cell::OnceCell::new(),
            solver: std::cell::OnceCell::new(),
            pool: Default::default(),
            event: std::cell::OnceCell::new(),
            rows: std::cell::OnceCell::new(),
            staging: std::cell::OnceCell::new(),
        })
    }

    /// The number of CUDA devices (0 without a driver).
    pub fn count() -> usize {
        if !unsafe { sys::is_culib_present() } {
            return 0;
        }
        CudaContext::device_count().map(|n| n.max(0) as usize).unwrap_or(0)
    }

    /// Opens the GPUs of `set` (a count beyond those present means all of them) and lets
    /// each pair that can copy peer to peer do so directly (NVLink or PCIe), for the
    /// launches split between them ([`crate::exec::run_split`]).
    pub fn open_many(set: &appy_ir::config::Devices) -> RunResult<Vec<Gpu>> {
        use appy_ir::config::Devices;
        let count = Self::count();
        if count == 0 {
            return Err(RunError::Unavailable("no usable CUDA device".into()));
        }
        let ordinals: Vec<usize> = match set {
            Devices::All => (0..count).collect(),
            Devices::Count(n) => (0..(*n).clamp(1, count)).collect(),
            Devices::List(l) => l.clone(),
        };
        if let Some(bad) = ordinals.iter().find(|o| **o >= count) {
            return Err(RunError::Unavailable(format!(
                "GPU {bad} asked for, {count} present (numbered from 0)"
            )));
        }
        if ordinals.is_empty() {
            return Err(RunError::Unavailable("no GPU asked for".into()));
        }
        let gpus = ordinals.iter().map(|o| Self::open_ordinal(*o)).collect::<RunResult<Vec<_>>>()?;
        for a in &gpus {
            a.bind()?;
            for b in &gpus {
                if a.ordinal() == b.ordinal() {
                    continue;
                }
                let mut can = 0;
                unsafe { sys::cuDeviceCanAccessPeer(&mut can, a.ctx.cu_device(), b.ctx.cu_device()) }
                    .result()
                    .map_err(|e| RunError::driver("asking for peer access", e))?;
                if can == 0 {
                    tracing::info!(
                        "devices {} and {} cannot access each other: their copies go through the host",
                        a.ordinal(),
                        b.ordinal()
                    );
                    continue;
                }
                let r = unsafe { sys::cuCtxEnablePeerAccess(b.ctx.cu_ctx(), 0) };
                if r != sys::CUresult::CUDA_SUCCESS && r != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
                    return Err(RunError::driver("enabling peer access", format!("{r:?}")));
                }
            }
        }
        if let Some(g) = gpus.first() {
            g.bind()?;
        }
        Ok(gpus)
    }

    /// The device's CUDA ordinal.
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// This device's event for ordering copies between devices.
    fn event(&self) -> RunResult<sys::CUevent> {
        self.event
            .get_or_init(|| {
                self.bind()?;
                let mut ev = std::ptr::null_mut();
                unsafe { sys::cuEventCreate(&mut ev, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32) }
                    .result()
                    .map_err(|e| RunError::driver("creating an event", e))?;
                Ok(ev)
            })
            .clone()
    }

    /// Whether a GPU can be used.
    pub fn available() -> bool {
        Self::open().is_ok()
    }

    /// Loads a bundle's PTX.
    pub fn load(&self, b: &Bundle) -> RunResult<Loaded> {
        self.loader().load(b)
    }

    /// What loads modules on this device from any thread.
    pub fn loader(&self) -> Loader {
        Loader { ctx: self.ctx.clone() }
    }

    fn bind(&self) -> RunResult<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| RunError::driver("binding the CUDA context", e))
    }

    /// Runs a bundle: copies arrays in, runs the host program, copies arrays back (in
    /// place into `args`), returns the results.
    pub fn run(&self, b: &Bundle, loaded: &Loaded, args: &mut [HostValue]) -> RunResult<(Vec<HostValue>, Timing)> {
        self.run_with(b, loaded, args, &RunOptions::default())
    }

    /// [`Gpu::run`] with options: results left on the device, interruption.
    pub fn run_with(
        &self,
        b: &Bundle,
        loaded: &Loaded,
        args: &mut [HostValue],
        opts: &RunOptions<'_>,
    ) -> RunResult<(Vec<HostValue>, Timing)> {
        self.bind()?;
        let r = crate::exec::run(self, &loaded.funcs, b, args, opts, &Limits::from_env())?;
        tracing::debug!(
            "call `{}`: {} launches, {} bytes to the device, {} bytes back",
            b.func,
            r.1.launches,
            r.1.htod_bytes,
            r.1.dtoh_bytes
        );
        Ok(r)
    }

    /// [`Gpu::run_with`] with every launch split between `gpus` (from
    /// [`Gpu::open_many`]; the first runs library calls and launches that cannot be
    /// split), `loaded[d]` the bundle's kernels on `gpus[d]`, in proportion to
    /// `weights` (equal when empty). See [`crate::exec::run_split`].
    pub fn run_split(
        gpus: &[Gpu],
        loaded: &[&Loaded],
        weights: &[f64],
        b: &Bundle,
        args: &mut [HostValue],
        opts: &RunOptions<'_>,
    ) -> RunResult<(Vec<HostValue>, Timing)> {
        let devs = Self::pairs(gpus, loaded)?;
        devs[0].0.bind()?;
        crate::exec::run_split(&devs, weights, b, args, opts, &Limits::from_env())
    }

    fn pairs<'g>(gpus: &'g [Gpu], loaded: &[&'g Loaded]) -> RunResult<Vec<(&'g Gpu, &'g [CudaFunction])>> {
        if gpus.is_empty() || gpus.len() != loaded.len() {
            return Err(RunError::Arguments(format!(
                "{} devices and {} loaded bundles",
                gpus.len(),
                loaded.len()
            )));
        }
        Ok(gpus.iter().zip(loaded).map(|(g, l)| (g, &l.funcs[..])).collect())
    }

    /// Times `reps` calls split between `gpus` as [`Gpu::run_split`] runs them, on data
    /// that stays on the devices between calls ([`crate::exec::time_split`]).
    pub fn bench_split(
        gpus: &[Gpu],
        loaded: &[&Loaded],
        weights: &[f64],
        b: &Bundle,
        args: &[HostValue],
        reps: usize,
    ) -> RunResult<Vec<f64>> {
        let devs = Self::pairs(gpus, loaded)?;
        devs[0].0.bind()?;
        crate::exec::time_split(&devs, weights, b, args, reps)
    }

    /// Times `reps` calls on device-resident copies of `args`: returns the time of each
    /// call in seconds, between CUDA events recorded before and after it (the first
    /// call also moves the data to the device; later ones find it there). Host arrays
    /// are copied, so the caller's data is not modified; device buffers
    /// ([`HostValue::Device`]) are used in place.
    pub fn bench(&self, b: &Bundle, loaded: &Loaded, args: &[HostValue], reps: usize) -> RunResult<Vec<f64>> {
        self.bench_with(b, loaded, args, reps, &BenchOptions::default())
    }

    /// [`Gpu::bench`] that may stop early (`opts`): fewer than `reps` times when a call
    /// took longer than [`BenchOptions::stop_after`], [`RunError::Interrupted`] when
    /// [`BenchOptions::interrupt`] says so between host loop iterations.
    pub fn bench_with(&self, b: &Bundle, loaded: &Loaded, args: &[HostValue], reps: usize, opts: &BenchOptions<'_>) -> RunResult<Vec<f64>> {
        self.bind()?;
        let limits = Limits {
            budget: None,
            ..Limits::from_env()
        };
        let mut ex = Executor::new(self, &loaded.funcs, b, false, &limits)?;
        ex.set_interrupt(opts.interrupt);
        let r = self.bench_calls(&mut ex, args, reps, opts.stop_after);
        ex.free_all();
        r
    }

    fn bench_calls(&self, ex: &mut Executor<'_, Gpu>, args: &[HostValue], reps: usize, stop_after: Option<f64>) -> RunResult<Vec<f64>> {
        ex.bind_args(args)?;
        let mut times: Vec<f64> = vec![];
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let ev = |e: cudarc::driver::DriverError| RunError::driver("CUDA event", e);
        for _ in 0..reps {
            if let (Some(limit), Some(last)) = (stop_after, times.last())
                && *last > limit
            {
                break;
            }
            let start = self.ctx.new_event(flags).map_err(ev)?;
            let end = self.ctx.new_event(flags).map_err(ev)?;
            start.record(&self.stream).map_err(ev)?;
            ex.run_body()?;
            end.record(&self.stream).map_err(ev)?;
            self.stream.synchronize().map_err(|e| RunError::driver("kernel execution", e))?;
            times.push(start.elapsed_ms(&end).map_err(ev)? as f64 / 1e3);
        }
        Ok(times)
    }

    /// Frees every pooled buffer.
    pub fn trim(&self) {
        let mut pool = self.pool.lock().expect("pool");
        for (_, v) in pool.drain() {
            for p in v {
                unsafe {
                    let _ = result::free_sync(p);
                }
            }
        }
    }

    /// The device's name (part of autotuning keys).
    pub fn name(&self) -> String {
        self.ctx.name().unwrap_or_else(|_| "unknown GPU".into())
    }

    /// A copy of `bytes` bytes of device memory (for tuning on copies of a caller's
    /// device buffers); free it with [`Gpu::free_copy`].
    pub fn device_copy(&self, ptr: u64, bytes: usize) -> RunResult<u64> {
        self.bind()?;
        let dst = unsafe { result::malloc_sync(bytes.max(1)) }.map_err(|e| RunError::OutOfMemory {
            bytes,
            detail: format!("{e:?}"),
        })?;
        unsafe { result::memcpy_dtod_sync(dst, ptr, bytes) }.map_err(|e| RunError::driver("device copy", e))?;
        Ok(dst)
    }

    /// Frees memory from [`Gpu::device_copy`].
    pub fn free_copy(&self, ptr: u64) {
        unsafe {
            let _ = result::free_sync(ptr);
        }
    }

    /// Takes ownership of device memory returned by [`Gpu::run_with`] (freed when the
    /// buffer is dropped).
    pub fn adopt(&self, ptr: u64) -> DeviceBuffer {
        DeviceBuffer {
            ptr,
            ctx: self.ctx.clone(),
        }
    }

    /// Loads every autotuning candidate of a bundle ([`Bundle::candidate`] order).
    /// Loads every candidate of a bundle now (the driver checks all of them).
    pub fn load_candidates(&self, b: &Bundle) -> RunResult<Candidates> {
        let c = Candidates::new(b);
        for k in 0..b.candidates() {
            c.get(self, b, k)?;
        }
        Ok(c)
    }
}

/// Loads bundles' PTX on a device, from any thread ([`Gpu::loader`]). Loading is where
/// the driver compiles the PTX for the device: tens to hundreds of milliseconds for a
/// large kernel.
#[derive(Clone)]
pub struct Loader {
    ctx: Arc<CudaContext>,
}

impl Loader {
    /// Loads a bundle's PTX (the kernels of one candidate).
    pub fn load(&self, b: &Bundle) -> RunResult<Loaded> {
        let mut funcs = vec![];
        let module = if b.ptx.is_empty() {
            None
        } else {
            let m = self
                .ctx
                .load_module(cudarc::nvrtc::Ptx::from_src(b.ptx.clone()))
                .map_err(|e| RunError::Bundle(format!("the CUDA driver rejected the PTX: {e:?}")))?;
            for k in &b.kernels {
                let f = m
                    .load_function(&k.name)
                    .map_err(|e| RunError::Bundle(format!("kernel {} not found in the PTX: {e:?}", k.name)))?;
                funcs.push(f);
            }
            Some(m)
        };
        Ok(Loaded { _module: module, funcs })
    }
}

/// A bundle's autotuning candidates, each loaded on the device at its first use:
/// loading hands the PTX to the driver, which compiles it for the device, so a call
/// whose tuning decision is known (from the cache) loads only its own candidate.
pub struct Candidates {
    slots: Vec<std::sync::OnceLock<Loaded>>,
}

impl Candidates {
    /// Nothing loaded yet, one slot per candidate of `b`.
    pub fn new(b: &Bundle) -> Self {
        Candidates {
            slots: (0..b.candidates()).map(|_| std::sync::OnceLock::new()).collect(),
        }
    }

    /// Candidate `k` of `b` (the bundle these slots were made for), loaded on `gpu` if
    /// it is not yet.
    pub fn get(&self, gpu: &Gpu, b: &Bundle, k: usize) -> RunResult<&Loaded> {
        self.get_with(&gpu.loader(), b, k)
    }

    /// [`Candidates::get`] with a [`Loader`], from any thread.
    pub fn get_with(&self, loader: &Loader, b: &Bundle, k: usize) -> RunResult<&Loaded> {
        let slot = self
            .slots
            .get(k)
            .ok_or_else(|| RunError::Bundle(format!("no candidate {k} (the bundle has {})", self.slots.len())))?;
        if let Some(l) = slot.get() {
            return Ok(l);
        }
        let _span = tracing::debug_span!("load", func = %b.func, candidate = k).entered();
        let t0 = std::time::Instant::now();
        let l = loader.load(b.candidate(k))?;
        tracing::debug!("loaded candidate {k} of `{}` in {:.2} ms", b.func, t0.elapsed().as_secs_f64() * 1e3);
        // Another thread may have loaded it meanwhile: theirs is kept.
        let _ = slot.set(l);
        Ok(slot.get().expect("just set"))
    }

    /// Loads every candidate not loaded yet, one after another (the driver serialises
    /// loads: on an H200, loading 7 candidates on 7 threads took as long as one after
    /// another, and held up a launch meanwhile); a candidate that fails to load is left
    /// for [`Candidates::get`] to report.
    pub fn preload(&self, loader: &Loader, b: &Bundle) {
        let t0 = std::time::Instant::now();
        for k in 0..self.slots.len() {
            if let Err(e) = self.get_with(loader, b, k) {
                tracing::debug!("candidate {k} of `{}` did not load: {e}", b.func);
            }
        }
        tracing::debug!(
            "loaded the candidates of `{}` in {:.2} ms",
            b.func,
            t0.elapsed().as_secs_f64() * 1e3
        );
    }

    /// How many candidates are loaded.
    pub fn loaded(&self) -> usize {
        self.slots.iter().filter(|s| s.get().is_some()).count()
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        self.trim();
        if let Some(Some(p)) = self.staging.get() {
            unsafe {
                let _ = result::free_host(*p as *mut std::ffi::c_void);
            }
        }
        if let Some(Ok(ev)) = self.event.get() {
            unsafe {
                let _ = sys::cuEventDestroy_v2(*ev);
            }
        }
    }
}

impl Device for Gpu {
    type Kernel = CudaFunction;

    fn alloc(&self, bytes: usize) -> RunResult<DevicePtr> {
        if let Some(p) = self.pool.lock().expect("pool").get_mut(&bytes).and_then(|v| v.pop()) {
            return Ok(p);
        }
        match unsafe { result::malloc_sync(bytes) } {
            Ok(p) => Ok(p),
            Err(_) => {
                // Out of memory: give the pooled buffers back and try once more.
                self.trim();
                unsafe { result::malloc_sync(bytes) }.map_err(|e| RunError::OutOfMemory {
                    bytes,
                    detail: format!("{e:?}"),
                })
            }
        }
    }

    fn release(&self, ptr: DevicePtr, bytes: usize) {
        self.pool.lock().expect("pool").entry(bytes).or_default().push(ptr);
    }

    fn malloc(&self, bytes: usize) -> RunResult<DevicePtr> {
        unsafe { result::malloc_sync(bytes.max(1)) }.map_err(|e| RunError::OutOfMemory {
            bytes,
            detail: format!("{e:?}"),
        })
    }

    fn free(&self, ptr: DevicePtr) -> RunResult<()> {
        unsafe { result::free_sync(ptr) }.map_err(|e| RunError::driver("freeing device memory", e))
    }

    fn htod(&self, dst: DevicePtr, src: &[u8]) -> RunResult<()> {
        unsafe { result::memcpy_htod_sync(dst, src) }.map_err(|e| RunError::driver("copy to device", e))
    }

    fn htod_ordered(&self, dst: DevicePtr, src: &[u8]) -> RunResult<()> {
        // On the launches' stream: after them, and (from pageable memory, a few bytes)
        // staged by the driver before the call returns, so `src` may go at once.
        unsafe { result::memcpy_htod_async(dst, src, self.stream.cu_stream()) }.map_err(|e| RunError::driver("copy to device", e))
    }

    fn dtoh(&self, dst: &mut [u8], src: DevicePtr) -> RunResult<()> {
        unsafe { result::memcpy_dtoh_sync(dst, src) }.map_err(|e| RunError::driver("copy from device", e))
    }

    fn dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize) -> RunResult<()> {
        unsafe { result::memcpy_dtod_async(dst, src, bytes, self.stream.cu_stream()) }.map_err(|e| RunError::driver("device copy", e))
    }

    fn synchronize(&self) -> RunResult<()> {
        self.stream.synchronize().map_err(|e| RunError::driver("kernel execution", e))
    }

    fn htod_rows(&self, dst: DevicePtr, host: &[u8], rows: &[Rows]) -> RunResult<()> {
        self.put_rows(dst, host, rows)
    }

    fn dtoh_rows(&self, host: &mut [u8], src: DevicePtr, rows: &[Rows]) -> RunResult<()> {
        self.get_rows(host, src, rows)
    }

    fn activate(&self) -> RunResult<()> {
        self.bind()
    }

    fn copy_from_peer(&self, dst: DevicePtr, from: &Gpu, src: DevicePtr, bytes: usize) -> RunResult<()> {
        let (src_ev, dst_ev) = (from.event()?, self.event()?);
        // The copy waits for `from`'s work so far; `from`'s later work waits for the
        // copy; no host wait either way.
        from.bind()?;
        unsafe { sys::cuEventRecord(src_ev, from.stream.cu_stream()) }
            .result()
            .map_err(|e| RunError::driver("recording an event", e))?;
        self.bind()?;
        unsafe {
            sys::cuStreamWaitEvent(self.stream.cu_stream(), src_ev, 0)
                .result()
                .map_err(|e| RunError::driver("waiting for an event", e))?;
            sys::cuMemcpyPeerAsync(dst, self.ctx.cu_ctx(), src, from.ctx.cu_ctx(), bytes, self.stream.cu_stream())
                .result()
                .map_err(|e| RunError::driver("copying between devices", e))?;
            sys::cuEventRecord(dst_ev, self.stream.cu_stream())
                .result()
                .map_err(|e| RunError::driver("recording an event", e))?;
        }
        from.bind()?;
        unsafe { sys::cuStreamWaitEvent(from.stream.cu_stream(), dst_ev, 0) }
            .result()
            .map_err(|e| RunError::driver("waiting for an event", e))?;
        self.bind()
    }

    fn launch(&self, kernel: &CudaFunction, name: &str, grid: [u32; 3], block: [u32; 3], params: &mut [u64]) -> RunResult<()> {
        let mut ptrs: Vec<*mut std::ffi::c_void> = params.iter_mut().map(|c| c as *mut u64 as *mut std::ffi::c_void).collect();
        unsafe {
            result::launch_kernel(
                kernel.cu_function(),
                (grid[0], grid[1], grid[2]),
                (block[0], block[1], block[2]),
                0,
                self.stream.cu_stream(),
                &mut ptrs,
            )
        }
        .map_err(|e| RunError::Kernel {
            kernel: name.to_string(),
            detail: format!("failed to launch: {e:?}"),
        })
    }

    fn free_memory(&self) -> Option<usize> {
        result::mem_get_info().ok().map(|(free, _)| free)
    }

    fn gemm(&self, call: &GemmCall) -> RunResult<()> {
        self.blas_gemm(call)
    }

    fn gemv(&self, call: &GemvCall) -> RunResult<()> {
        self.blas_gemv(call)
    }

    fn trsv(&self, call: &TrsvCall) -> RunResult<()> {
        self.blas_trsv(call)
    }

    fn potrf(&self, call: &PotrfCall) -> RunResult<i32> {
        self.solver_potrf(call)
    }
}
