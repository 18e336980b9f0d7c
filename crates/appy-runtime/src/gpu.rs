//! The GPU runner: executes a [`Bundle`] with the CUDA driver (through cudarc).
//!
//! The bundle's host function (at the `gpu` level) is interpreted: scalar code, host
//! loops and conditionals, allocations (device memory), and `gpu.launch_func`, which
//! launches the bundle's PTX kernels. Array arguments are copied to the device before
//! the call and back after it (whole arrays, for now).

use crate::array::{HostArray, HostValue};
use crate::regions::{IndexBox, LaunchArg, find_kernel};
use appy_ir::bundle::Bundle;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::types::{ArgType, DType, parse_memref};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, result, sys};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// A device, with the modules loaded on it.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// cuBLAS, loaded on the first matrix product (`appy.gemm`).
    blas: std::cell::OnceCell<Result<cudarc::cublas::sys::cublasHandle_t, String>>,
    /// cuSOLVER, loaded on the first factorisation (`appy.potrf`).
    solver: std::cell::OnceCell<Result<cudarc::cusolver::sys::cusolverDnHandle_t, String>>,
    /// Device buffers of finished calls, by size, for reuse (allocating device memory
    /// synchronises and costs tens of microseconds per buffer).
    pool: std::sync::Mutex<HashMap<usize, Vec<u64>>>,
}

// SAFETY: the cuBLAS and cuSOLVER handles (raw pointers) may be used from any thread,
// one thread at a time; `Gpu` is not `Sync`, so callers that share it across threads
// put it behind a lock.
unsafe impl Send for Gpu {}

/// Options of [`Gpu::run_with`].
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Leave returned arrays in device memory ([`HostValue::Device`]) instead of
    /// copying them to the host. A returned array that is not one of the caller's
    /// device arguments is newly allocated: the caller owns it and frees it, e.g. with
    /// [`Gpu::adopt`].
    pub results_on_device: bool,
    /// Asked about every 20 ms while the host function runs a loop: returning `true`
    /// stops the call with the error [`INTERRUPTED`] (e.g. Ctrl-C in an embedding
    /// interpreter). Kernels already launched finish first.
    pub interrupt: Option<&'a dyn Fn() -> bool>,
}

/// The error of a call stopped by [`RunOptions::interrupt`].
pub const INTERRUPTED: &str = "interrupted";

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

/// Timing of one call.
#[derive(Clone, Debug, Default)]
pub struct Timing {
    /// Seconds spent in kernels (launch to completion, synchronised per launch when
    /// `sync_each_launch` is set; otherwise the whole call).
    pub kernel_s: f64,
    /// Number of launches.
    pub launches: usize,
    /// Bytes copied host → device.
    pub htod_bytes: usize,
    /// Bytes copied device → host.
    pub dtoh_bytes: usize,
    /// Tiles run by launches split to fit the memory budget.
    pub tiles: usize,
}

impl Gpu {
    /// Opens device 0. Fails cleanly (no abort) when no driver or device is present.
    pub fn open() -> Result<Gpu, String> {
        if !unsafe { sys::is_culib_present() } {
            return Err("no CUDA driver found (libcuda.so could not be loaded)".to_string());
        }
        let ctx = CudaContext::new(0).map_err(|e| format!("no usable CUDA device: {e:?}"))?;
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            blas: std::cell::OnceCell::new(),
            solver: std::cell::OnceCell::new(),
            pool: Default::default(),
        })
    }

    /// Whether a GPU can be used.
    pub fn available() -> bool {
        Self::open().is_ok()
    }

    /// Loads a bundle's PTX.
    pub fn load(&self, b: &Bundle) -> Result<Loaded, String> {
        let mut funcs = HashMap::new();
        let module = if b.ptx.is_empty() {
            None
        } else {
            let m = self
                .ctx
                .load_module(cudarc::nvrtc::Ptx::from_src(b.ptx.clone()))
                .map_err(|e| format!("the CUDA driver rejected the PTX: {e:?}"))?;
            for k in &b.kernels {
                let f = m
                    .load_function(&k.name)
                    .map_err(|e| format!("kernel {} not found in the PTX: {e:?}", k.name))?;
                funcs.insert(k.name.clone(), (f, k.params.clone()));
            }
            Some(m)
        };
        Ok(Loaded { _module: module, funcs })
    }

    /// Runs a bundle: copies arrays in, interprets the host function, copies arrays
    /// back (in place into `args`), returns the results.
    pub fn run(&self, b: &Bundle, loaded: &Loaded, args: &mut [HostValue]) -> Result<(Vec<HostValue>, Timing), String> {
        self.run_with(b, loaded, args, &RunOptions::default())
    }

    /// [`Gpu::run`] with options: results left on the device, interruption.
    pub fn run_with(
        &self,
        b: &Bundle,
        loaded: &Loaded,
        args: &mut [HostValue],
        opts: &RunOptions<'_>,
    ) -> Result<(Vec<HostValue>, Timing), String> {
        // Shapes from callers (device arrays, C callers): their sizes must not overflow.
        for a in args.iter() {
            a.check_size()?;
        }
        let sig: Vec<ArgType> = args.iter().map(|a| a.arg_type()).collect();
        if sig != b.args {
            return Err(format!(
                "arguments ({}) do not match the bundle's signature ({})",
                sig.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", "),
                b.args.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        self.ctx.bind_to_thread().map_err(|e| format!("{e:?}"))?;
        // The device memory budget (bytes) for the arguments: `APPY_DEVICE_BUDGET`, else
        // 90 % of the device's free memory. Beyond it, launches run in tiles. Asking the
        // driver for the free memory costs tens of microseconds, so calls whose arrays
        // are all on the device already (nothing to copy) do not ask.
        let arg_bytes: usize = args
            .iter()
            .map(|a| if let HostValue::Array(x) = a { x.data.len() } else { 0 })
            .sum();
        let budget = match appy_ir::config::device_budget() {
            Some(b) => b,
            None if arg_bytes == 0 => usize::MAX,
            None => result::mem_get_info().map(|(free, _)| free / 10 * 9).unwrap_or(usize::MAX),
        };
        let tiled = arg_bytes > budget;
        let mut it = Interp::new(self, loaded, b, tiled, budget);
        it.interrupt = opts.interrupt;
        let func = host_function(b)?;
        let arg_mems = match it.bind_args(func, args) {
            Ok(m) => m,
            Err(e) => {
                it.free_all();
                return Err(e);
            }
        };
        let t0 = Instant::now();
        let ret = match it.block(&func.body(0).ops) {
            Ok(r) => r,
            Err(e) => {
                // Finish what was launched before giving the buffers back.
                let _ = self.stream.synchronize();
                it.free_all();
                return Err(e);
            }
        };
        self.stream.synchronize().map_err(|e| format!("kernel execution failed: {e:?}"))?;
        if it.timing.kernel_s == 0.0 {
            it.timing.kernel_s = t0.elapsed().as_secs_f64();
        }
        // An index out of bounds (checked mode) or a negative dimension: an error
        // instead of results.
        if let Err(e) = it.check_status(b) {
            it.free_all();
            return Err(e);
        }
        let mut k = 0;
        for a in args.iter_mut() {
            if let HostValue::Array(arr) = a {
                it.download(arg_mems[k], &mut arr.data)?;
                k += 1;
            }
        }
        let mut results = vec![];
        for (v, t) in ret.unwrap_or_default().iter().zip(&b.results) {
            results.push(match (v, t) {
                (HV::Mem(id), ArgType::Array { dtype, .. })
                    if opts.results_on_device && it.mems[*id].shadow.is_none() && it.mems[*id].host.is_none() =>
                {
                    // Ownership passes to the caller (the buffer of a caller's argument
                    // stays the caller's: it is marked freed already).
                    let m = &mut it.mems[*id];
                    m.freed = true;
                    HostValue::Device {
                        ptr: m.ptr,
                        dtype: *dtype,
                        shape: m.shape.clone(),
                    }
                }
                (HV::Mem(id), ArgType::Array { dtype, .. }) => {
                    let shape = it.mems[*id].shape.clone();
                    let mut arr = HostArray::try_zeros(*dtype, shape)?;
                    it.download(*id, &mut arr.data)?;
                    HostValue::Array(arr)
                }
                (HV::I(i), ArgType::Scalar { dtype, weak }) => {
                    if *dtype == DType::Bool {
                        HostValue::Bool(*i != 0)
                    } else {
                        HostValue::Int(*i, *dtype, *weak)
                    }
                }
                (HV::F(f), ArgType::Scalar { dtype, weak }) => HostValue::Float(*f, *dtype, *weak),
                _ => return Err("result kind mismatch".into()),
            });
        }
        it.free_all();
        Ok((results, it.timing))
    }
}

impl Gpu {
    /// Times `reps` calls on device-resident copies of `args`: returns the time of each
    /// call in seconds, between CUDA events recorded before and after it (the first
    /// call also moves the data to the device; later ones find it there). Host arrays
    /// are copied, so the caller's data is not modified; device buffers
    /// ([`HostValue::Device`]) are used in place.
    pub fn bench(&self, b: &Bundle, loaded: &Loaded, args: &[HostValue], reps: usize) -> Result<Vec<f64>, String> {
        self.ctx.bind_to_thread().map_err(|e| format!("{e:?}"))?;
        let mut it = Interp::new(self, loaded, b, false, usize::MAX);
        let func = host_function(b)?;
        it.bind_args(func, args)?;
        let mut times = vec![];
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let ev = |e: cudarc::driver::DriverError| format!("CUDA event: {e:?}");
        for _ in 0..reps {
            let start = self.ctx.new_event(flags).map_err(ev)?;
            let end = self.ctx.new_event(flags).map_err(ev)?;
            start.record(&self.stream).map_err(ev)?;
            let r = it.block(&func.body(0).ops);
            if let Err(e) = r {
                it.free_all();
                return Err(e);
            }
            end.record(&self.stream).map_err(ev)?;
            self.stream.synchronize().map_err(|e| format!("kernel execution failed: {e:?}"))?;
            times.push(start.elapsed_ms(&end).map_err(ev)? as f64 / 1e3);
        }
        it.free_all();
        Ok(times)
    }

    /// A device buffer of `bytes` bytes, reused from the pool when one is free.
    fn alloc(&self, bytes: usize) -> Result<u64, String> {
        if let Some(p) = self.pool.lock().expect("pool").get_mut(&bytes).and_then(|v| v.pop()) {
            return Ok(p);
        }
        match unsafe { result::malloc_sync(bytes) } {
            Ok(p) => Ok(p),
            Err(_) => {
                // Out of memory: give the pooled buffers back and try once more.
                self.trim();
                unsafe { result::malloc_sync(bytes) }.map_err(|e| format!("device out of memory ({bytes} bytes): {e:?}"))
            }
        }
    }

    /// Returns a buffer from [`Gpu::alloc`] to the pool.
    fn release(&self, ptr: u64, bytes: usize) {
        self.pool.lock().expect("pool").entry(bytes).or_default().push(ptr);
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
    /// device buffers); free it with [`Gpu::free`].
    pub fn device_copy(&self, ptr: u64, bytes: usize) -> Result<u64, String> {
        self.ctx.bind_to_thread().map_err(|e| format!("{e:?}"))?;
        let dst = unsafe { result::malloc_sync(bytes.max(1)) }.map_err(|e| format!("device out of memory ({bytes} bytes): {e:?}"))?;
        unsafe { result::memcpy_dtod_sync(dst, ptr, bytes) }.map_err(|e| format!("device copy failed: {e:?}"))?;
        Ok(dst)
    }

    /// Frees memory from [`Gpu::device_copy`].
    pub fn free(&self, ptr: u64) {
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
    pub fn load_candidates(&self, b: &Bundle) -> Result<Vec<Loaded>, String> {
        (0..b.candidates()).map(|k| self.load(b.candidate(k))).collect()
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        self.trim();
    }
}

/// A bundle's kernels loaded on a device.
pub struct Loaded {
    _module: Option<Arc<CudaModule>>,
    funcs: HashMap<String, (CudaFunction, Vec<String>)>,
}

#[derive(Clone, Copy, Debug)]
enum HV {
    I(i64),
    F(f64),
    Mem(usize),
}

struct Mem {
    ptr: sys::CUdeviceptr,
    /// Size of the device buffer from `Gpu::alloc` (0: not ours to release).
    bytes: usize,
    /// Host scalar slot (`memref.alloca` in host code).
    host: Option<Vec<u64>>,
    dtype: DType,
    shape: Vec<usize>,
    freed: bool,
    /// For an array argument: the host copy, moved to the device only where kernels
    /// access it (`valid`: boxes whose device copy is current; `dirty`: boxes kernels
    /// may have written, copied back at the end).
    shadow: Option<Vec<u8>>,
    valid: Vec<IndexBox>,
    dirty: Vec<IndexBox>,
}

struct Interp<'a> {
    /// Arguments are not copied to the device whole: every launch runs in tiles of
    /// blocks whose data fits the memory budget (seed 002 §5.4).
    tiled: bool,
    budget: usize,
    gpu: &'a Gpu,
    loaded: &'a Loaded,
    m: &'a Module,
    env: HashMap<Value, HV>,
    mems: Vec<Mem>,
    timing: Timing,
    mvl: i64,
    interrupt: Option<&'a dyn Fn() -> bool>,
    last_check: Instant,
    /// The status buffer's memory, when the function takes one.
    status: Option<usize>,
}

fn bits_of(ty: &str) -> u32 {
    match ty {
        "i1" => 1,
        "i32" | "f32" => 32,
        _ => 64,
    }
}

fn wrap(v: i64, bits: u32) -> i64 {
    match bits {
        1 => v & 1,
        32 => v as i32 as i64,
        _ => v,
    }
}

impl<'a> Interp<'a> {
    fn new(gpu: &'a Gpu, loaded: &'a Loaded, b: &'a Bundle, tiled: bool, budget: usize) -> Self {
        Interp {
            tiled,
            budget,
            gpu,
            loaded,
            m: &b.host,
            env: HashMap::new(),
            mems: vec![],
            timing: Timing::default(),
            mvl: b.mvl,
            interrupt: None,
            last_check: Instant::now(),
            status: None,
        }
    }

    /// Makes a host array available to kernels: device memory is allocated, and parts
    /// are copied when a kernel first accesses them (see [`crate::regions`]).
    fn upload(&mut self, arr: &HostArray) -> Result<usize, String> {
        let bytes = arr.data.len().max(1);
        let ptr = if self.tiled { 0 } else { self.gpu.alloc(bytes)? };
        self.mems.push(Mem {
            ptr,
            bytes: if ptr == 0 { 0 } else { bytes },
            host: None,
            dtype: arr.dtype,
            shape: arr.shape.clone(),
            freed: false,
            shadow: Some(arr.data.to_vec()),
            valid: vec![],
            dirty: vec![],
        });
        Ok(self.mems.len() - 1)
    }

    /// Binds the host function's parameters to the call's arguments; returns the
    /// memory ids of the host array arguments, in order.
    fn bind_args(&mut self, func: &Op, args: &[HostValue]) -> Result<Vec<usize>, String> {
        let mut arg_mems = vec![];
        for (v, a) in func.body(0).args.iter().zip(args) {
            let hv = match a {
                HostValue::Array(arr) => {
                    let id = self.upload(arr)?;
                    arg_mems.push(id);
                    HV::Mem(id)
                }
                HostValue::Int(i, _, _) => HV::I(*i),
                HostValue::Float(f, _, _) => HV::F(*f),
                HostValue::Bool(x) => HV::I(*x as i64),
                HostValue::Device { ptr, dtype, shape } => HV::Mem(self.borrow(*ptr, *dtype, shape)),
            };
            self.env.insert(*v, hv);
        }
        // The status buffer ([`appy_ir::status`]): a trailing parameter, zeroed.
        if let Some(v) = func.body(0).args.get(args.len()) {
            let zeros = HostArray::try_zeros(DType::I64, vec![appy_ir::status::STATUS_LEN])?;
            let id = self.upload(&zeros)?;
            self.status = Some(id);
            self.env.insert(*v, HV::Mem(id));
        }
        Ok(arg_mems)
    }

    /// After a synchronised call: the status buffer's error, else its warnings queued.
    fn check_status(&mut self, b: &Bundle) -> Result<(), String> {
        let (Some(id), Some(st)) = (self.status, &b.status) else {
            return Ok(());
        };
        let mut bytes = vec![0u8; 8 * appy_ir::status::STATUS_LEN];
        self.download(id, &mut bytes)?;
        let words: Vec<i64> = bytes
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        crate::status::queue(st.decode(&words)?);
        Ok(())
    }

    /// A launch's arguments as the access analysis sees them.
    fn launch_args(&self, args: &[Value], params: &[String]) -> Result<Vec<LaunchArg>, String> {
        args.iter()
            .zip(params)
            .map(|(v, ty)| {
                Ok(match self.get(*v)? {
                    HV::Mem(id) => LaunchArg::Array(self.mems[id].shape.clone()),
                    HV::I(i) if !ty.starts_with('f') => LaunchArg::Int(i),
                    _ => LaunchArg::Float,
                })
            })
            .collect()
    }

    /// A caller's device array: used in place, never copied or freed.
    fn borrow(&mut self, ptr: u64, dtype: DType, shape: &[usize]) -> usize {
        self.mems.push(Mem {
            ptr,
            bytes: 0,
            host: None,
            dtype,
            shape: shape.to_vec(),
            freed: true,
            shadow: None,
            valid: vec![],
            dirty: vec![],
        });
        self.mems.len() - 1
    }

    /// Copies the current contents of an array to `out`: for an argument, the parts
    /// kernels wrote come back from the device into the host copy.
    fn download(&mut self, id: usize, out: &mut [u8]) -> Result<(), String> {
        if out.is_empty() {
            return Ok(());
        }
        self.gpu
            .stream
            .synchronize()
            .map_err(|e| format!("kernel execution failed: {e:?}"))?;
        let m = &mut self.mems[id];
        let Some(shadow) = m.shadow.as_mut() else {
            self.timing.dtoh_bytes += out.len();
            return unsafe { result::memcpy_dtoh_sync(out, m.ptr) }.map_err(|e| format!("copy from device failed: {e:?}"));
        };
        let es = m.dtype.size();
        if m.ptr == 0 {
            out.copy_from_slice(shadow);
            return Ok(());
        }
        for b in std::mem::take(&mut m.dirty) {
            for (start, len) in b.runs(&m.shape) {
                let dst = &mut shadow[start * es..(start + len) * es];
                unsafe { result::memcpy_dtoh_sync(dst, m.ptr + (start * es) as u64) }
                    .map_err(|e| format!("copy from device failed: {e:?}"))?;
                self.timing.dtoh_bytes += len * es;
            }
        }
        out.copy_from_slice(shadow);
        Ok(())
    }

    /// Before a launch: copies the parts of `id` that the kernel accesses and whose
    /// device copy is not current.
    fn make_valid(&mut self, id: usize, need: &IndexBox, written: Option<&IndexBox>) -> Result<(), String> {
        let m = &mut self.mems[id];
        let Some(shadow) = m.shadow.as_ref() else { return Ok(()) };
        let es = m.dtype.size();
        let mut missing = vec![need.clone()];
        for v in &m.valid {
            missing = missing.iter().flat_map(|b| b.subtract(v)).collect();
        }
        for b in &missing {
            for (start, len) in b.runs(&m.shape) {
                let src = &shadow[start * es..(start + len) * es];
                unsafe { result::memcpy_htod_sync(m.ptr + (start * es) as u64, src) }
                    .map_err(|e| format!("copy to device failed: {e:?}"))?;
                self.timing.htod_bytes += len * es;
            }
        }
        m.valid.extend(missing);
        if let Some(w) = written.filter(|w| !w.is_empty() && !m.dirty.iter().any(|d| d.contains(w))) {
            m.dirty.push(w.clone());
        }
        Ok(())
    }

    /// Whether flat element `flat` of `id` is current on the device.
    fn on_device(&self, id: usize, flat: usize) -> bool {
        let m = &self.mems[id];
        if m.shadow.is_none() {
            return true;
        }
        let mut idx = vec![0i64; m.shape.len()];
        let mut rest = flat;
        for d in (0..m.shape.len()).rev() {
            idx[d] = (rest % m.shape[d].max(1)) as i64;
            rest /= m.shape[d].max(1);
        }
        let point = IndexBox {
            lo: idx.clone(),
            hi: idx.iter().map(|x| x + 1).collect(),
        };
        m.valid.iter().any(|v| v.contains(&point))
    }
    fn free_all(&mut self) {
        for m in &mut self.mems {
            if m.host.is_none() && !m.freed && m.ptr != 0 {
                if m.bytes > 0 {
                    self.gpu.release(m.ptr, m.bytes);
                } else {
                    unsafe {
                        let _ = result::free_sync(m.ptr);
                    }
                }
                m.freed = true;
            }
        }
    }
    fn get(&self, v: Value) -> Result<HV, String> {
        self.env
            .get(&v)
            .copied()
            .ok_or_else(|| format!("host interpreter: value %v{} undefined", v.0))
    }
    fn int(&self, v: Value) -> Result<i64, String> {
        match self.get(v)? {
            HV::I(i) => Ok(i),
            HV::F(f) => Ok(f as i64),
            HV::Mem(_) => Err("expected an integer".into()),
        }
    }
    fn float(&self, v: Value) -> Result<f64, String> {
        match self.get(v)? {
            HV::F(f) => Ok(f),
            HV::I(i) => Ok(i as f64),
            HV::Mem(_) => Err("expected a float".into()),
        }
    }
    fn mem(&self, v: Value) -> Result<usize, String> {
        match self.get(v)? {
            HV::Mem(m) => Ok(m),
            _ => Err("expected a memref".into()),
        }
    }
    fn ty(&self, v: Value) -> &str {
        self.m.ty(v)
    }

    /// Runs ops; returns `Some(values)` at a terminator that yields/returns.
    fn block(&mut self, ops: &[Op]) -> Result<Option<Vec<HV>>, String> {
        for op in ops {
            match op.name.as_str() {
                "func.return" | "scf.yield" => {
                    let vals = op.operands.iter().map(|v| self.get(*v)).collect::<Result<Vec<_>, _>>()?;
                    return Ok(Some(vals));
                }
                _ => self.op(op)?,
            }
        }
        Ok(None)
    }

    fn set(&mut self, op: &Op, v: HV) {
        self.env.insert(op.results[0], v);
    }

    fn op(&mut self, op: &Op) -> Result<(), String> {
        let n = op.name.as_str();
        let o = &op.operands;
        match n {
            "arith.constant" => {
                let text = op.attr("value").ok_or("constant without value")?;
                let (val, ty) = text.rsplit_once(" : ").unwrap_or((text, self.ty(op.results[0])));
                let ty = ty.trim();
                let v = if ty.starts_with('f') {
                    let f = if let Some(h) = val.strip_prefix("0x") {
                        let bits = u64::from_str_radix(h, 16).map_err(|_| format!("bad float constant {val}"))?;
                        if ty == "f32" {
                            f32::from_bits(bits as u32) as f64
                        } else {
                            f64::from_bits(bits)
                        }
                    } else {
                        val.trim().parse::<f64>().map_err(|_| format!("bad float constant {val}"))?
                    };
                    HV::F(f)
                } else {
                    match val.trim() {
                        "true" => HV::I(1),
                        "false" => HV::I(0),
                        s => HV::I(s.parse::<i64>().map_err(|_| format!("bad integer constant {s}"))?),
                    }
                };
                self.set(op, v);
            }
            "arith.addi" | "arith.subi" | "arith.muli" | "arith.divsi" | "arith.remsi" | "arith.ceildivsi" | "arith.floordivsi"
            | "arith.maxsi" | "arith.minsi" | "arith.andi" | "arith.ori" | "arith.xori" | "arith.shli" | "arith.shrsi" | "arith.divui"
            | "arith.remui" | "arith.shrui" | "arith.maxui" | "arith.minui" | "arith.ceildivui" | "math.ipowi" => {
                let (a, b) = (self.int(o[0])?, self.int(o[1])?);
                let bits = bits_of(self.ty(op.results[0]));
                let zero_div = matches!(
                    n,
                    "arith.divsi"
                        | "arith.remsi"
                        | "arith.ceildivsi"
                        | "arith.floordivsi"
                        | "arith.divui"
                        | "arith.remui"
                        | "arith.ceildivui"
                ) && b == 0;
                if zero_div {
                    return Err("integer division by zero".into());
                }
                let r = match n {
                    "arith.addi" => a.wrapping_add(b),
                    "arith.subi" => a.wrapping_sub(b),
                    "arith.muli" => a.wrapping_mul(b),
                    "arith.divsi" | "arith.divui" => a.wrapping_div(b),
                    "arith.remsi" | "arith.remui" => a.wrapping_rem(b),
                    "arith.ceildivsi" | "arith.ceildivui" => {
                        let q = a.wrapping_div(b);
                        if (a % b != 0) && ((a < 0) == (b < 0)) { q + 1 } else { q }
                    }
                    "arith.floordivsi" => a.div_euclid(b) - if b < 0 && a.rem_euclid(b) != 0 { 1 } else { 0 },
                    "arith.maxsi" | "arith.maxui" => a.max(b),
                    "arith.minsi" | "arith.minui" => a.min(b),
                    "arith.andi" => a & b,
                    "arith.ori" => a | b,
                    "arith.xori" => a ^ b,
                    "arith.shli" => a.wrapping_shl(b as u32),
                    "arith.shrsi" => a.wrapping_shr(b as u32),
                    "arith.shrui" => ((a as u64) >> (b as u32)) as i64,
                    _ => {
                        if b < 0 {
                            0
                        } else {
                            a.wrapping_pow(b as u32)
                        }
                    }
                };
                self.set(op, HV::I(wrap(r, bits)));
            }
            "arith.addf" | "arith.subf" | "arith.mulf" | "arith.divf" | "arith.remf" | "arith.maximumf" | "arith.minimumf"
            | "arith.maxnumf" | "arith.minnumf" | "math.powf" | "math.atan2" | "math.copysign" => {
                let (a, b) = (self.float(o[0])?, self.float(o[1])?);
                let r = crate::hostmath::binary(n, a, b).ok_or_else(|| format!("{n} is not supported in host code"))?;
                let r = if self.ty(op.results[0]) == "f32" { r as f32 as f64 } else { r };
                self.set(op, HV::F(r));
            }
            "math.fma" => {
                let (a, b, c) = (self.float(o[0])?, self.float(o[1])?, self.float(o[2])?);
                let r = a.mul_add(b, c);
                let r = if self.ty(op.results[0]) == "f32" { r as f32 as f64 } else { r };
                self.set(op, HV::F(r));
            }
            "math.fpowi" => {
                let (a, b) = (self.float(o[0])?, self.int(o[1])?);
                self.set(op, HV::F(a.powi(b as i32)));
            }
            n if crate::hostmath::unary(n, 0.0).is_some() => {
                let a = self.float(o[0])?;
                let r = crate::hostmath::unary(n, a).expect("checked above");
                let r = if self.ty(op.results[0]) == "f32" { r as f32 as f64 } else { r };
                self.set(op, HV::F(r));
            }
            n if crate::hostmath::predicate(n, 0.0).is_some() => {
                let a = self.float(o[0])?;
                let r = crate::hostmath::predicate(n, a).expect("checked above");
                self.set(op, HV::I(r as i64));
            }
            "math.absi" => {
                let a = self.int(o[0])?;
                self.set(op, HV::I(a.wrapping_abs()));
            }
            "arith.cmpi" => {
                let (a, b) = (self.int(o[0])?, self.int(o[1])?);
                let p: i64 = op
                    .attr("predicate")
                    .and_then(|s| s.split(' ').next()?.parse().ok())
                    .ok_or("bad cmpi")?;
                let r = match p {
                    0 => a == b,
                    1 => a != b,
                    2 => a < b,
                    3 => a <= b,
                    4 => a > b,
                    5 => a >= b,
                    6 => (a as u64) < (b as u64),
                    7 => (a as u64) <= (b as u64),
                    8 => (a as u64) > (b as u64),
                    _ => (a as u64) >= (b as u64),
                };
                self.set(op, HV::I(r as i64));
            }
            "arith.cmpf" => {
                let (a, b) = (self.float(o[0])?, self.float(o[1])?);
                let p: i64 = op
                    .attr("predicate")
                    .and_then(|s| s.split(' ').next()?.parse().ok())
                    .ok_or("bad cmpf")?;
                let uno = a.is_nan() || b.is_nan();
                let r = match p {
                    0 => false,
                    1 => !uno && a == b,
                    2 => !uno && a > b,
                    3 => !uno && a >= b,
                    4 => !uno && a < b,
                    5 => !uno && a <= b,
                    6 => !uno && a != b,
                    7 => !uno,
                    8 => uno || a == b,
                    9 => uno || a > b,
                    10 => uno || a >= b,
                    11 => uno || a < b,
                    12 => uno || a <= b,
                    13 => uno || a != b,
                    14 => uno,
                    _ => true,
                };
                self.set(op, HV::I(r as i64));
            }
            "arith.bitcast" => {
                let (from, to) = (self.ty(o[0]).to_string(), self.ty(op.results[0]).to_string());
                let v = match (from.as_str(), to.as_str()) {
                    ("f64", "i64") => HV::I(self.float(o[0])?.to_bits() as i64),
                    ("f32", "i32") => HV::I((self.float(o[0])? as f32).to_bits() as i32 as i64),
                    ("i64", "f64") => HV::F(f64::from_bits(self.int(o[0])? as u64)),
                    ("i32", "f32") => HV::F(f32::from_bits(self.int(o[0])? as u32) as f64),
                    _ => return Err(format!("arith.bitcast from {from} to {to} is not supported in host code")),
                };
                self.set(op, v);
            }
            "arith.select" => {
                let c = self.int(o[0])?;
                let v = if c & 1 != 0 { self.get(o[1])? } else { self.get(o[2])? };
                self.set(op, v);
            }
            "arith.index_cast" | "arith.index_castui" | "arith.extsi" | "arith.extui" | "arith.trunci" => {
                let a = self.int(o[0])?;
                let from = bits_of(self.ty(o[0]));
                let to = bits_of(self.ty(op.results[0]));
                let v = if n == "arith.extui" && from == 1 {
                    a & 1
                } else if n == "arith.extui" && from == 32 {
                    a as u32 as i64
                } else {
                    wrap(a, to)
                };
                self.set(op, HV::I(v));
            }
            "arith.sitofp" | "arith.uitofp" => {
                let a = self.int(o[0])?;
                let a = if n == "arith.uitofp" && bits_of(self.ty(o[0])) == 1 {
                    (a & 1) as f64
                } else {
                    a as f64
                };
                let r = if self.ty(op.results[0]) == "f32" { a as f32 as f64 } else { a };
                self.set(op, HV::F(r));
            }
            "arith.fptosi" => {
                let a = self.float(o[0])?;
                self.set(op, HV::I(wrap(a as i64, bits_of(self.ty(op.results[0])))));
            }
            "arith.extf" => {
                let a = self.float(o[0])?;
                self.set(op, HV::F(a));
            }
            "arith.truncf" => {
                let a = self.float(o[0])?;
                self.set(op, HV::F(a as f32 as f64));
            }
            "scf.if" => {
                let c = self.int(o[0])? & 1 != 0;
                let region = if c { &op.regions[0] } else { &op.regions[1] };
                let vals = match region.blocks.first() {
                    Some(b) => self.block(&b.ops)?.unwrap_or_default(),
                    None => vec![],
                };
                for (r, v) in op.results.iter().zip(vals) {
                    self.env.insert(*r, v);
                }
            }
            "scf.for" => {
                let (lb, ub, st) = (self.int(o[0])?, self.int(o[1])?, self.int(o[2])?);
                let mut carried: Vec<HV> = o[3..].iter().map(|v| self.get(*v)).collect::<Result<_, _>>()?;
                let blk = op.body(0);
                let mut i = lb;
                while i < ub {
                    if let Some(stop) = self.interrupt
                        && self.last_check.elapsed().as_millis() >= 20
                    {
                        self.last_check = Instant::now();
                        if stop() {
                            return Err(INTERRUPTED.to_string());
                        }
                    }
                    self.env.insert(blk.args[0], HV::I(i));
                    for (a, v) in blk.args[1..].iter().zip(&carried) {
                        self.env.insert(*a, *v);
                    }
                    carried = self.block(&blk.ops)?.unwrap_or_default();
                    i += st;
                }
                for (r, v) in op.results.iter().zip(carried) {
                    self.env.insert(*r, v);
                }
            }
            "memref.alloc" | "memref.alloca" => {
                let ty = self.ty(op.results[0]).to_string();
                let (dtype, rank) = parse_memref(&ty).ok_or_else(|| format!("unsupported memref type {ty}"))?;
                let inner = ty.trim_start_matches("memref<").trim_end_matches('>');
                let parts: Vec<&str> = inner.split('x').collect();
                let mut dyn_i = 0;
                let mut shape = vec![];
                for p in &parts[..rank] {
                    if *p == "?" {
                        shape.push(self.int(o[dyn_i])?.max(0) as usize);
                        dyn_i += 1;
                    } else {
                        shape.push(p.parse::<usize>().map_err(|_| format!("bad memref type {ty}"))?);
                    }
                }
                // Sizes computed by the program from its arguments: checked.
                let bytes = crate::array::bytes_of(dtype, &shape)?;
                let elems = bytes / dtype.size();
                if n == "memref.alloca" {
                    self.mems.push(Mem {
                        ptr: 0,
                        bytes: 0,
                        host: Some(vec![0; elems.max(1)]),
                        dtype,
                        shape,
                        freed: false,
                        shadow: None,
                        valid: vec![],
                        dirty: vec![],
                    });
                } else {
                    let bytes = bytes.max(1);
                    let ptr = self.gpu.alloc(bytes)?;
                    self.mems.push(Mem {
                        ptr,
                        bytes,
                        host: None,
                        dtype,
                        shape,
                        freed: false,
                        shadow: None,
                        valid: vec![],
                        dirty: vec![],
                    });
                }
                let id = self.mems.len() - 1;
                self.set(op, HV::Mem(id));
            }
            "memref.dealloc" => {
                let id = self.mem(o[0])?;
                let m = &mut self.mems[id];
                if m.host.is_none() && !m.freed {
                    if m.bytes > 0 {
                        self.gpu.release(m.ptr, m.bytes);
                    } else {
                        unsafe { result::free_sync(m.ptr) }.map_err(|e| format!("{e:?}"))?;
                    }
                    m.freed = true;
                }
            }
            "memref.dim" => {
                let id = self.mem(o[0])?;
                let d = self.int(o[1])? as usize;
                self.set(op, HV::I(self.mems[id].shape.get(d).copied().unwrap_or(0) as i64));
            }
            "memref.load" | "memref.store" | "memref.atomic_rmw" => {
                let (mi, idx_from) = if n == "memref.load" { (0, 1) } else { (1, 2) };
                let id = self.mem(o[mi])?;
                let mut flat = 0usize;
                for (k, v) in o[idx_from..].iter().enumerate() {
                    flat = flat * self.mems[id].shape[k] + self.int(*v)? as usize;
                }
                let cur = self.read_elem(id, flat)?;
                match n {
                    "memref.load" => self.set(op, cur),
                    "memref.store" => {
                        let v = self.get(o[0])?;
                        self.write_elem(id, flat, v)?;
                    }
                    _ => {
                        let v = self.get(o[0])?;
                        let kind: i64 = op.attr("kind").and_then(|s| s.split(' ').next()?.parse().ok()).unwrap_or(0);
                        let new = match (kind, cur, v) {
                            (0, HV::F(a), HV::F(b)) => HV::F(a + b),
                            (1, HV::I(a), HV::I(b)) => HV::I(a + b),
                            (4, HV::F(a), HV::F(b)) => HV::F(a.max(b)),
                            (6, HV::I(a), HV::I(b)) => HV::I(a.max(b)),
                            (8, HV::F(a), HV::F(b)) => HV::F(a.min(b)),
                            (10, HV::I(a), HV::I(b)) => HV::I(a.min(b)),
                            (12, HV::F(a), HV::F(b)) => HV::F(a * b),
                            (13, HV::I(a), HV::I(b)) => HV::I(a * b),
                            _ => return Err(format!("unsupported host atomic kind {kind}")),
                        };
                        self.write_elem(id, flat, new)?;
                        self.set(op, cur);
                    }
                }
            }
            "gpu.launch_func" => self.launch(op)?,
            "appy.gemm" => self.gemm(op)?,
            "appy.trsv" => self.trsv(op)?,
            "appy.print" => {
                let pieces = op
                    .attr("pieces")
                    .and_then(appy_ir::pyfmt::parse_pieces)
                    .ok_or("malformed appy.print")?;
                let kinds: Vec<appy_ir::pyfmt::Kind> = pieces
                    .iter()
                    .filter_map(|p| match p {
                        appy_ir::pyfmt::Piece::Value(k, _) => Some(*k),
                        _ => None,
                    })
                    .collect();
                let mut vals = vec![];
                for (k, v) in kinds.iter().zip(&op.operands) {
                    vals.push(appy_ir::pyfmt::from_bits(*k, self.int(*v)?));
                }
                use std::io::Write;
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(appy_ir::pyfmt::print_line(&pieces, &vals).as_bytes());
                let _ = out.flush();
            }
            "appy.potrf" => self.potrf(op)?,
            other => return Err(format!("the GPU runner cannot execute `{other}` in host code")),
        }
        Ok(())
    }

    fn read_elem(&mut self, id: usize, flat: usize) -> Result<HV, String> {
        let m = &self.mems[id];
        let dt = m.dtype;
        let raw: u64 = if let Some(h) = &m.host {
            h[flat]
        } else if let Some(sh) = m.shadow.as_ref().filter(|_| !self.on_device(id, flat)) {
            let mut w = [0u8; 8];
            w[..dt.size()].copy_from_slice(&sh[flat * dt.size()..(flat + 1) * dt.size()]);
            u64::from_le_bytes(w)
        } else {
            let mut b = vec![0u8; dt.size()];
            self.gpu.stream.synchronize().map_err(|e| format!("{e:?}"))?;
            unsafe { result::memcpy_dtoh_sync(&mut b, m.ptr + (flat * dt.size()) as u64) }.map_err(|e| format!("{e:?}"))?;
            let mut w = [0u8; 8];
            w[..b.len()].copy_from_slice(&b);
            u64::from_le_bytes(w)
        };
        Ok(match dt {
            DType::F32 => HV::F(f32::from_bits(raw as u32) as f64),
            DType::F64 => HV::F(f64::from_bits(raw)),
            DType::I32 => HV::I(raw as u32 as i32 as i64),
            DType::I64 => HV::I(raw as i64),
            DType::Bool => HV::I((raw & 1) as i64),
        })
    }

    fn write_elem(&mut self, id: usize, flat: usize, v: HV) -> Result<(), String> {
        let dt = self.mems[id].dtype;
        let raw: u64 = match (dt, v) {
            (DType::F32, HV::F(f)) => (f as f32).to_bits() as u64,
            (DType::F64, HV::F(f)) => f.to_bits(),
            (DType::I32, HV::I(i)) => i as i32 as u32 as u64,
            (DType::I64, HV::I(i)) => i as u64,
            (DType::Bool, HV::I(i)) => (i & 1) as u64,
            _ => return Err("store of a mismatched value".into()),
        };
        let on_device = self.on_device(id, flat);
        let m = &mut self.mems[id];
        if let Some(sh) = &mut m.shadow {
            sh[flat * dt.size()..(flat + 1) * dt.size()].copy_from_slice(&raw.to_le_bytes()[..dt.size()]);
        }
        if let Some(h) = &mut m.host {
            h[flat] = raw;
        } else if on_device {
            let b = &raw.to_le_bytes()[..dt.size()];
            self.gpu.stream.synchronize().map_err(|e| format!("{e:?}"))?;
            unsafe { result::memcpy_htod_sync(m.ptr + (flat * dt.size()) as u64, b) }.map_err(|e| format!("{e:?}"))?;
        }
        Ok(())
    }

    /// `appy.gemm`: `C = alpha * op(A) @ op(B) + beta * C` on row-major sub-matrices,
    /// with cuBLAS (column-major: computes `C^T = op(B)^T op(A)^T`).
    fn gemm(&mut self, op: &Op) -> Result<(), String> {
        use cudarc::cublas::{result as blas, sys as bsys};
        let o = &op.operands;
        if o.len() != 14 {
            return Err("malformed appy.gemm".into());
        }
        let (c, a, b) = (self.mem(o[0])?, self.mem(o[1])?, self.mem(o[2])?);
        let idx: Vec<i64> = o[3..9].iter().map(|v| self.int(*v)).collect::<Result<_, _>>()?;
        let (m, n, k) = (self.int(o[9])?, self.int(o[10])?, self.int(o[11])?);
        let (alpha, beta) = (self.float(o[12])?, self.float(o[13])?);
        let flag = |name: &str| op.attr(name).is_some_and(|v| v.trim().starts_with('1'));
        let (ta, tb) = (flag("trans_a"), flag("trans_b"));
        if m <= 0 || n <= 0 {
            return Ok(());
        }
        if flag("vec") {
            return self.gemv(c, a, b, &idx, m, k, alpha, beta, ta);
        }
        let bx = |r: i64, c: i64, rows: i64, cols: i64| IndexBox {
            lo: vec![r, c],
            hi: vec![r + rows, c + cols],
        };
        let cbox = bx(idx[0], idx[1], m, n);
        let abox = if ta { bx(idx[2], idx[3], k, m) } else { bx(idx[2], idx[3], m, k) };
        let bbox = if tb { bx(idx[4], idx[5], n, k) } else { bx(idx[4], idx[5], k, n) };
        self.library_operands("matrix product", &[(c, &cbox, "C"), (a, &abox, "A"), (b, &bbox, "B")], k > 0)?;
        let handle = self.blas_handle()?;
        let dt = self.mems[c].dtype;
        let es = dt.size() as u64;
        let ptr = |id: usize, r: i64, col: i64, mems: &[Mem]| -> (u64, i32) {
            let ld = mems[id].shape[1] as u64;
            (mems[id].ptr + (r as u64 * ld + col as u64) * es, ld.max(1) as i32)
        };
        let (pc, ldc) = ptr(c, idx[0], idx[1], &self.mems);
        let (pa, lda) = ptr(a, idx[2], idx[3], &self.mems);
        let (pb, ldb) = ptr(b, idx[4], idx[5], &self.mems);
        let op_of = |t: bool| {
            if t {
                bsys::cublasOperation_t::CUBLAS_OP_T
            } else {
                bsys::cublasOperation_t::CUBLAS_OP_N
            }
        };
        let (m, n, k) = (m as i32, n as i32, k as i32);
        let r = unsafe {
            match dt {
                DType::F32 => {
                    let (al, be) = (alpha as f32, beta as f32);
                    blas::sgemm(
                        handle,
                        op_of(tb),
                        op_of(ta),
                        n,
                        m,
                        k,
                        &al,
                        pb as *const f32,
                        ldb,
                        pa as *const f32,
                        lda,
                        &be,
                        pc as *mut f32,
                        ldc,
                    )
                }
                DType::F64 => blas::dgemm(
                    handle,
                    op_of(tb),
                    op_of(ta),
                    n,
                    m,
                    k,
                    &alpha,
                    pb as *const f64,
                    ldb,
                    pa as *const f64,
                    lda,
                    &beta,
                    pc as *mut f64,
                    ldc,
                ),
                other => return Err(format!("matrix products of {other:?} are not supported")),
            }
        };
        r.map_err(|e| format!("cuBLAS gemm failed: {e:?}"))?;
        self.timing.launches += 1;
        Ok(())
    }

    /// `y = alpha * op(A) @ x + beta * y` (`appy.gemm` with `vec`): y and x vectors.
    #[allow(clippy::too_many_arguments)]
    fn gemv(&mut self, y: usize, a: usize, x: usize, idx: &[i64], m: i64, k: i64, alpha: f64, beta: f64, ta: bool) -> Result<(), String> {
        use cudarc::cublas::{result as blas, sys as bsys};
        let ybox = IndexBox {
            lo: vec![idx[0]],
            hi: vec![idx[0] + m],
        };
        let xbox = IndexBox {
            lo: vec![idx[4]],
            hi: vec![idx[4] + k],
        };
        let (rows, cols) = if ta { (k, m) } else { (m, k) };
        let abox = IndexBox {
            lo: vec![idx[2], idx[3]],
            hi: vec![idx[2] + rows, idx[3] + cols],
        };
        self.library_operands("matrix-vector product", &[(y, &ybox, "y"), (a, &abox, "A"), (x, &xbox, "x")], k > 0)?;
        let handle = self.blas_handle()?;
        let dt = self.mems[y].dtype;
        let es = dt.size() as u64;
        let ld = self.mems[a].shape[1].max(1) as i32;
        let pa = self.mems[a].ptr + (idx[2] as u64 * ld as u64 + idx[3] as u64) * es;
        let px = self.mems[x].ptr + idx[4] as u64 * es;
        let py = self.mems[y].ptr + idx[0] as u64 * es;
        // Row-major A (rows x cols, ld) is column-major A^T: y = A x is gemv(T), y = A^T x
        // (A stored k x m) is gemv(N).
        let (op_, cm, cn) = if ta {
            (bsys::cublasOperation_t::CUBLAS_OP_N, cols as i32, rows as i32)
        } else {
            (bsys::cublasOperation_t::CUBLAS_OP_T, cols as i32, rows as i32)
        };
        let r = unsafe {
            match dt {
                DType::F32 => {
                    let (al, be) = (alpha as f32, beta as f32);
                    blas::sgemv(
                        handle,
                        op_,
                        cm,
                        cn,
                        &al,
                        pa as *const f32,
                        ld,
                        px as *const f32,
                        1,
                        &be,
                        py as *mut f32,
                        1,
                    )
                }
                DType::F64 => blas::dgemv(
                    handle,
                    op_,
                    cm,
                    cn,
                    &alpha,
                    pa as *const f64,
                    ld,
                    px as *const f64,
                    1,
                    &beta,
                    py as *mut f64,
                    1,
                ),
                other => return Err(format!("matrix-vector products of {other:?} are not supported")),
            }
        };
        r.map_err(|e| format!("cuBLAS gemv failed: {e:?}"))?;
        self.timing.launches += 1;
        Ok(())
    }

    /// The operands of a library call (output first): each box must lie inside its
    /// array; the boxes are made current on the device (the inputs only when `read`),
    /// and the output's box is marked written.
    fn library_operands(&mut self, what: &str, ops: &[(usize, &IndexBox, &str)], read: bool) -> Result<(), String> {
        if self.tiled {
            return Err(format!(
                "{what} (a library call) cannot run under a device memory budget (APPY_DEVICE_BUDGET)"
            ));
        }
        for &(id, bx, name) in ops {
            let sh = &self.mems[id].shape;
            if sh.len() != bx.lo.len() || bx.lo.iter().any(|v| *v < 0) || bx.hi.iter().zip(sh).any(|(h, s)| *h > *s as i64) {
                return Err(format!("{what}: the slice of {name} is out of the array's bounds {sh:?}"));
            }
        }
        let [(out, obox, _), ins @ ..] = ops else { return Ok(()) };
        if read {
            for &(id, bx, _) in ins {
                self.make_valid(id, bx, None)?;
            }
        }
        self.make_valid(*out, obox, Some(obox))
    }

    /// The operands of a solver op (`what` it computes, with `lib`): its `nmem` arrays,
    /// n, and the box of the n x n matrix; `None` when n ≤ 0 (nothing to do).
    fn solver_operands(&self, op: &Op, nmem: usize, what: &str, lib: &str) -> Result<Option<(Vec<usize>, i32, IndexBox)>, String> {
        let o = &op.operands;
        if o.len() != nmem + 1 {
            return Err(format!("malformed {}", op.name));
        }
        let mems = o[..nmem].iter().map(|v| self.mem(*v)).collect::<Result<Vec<_>, _>>()?;
        let n = self.int(o[nmem])?;
        if n <= 0 {
            return Ok(None);
        }
        let n32 = i32::try_from(n).map_err(|_| format!("{what}: n = {n} is too large for {lib}"))?;
        let square = IndexBox {
            lo: vec![0, 0],
            hi: vec![n, n],
        };
        Ok(Some((mems, n32, square)))
    }

    /// `appy.trsv(L, x, b, n)`: `x[:n] = b[:n]`, then `x = L⁻¹ x` with the lower triangle
    /// of the row-major `L[:n, :n]` (cuBLAS trsv on the column-major `Lᵀ`, upper,
    /// transposed).
    fn trsv(&mut self, op: &Op) -> Result<(), String> {
        use cudarc::cublas::sys as bsys;
        let Some((m, n32, lbox)) = self.solver_operands(op, 3, "triangular solve", "cuBLAS")? else {
            return Ok(());
        };
        let (l, x, b, n) = (m[0], m[1], m[2], n32 as i64);
        let vbox = IndexBox { lo: vec![0], hi: vec![n] };
        if b == x {
            self.library_operands("triangular solve", &[(x, &vbox, "x"), (l, &lbox, "L")], true)?;
        } else {
            self.library_operands("triangular solve", &[(x, &vbox, "x"), (l, &lbox, "L"), (b, &vbox, "b")], true)?;
        }
        let handle = self.blas_handle()?;
        let dt = self.mems[x].dtype;
        if self.mems[l].dtype != dt || self.mems[b].dtype != dt {
            return Err("triangular solve: L, x and b must have the same element type".into());
        }
        let bytes = n as usize * dt.size();
        let (pl, px, pb) = (self.mems[l].ptr, self.mems[x].ptr, self.mems[b].ptr);
        if b != x {
            unsafe { result::memcpy_dtod_async(px, pb, bytes, self.gpu.stream.cu_stream()) }
                .map_err(|e| format!("device copy failed: {e:?}"))?;
        }
        let ld = self.mems[l].shape[1].max(1) as i32;
        let (up, tr, nu) = (
            bsys::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
            bsys::cublasOperation_t::CUBLAS_OP_T,
            bsys::cublasDiagType_t::CUBLAS_DIAG_NON_UNIT,
        );
        let st = unsafe {
            match dt {
                DType::F64 => bsys::cublasDtrsv_v2(handle, up, tr, nu, n32, pl as *const f64, ld, px as *mut f64, 1),
                DType::F32 => bsys::cublasStrsv_v2(handle, up, tr, nu, n32, pl as *const f32, ld, px as *mut f32, 1),
                other => return Err(format!("triangular solves of {other:?} are not supported")),
            }
        };
        if st != bsys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(format!("cuBLAS trsv failed: {st:?}"));
        }
        self.timing.launches += 1;
        Ok(())
    }

    /// `appy.potrf(A, n)`: the lower triangle of the row-major `A[:n, :n]` becomes its
    /// Cholesky factor, with cuSOLVER potrf. The row-major lower triangle is the
    /// column-major upper one, but cuSOLVER's lower factorisation is 2.5x faster (measured
    /// on H200 for n = 900, see BENCHMARKS.md), so the block is transposed into a
    /// column-major copy (cuBLAS geam), factorised there (lower), and transposed back:
    /// the upper triangle goes back as it was. When a leading minor is not positive
    /// definite, the sequential loop would produce NaN from that column on; so does this
    /// (cuSOLVER stops there).
    fn potrf(&mut self, op: &Op) -> Result<(), String> {
        let Some((m, n32, abox)) = self.solver_operands(op, 1, "Cholesky factorisation", "cuSOLVER")? else {
            return Ok(());
        };
        let a = m[0];
        self.library_operands("Cholesky factorisation", &[(a, &abox, "A")], true)?;
        let blas = self.blas_handle()?;
        let h = self.solver_handle()?;
        let dt = self.mems[a].dtype;
        if !matches!(dt, DType::F32 | DType::F64) {
            return Err(format!("Cholesky factorisations of {dt:?} are not supported"));
        }
        let es = dt.size();
        let ld = self.mems[a].shape[1].max(1);
        let pa = self.mems[a].ptr;
        let n = n32 as usize;
        // Scratch: the column-major copy, then cuSOLVER's workspace and its info word.
        let t_bytes = n * n * es;
        let t = self.gpu.alloc(t_bytes)?;
        let mut bufs = vec![(t, t_bytes)];
        let r = self.potrf_on_copy(blas, h, dt, pa, ld, t, n32, &mut bufs);
        for (p, b) in bufs {
            self.gpu.release(p, b);
        }
        let info = r?;
        self.timing.launches += 1;
        if info < 0 {
            return Err(format!("cuSOLVER potrf: argument {} is invalid", -info));
        }
        if info > 0 {
            // Column j0 has a pivot ≤ 0 (or NaN): the loop's sqrt gives NaN there, and every
            // later entry of the lower triangle depends on it.
            let j0 = info as usize - 1;
            tracing::warn!(
                "Cholesky factorisation: the leading minor of order {info} is not positive definite; entries from column {j0} on are NaN"
            );
            let rows = n - j0;
            let mut host = vec![0u8; rows * ld * es];
            let base = pa + (j0 * ld * es) as u64;
            unsafe { result::memcpy_dtoh_sync(&mut host, base) }.map_err(|e| format!("{e:?}"))?;
            for r in j0..n {
                for c in j0..=r {
                    let at = ((r - j0) * ld + c) * es;
                    match dt {
                        DType::F64 => host[at..at + 8].copy_from_slice(&f64::NAN.to_le_bytes()),
                        _ => host[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes()),
                    }
                }
            }
            unsafe { result::memcpy_htod_sync(base, &host) }.map_err(|e| format!("{e:?}"))?;
        }
        Ok(())
    }

    /// Transposes row-major `A[:n, :n]` (leading dimension `ld`) into the column-major
    /// buffer `t`, factorises it (cuSOLVER, lower), transposes it back; returns potrf's
    /// info. Scratch buffers it allocates are pushed to `bufs`.
    #[allow(clippy::too_many_arguments)]
    fn potrf_on_copy(
        &self,
        blas: cudarc::cublas::sys::cublasHandle_t,
        h: cudarc::cusolver::sys::cusolverDnHandle_t,
        dt: DType,
        pa: u64,
        ld: usize,
        t: u64,
        n: i32,
        bufs: &mut Vec<(u64, usize)>,
    ) -> Result<i32, String> {
        use cudarc::cublas::sys as bsys;
        use cudarc::cusolver::sys as ssys;
        let (tr, nt) = (bsys::cublasOperation_t::CUBLAS_OP_T, bsys::cublasOperation_t::CUBLAS_OP_N);
        let ld = ld as i32;
        // C (column-major, ldc) = op(src)ᵀ: a transpose between the two layouts. With beta
        // = 0, geam does not read B (checked on the GPU: inf and -0.0 come back unchanged).
        let geam = |src: u64, lds: i32, dst: u64, ldd: i32| -> Result<(), String> {
            let st = unsafe {
                match dt {
                    DType::F64 => {
                        let (one, zero) = (1.0f64, 0.0f64);
                        bsys::cublasDgeam(
                            blas,
                            tr,
                            nt,
                            n,
                            n,
                            &one,
                            src as *const f64,
                            lds,
                            &zero,
                            src as *const f64,
                            lds,
                            dst as *mut f64,
                            ldd,
                        )
                    }
                    _ => {
                        let (one, zero) = (1.0f32, 0.0f32);
                        bsys::cublasSgeam(
                            blas,
                            tr,
                            nt,
                            n,
                            n,
                            &one,
                            src as *const f32,
                            lds,
                            &zero,
                            src as *const f32,
                            lds,
                            dst as *mut f32,
                            ldd,
                        )
                    }
                }
            };
            if st == bsys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                Ok(())
            } else {
                Err(format!("cuBLAS geam (transpose) failed: {st:?}"))
            }
        };
        let ok = |st: ssys::cusolverStatus_t, what: &str| {
            if st == ssys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
                Ok(())
            } else {
                Err(format!("cuSOLVER {what} failed: {st:?}"))
            }
        };
        geam(pa, ld, t, n)?;
        let lo = ssys::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER;
        let mut lwork: i32 = 0;
        unsafe {
            match dt {
                DType::F64 => ok(
                    ssys::cusolverDnDpotrf_bufferSize(h, lo, n, t as *mut f64, n, &mut lwork),
                    "potrf_bufferSize",
                )?,
                _ => ok(
                    ssys::cusolverDnSpotrf_bufferSize(h, lo, n, t as *mut f32, n, &mut lwork),
                    "potrf_bufferSize",
                )?,
            }
        }
        let ws_bytes = (lwork.max(1) as usize) * dt.size();
        let ws = self.gpu.alloc(ws_bytes)?;
        bufs.push((ws, ws_bytes));
        let info = self.gpu.alloc(4)?;
        bufs.push((info, 4));
        let st = unsafe {
            match dt {
                DType::F64 => ssys::cusolverDnDpotrf(h, lo, n, t as *mut f64, n, ws as *mut f64, lwork, info as *mut i32),
                _ => ssys::cusolverDnSpotrf(h, lo, n, t as *mut f32, n, ws as *mut f32, lwork, info as *mut i32),
            }
        };
        ok(st, "potrf")?;
        geam(t, n, pa, ld)?;
        let mut dev_info = [0u8; 4];
        self.gpu.stream.synchronize().map_err(|e| format!("{e:?}"))?;
        unsafe { result::memcpy_dtoh_sync(&mut dev_info, info) }.map_err(|e| format!("{e:?}"))?;
        Ok(i32::from_le_bytes(dev_info))
    }

    fn solver_handle(&self) -> Result<cudarc::cusolver::sys::cusolverDnHandle_t, String> {
        use cudarc::cusolver::sys as ssys;
        self.gpu
            .solver
            .get_or_init(|| unsafe {
                if !ssys::is_culib_present() {
                    return Err("cuSOLVER is not available (libcusolver could not be loaded)".to_string());
                }
                let mut h = std::ptr::null_mut();
                let st = ssys::cusolverDnCreate(&mut h);
                if st != ssys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
                    return Err(format!("cuSOLVER is not available: {st:?}"));
                }
                let st = ssys::cusolverDnSetStream(h, self.gpu.stream.cu_stream() as ssys::cudaStream_t);
                if st != ssys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
                    return Err(format!("cuSOLVER: {st:?}"));
                }
                Ok(h)
            })
            .clone()
    }

    fn blas_handle(&self) -> Result<cudarc::cublas::sys::cublasHandle_t, String> {
        use cudarc::cublas::{result as blas, sys as bsys};
        self.gpu
            .blas
            .get_or_init(|| {
                let h = blas::create_handle().map_err(|e| format!("cuBLAS is not available: {e:?}"))?;
                unsafe { blas::set_stream(h, self.gpu.stream.cu_stream() as bsys::cudaStream_t) }.map_err(|e| format!("cuBLAS: {e:?}"))?;
                Ok(h)
            })
            .clone()
    }

    fn launch(&mut self, op: &Op) -> Result<(), String> {
        let kernel = op.attr("kernel").ok_or("launch without kernel")?;
        let kname = kernel.rsplit("::@").next().unwrap_or(kernel).trim_start_matches('@').to_string();
        let (func, params) = self.loaded.funcs.get(&kname).ok_or_else(|| format!("kernel {kname} not loaded"))?;
        let o = &op.operands;
        let grid = (self.int(o[0])?, self.int(o[1])?, self.int(o[2])?);
        let block = (self.int(o[3])?, self.int(o[4])?, self.int(o[5])?);
        let _ = self.mvl;
        let args = &o[6..];
        if args.len() != params.len() {
            return Err(format!("kernel {kname}: {} arguments for {} parameters", args.len(), params.len()));
        }
        if self.tiled {
            return self.launch_tiled(&kname, func, params, args, grid.0 * grid.1 * grid.2, block);
        }
        // Move the parts of the arguments that this launch accesses (seed 002 §5);
        // arrays already on the device (caller's buffers) need no analysis.
        let mut host_copies = false;
        for v in args {
            if let HV::Mem(id) = self.get(*v)? {
                host_copies |= self.mems[id].shadow.is_some();
            }
        }
        if !host_copies {
        } else if let Some(kop) = find_kernel(self.m, &kname) {
            let largs = self.launch_args(args, params)?;
            let acc = crate::regions::analyse(self.m, kop, &largs, grid.0 * grid.1 * grid.2, block.0 * block.1 * block.2);
            for (p, v) in args.iter().enumerate() {
                if let HV::Mem(id) = self.get(*v)? {
                    if self.mems[id].shadow.is_none() {
                        continue;
                    }
                    let r = acc.reads.get(&p);
                    let w = acc.writes.get(&p);
                    let need = match (r, w) {
                        (Some(r), Some(w)) => r.hull(w),
                        (Some(r), None) => r.clone(),
                        (None, Some(w)) => w.clone(),
                        (None, None) => continue,
                    };
                    self.make_valid(id, &need, w)?;
                }
            }
        } else {
            // No IR to analyse: move whole arrays.
            for v in args {
                if let HV::Mem(id) = self.get(*v)? {
                    let whole = IndexBox::whole(&self.mems[id].shape);
                    self.make_valid(id, &whole, Some(&whole))?;
                }
            }
        }
        let mut cells = self.marshal(args, params, &HashMap::new(), None)?;
        self.raw_launch(&kname, func, &mut cells, grid, block)
    }

    /// Kernel parameters, one 8-byte cell each (memrefs expand to descriptors).
    /// `ptrs` replaces the (allocated, aligned) pointers of some parameters (tiles);
    /// `offset` replaces the last parameter (the block offset).
    fn marshal(
        &self,
        args: &[Value],
        params: &[String],
        ptrs: &HashMap<usize, (u64, u64)>,
        offset: Option<i64>,
    ) -> Result<Vec<u64>, String> {
        let mut cells: Vec<u64> = vec![];
        for (p, (v, ty)) in args.iter().zip(params).enumerate() {
            if let Some((_, rank)) = parse_memref(ty) {
                let id = self.mem(*v)?;
                let m = &self.mems[id];
                if m.host.is_some() {
                    return Err("a host scalar slot cannot be passed to a kernel".into());
                }
                let (alloc, aligned) = ptrs.get(&p).copied().unwrap_or((m.ptr, m.ptr));
                cells.push(alloc);
                cells.push(aligned);
                cells.push(0);
                for d in 0..rank {
                    cells.push(*m.shape.get(d).unwrap_or(&1) as u64);
                }
                let mut stride = 1u64;
                let mut strides = vec![0u64; rank];
                for d in (0..rank).rev() {
                    strides[d] = stride;
                    stride *= *m.shape.get(d).unwrap_or(&1) as u64;
                }
                cells.extend(strides);
            } else if p + 1 == args.len() && offset.is_some() {
                cells.push(offset.unwrap_or(0) as u64);
            } else {
                let raw = match (ty.as_str(), self.get(*v)?) {
                    ("f32", HV::F(f)) => (f as f32).to_bits() as u64,
                    ("f64", HV::F(f)) => f.to_bits(),
                    ("i32", HV::I(i)) => i as i32 as u32 as u64,
                    (_, HV::I(i)) => i as u64,
                    (t, _) => return Err(format!("cannot pass a value as kernel parameter of type {t}")),
                };
                cells.push(raw);
            }
        }
        Ok(cells)
    }

    fn raw_launch(
        &mut self,
        kname: &str,
        func: &CudaFunction,
        cells: &mut [u64],
        grid: (i64, i64, i64),
        block: (i64, i64, i64),
    ) -> Result<(), String> {
        let mut ptrs: Vec<*mut std::ffi::c_void> = cells.iter_mut().map(|c| c as *mut u64 as *mut std::ffi::c_void).collect();
        let t0 = Instant::now();
        unsafe {
            result::launch_kernel(
                func.cu_function(),
                (grid.0 as u32, grid.1 as u32, grid.2 as u32),
                (block.0 as u32, block.1 as u32, block.2 as u32),
                0,
                self.gpu.stream.cu_stream(),
                &mut ptrs,
            )
        }
        .map_err(|e| format!("kernel {kname} failed to launch: {e:?}"))?;
        if appy_ir::config::sync_launches() {
            self.gpu.stream.synchronize().map_err(|e| format!("kernel {kname} failed: {e:?}"))?;
            self.timing.kernel_s += t0.elapsed().as_secs_f64();
        }
        self.timing.launches += 1;
        Ok(())
    }

    /// A launch in tiles of blocks: for each tile, the flat range of every argument
    /// array it accesses goes to a temporary device buffer (the descriptor's aligned
    /// pointer is shifted so that global indices land in it), the tile runs, and what it
    /// wrote comes back to the host copy. Tiles shrink until their data fits the budget.
    fn launch_tiled(
        &mut self,
        kname: &str,
        func: &CudaFunction,
        params: &[String],
        args: &[Value],
        total: i64,
        block: (i64, i64, i64),
    ) -> Result<(), String> {
        let kop = find_kernel(self.m, kname).ok_or_else(|| format!("kernel {kname}: no IR to tile"))?;
        let nthreads = block.0 * block.1 * block.2;
        let largs = self.launch_args(args, params)?;
        // The flat element range [f0, f1) of each tiled array parameter for blocks
        // [off, off + n), and whether the tile writes it.
        let ranges = |this: &Self, off: i64, n: i64| -> Vec<(usize, usize, usize, bool)> {
            let mut la = largs.clone();
            if let Some(last) = la.last_mut() {
                *last = LaunchArg::Int(off);
            }
            let acc = crate::regions::analyse(this.m, kop, &la, n, nthreads);
            let mut out = vec![];
            for (p, v) in args.iter().enumerate() {
                let Ok(HV::Mem(id)) = this.get(*v) else { continue };
                let m = &this.mems[id];
                if m.ptr != 0 || m.shadow.is_none() {
                    continue;
                }
                let need = match (acc.reads.get(&p), acc.writes.get(&p)) {
                    (Some(r), Some(w)) => r.hull(w),
                    (Some(r), None) => r.clone(),
                    (None, Some(w)) => w.clone(),
                    (None, None) => continue,
                };
                if need.is_empty() {
                    continue;
                }
                let runs = need.runs(&m.shape);
                let f0 = runs.first().map(|r| r.0).unwrap_or(0);
                let f1 = runs.last().map(|r| r.0 + r.1).unwrap_or(0);
                out.push((p, f0, f1, acc.writes.contains_key(&p)));
            }
            out
        };
        let bytes = |this: &Self, r: &[(usize, usize, usize, bool)]| -> usize {
            r.iter()
                .map(|(p, f0, f1, _)| (f1 - f0) * this.mems[this.mem(args[*p]).unwrap_or(0)].dtype.size())
                .sum()
        };
        let mut tile = total.max(1);
        while tile > 1 && bytes(self, &ranges(self, 0, tile)) > self.budget {
            tile = (tile + 1) / 2;
        }
        if tile == 1 && total > 1 && bytes(self, &ranges(self, 0, 1)) > self.budget {
            // Even one block needs more than the budget (its accesses could not be
            // bounded, e.g. indirect ones): smaller tiles would only repeat the same
            // transfers, so run the launch whole.
            tracing::warn!("kernel {kname}: one block's data exceeds the device budget; not tiling");
            tile = total;
        }
        let mut off = 0;
        while off < total {
            let n = tile.min(total - off);
            let rs = ranges(self, off, n);
            let mut ptrs = HashMap::new();
            let mut bufs = vec![];
            for (p, f0, f1, w) in &rs {
                let id = self.mem(args[*p])?;
                let es = self.mems[id].dtype.size();
                let nbytes = (f1 - f0) * es;
                let buf = unsafe { result::malloc_sync(nbytes.max(1)) }
                    .map_err(|e| format!("device out of memory ({nbytes} bytes for a tile): {e:?}"))?;
                let src = &self.mems[id].shadow.as_ref().expect("tiled arrays have a host copy")[f0 * es..f1 * es];
                unsafe { result::memcpy_htod_sync(buf, src) }.map_err(|e| format!("copy to device failed: {e:?}"))?;
                self.timing.htod_bytes += nbytes;
                ptrs.insert(*p, (buf, buf.wrapping_sub((f0 * es) as u64)));
                bufs.push((id, buf, *f0, *f1, *w));
            }
            let mut cells = self.marshal(args, params, &ptrs, Some(off))?;
            self.raw_launch(kname, func, &mut cells, (n, 1, 1), block)?;
            self.gpu.stream.synchronize().map_err(|e| format!("kernel {kname} failed: {e:?}"))?;
            for (id, buf, f0, f1, w) in bufs {
                let es = self.mems[id].dtype.size();
                if w {
                    let dst = &mut self.mems[id].shadow.as_mut().expect("tiled arrays have a host copy")[f0 * es..f1 * es];
                    unsafe { result::memcpy_dtoh_sync(dst, buf) }.map_err(|e| format!("copy from device failed: {e:?}"))?;
                    self.timing.dtoh_bytes += (f1 - f0) * es;
                }
                unsafe { result::free_sync(buf) }.map_err(|e| format!("{e:?}"))?;
            }
            self.timing.tiles += 1;
            off += n;
        }
        Ok(())
    }
}

/// A bundle's host function.
fn host_function(b: &Bundle) -> Result<&Op, String> {
    b.host
        .body()
        .iter()
        .find(|o| o.name == "func.func")
        .ok_or_else(|| "bundle has no host function".to_string())
}
