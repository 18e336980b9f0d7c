//! The CPU executor: runs a function lowered to the LLVM dialect with MLIR's
//! execution engine, passing host arrays as memref descriptors.

use crate::array::{HostArray, HostValue};
use appy_compiler::{Compiler, Options};
use appy_ir::diag::{DResult, Diagnostic, SourceFile};
use appy_ir::types::{ArgType, DType};
use melior::ExecutionEngine;

/// An 8-byte aligned copy of an array's bytes (memrefs expect natural alignment).
struct Aligned {
    words: Vec<u64>,
    bytes: usize,
}

impl Aligned {
    fn new(data: &[u8]) -> Self {
        let mut words = vec![0u64; data.len().div_ceil(8).max(1)];
        let bytes = data.len();
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), words.as_mut_ptr() as *mut u8, bytes) };
        Aligned { words, bytes }
    }
    fn ptr(&mut self) -> *mut u8 {
        self.words.as_mut_ptr() as *mut u8
    }
    fn copy_to(&self, out: &mut [u8]) {
        unsafe { std::ptr::copy_nonoverlapping(self.words.as_ptr() as *const u8, out.as_mut_ptr(), self.bytes) };
    }
}

/// A function compiled for the CPU, specialised for one signature.
pub struct CpuFunction {
    engine: ExecutionEngine,
    name: String,
    results: Vec<ArgType>,
    args: Vec<ArgType>,
    /// The packed entry point (`void(void **)`), looked up once.
    packed: unsafe extern "C" fn(*mut *mut ()),
    /// The function prints: it takes [`print_callback`] as a last parameter
    /// (`appy-cpu-print`).
    print_cb: bool,
}

/// The print callback compiled code calls for `print(...)` (see the pass
/// `appy-cpu-print`): the `pieces` attribute's text and the values, as two 1-D memref
/// descriptors (allocated pointer, aligned pointer, offset, size, stride).
///
/// # Safety
///
/// The descriptors must describe readable memory: `fsize` bytes at `fp + foff` and
/// `vsize` values at `vp + voff`, as compiled code passes them.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn print_callback(
    _fa: *mut u8,
    fp: *mut u8,
    foff: i64,
    fsize: i64,
    _fstride: i64,
    _va: *mut i64,
    vp: *mut i64,
    voff: i64,
    vsize: i64,
    _vstride: i64,
) {
    use std::io::Write;
    // SAFETY: compiled code passes a constant byte string and a buffer of `vsize` values.
    let (text, bits) = unsafe {
        (
            std::slice::from_raw_parts(fp.add(foff as usize), fsize as usize),
            std::slice::from_raw_parts(vp.add(voff as usize), vsize as usize),
        )
    };
    let Some(pieces) = std::str::from_utf8(text).ok().and_then(appy_ir::pyfmt::parse_pieces) else {
        return;
    };
    let kinds = pieces.iter().filter_map(|p| match p {
        appy_ir::pyfmt::Piece::Value(k, _) => Some(*k),
        _ => None,
    });
    let vals: Vec<_> = kinds.zip(bits).map(|(k, b)| appy_ir::pyfmt::from_bits(k, *b)).collect();
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(appy_ir::pyfmt::print_line(&pieces, &vals).as_bytes());
    let _ = out.flush();
}

/// The packed-argument slot of the print callback.
static PRINT_CALLBACK: unsafe extern "C" fn(*mut u8, *mut u8, i64, i64, i64, *mut i64, *mut i64, i64, i64, i64) = print_callback;

// SAFETY: after construction the execution engine is only read: symbol lookups (thread
// safe in LLVM's ORC JIT) and calls of the compiled code, which keeps no state between
// calls (every allocation is the call's own).
unsafe impl Send for CpuFunction {}
unsafe impl Sync for CpuFunction {}

/// An argument of [`CpuFunction::call_raw`].
#[derive(Clone, Copy, Debug)]
pub enum RawArg<'a> {
    /// A C-contiguous array in the caller's memory, aligned for its element type, used
    /// in place: the function reads and writes it directly.
    Array {
        /// The first element.
        ptr: *mut u8,
        /// The shape.
        shape: &'a [usize],
    },
    /// A scalar, as the bits of its value ([`scalar_bits`]).
    Scalar(u64),
}

/// A result of [`CpuFunction::call_raw`].
pub enum RawResult {
    /// A scalar.
    Scalar(HostValue),
    /// An array that is argument `k` (the function returned one of its arguments).
    Alias(usize),
    /// A new array, allocated by the compiled code (freed when dropped).
    Array(ResultArray),
}

/// An array allocated and returned by compiled CPU code.
pub struct ResultArray {
    allocated: *mut u8,
    data: *const u8,
    /// The element type.
    pub dtype: DType,
    /// The shape (C order, contiguous).
    pub shape: Vec<usize>,
}

// SAFETY: the buffer is owned exclusively by this value.
unsafe impl Send for ResultArray {}

impl ResultArray {
    /// The elements' bytes.
    pub fn bytes(&self) -> &[u8] {
        // Empty too when the shape's size overflows (the caller checks the length).
        let n = crate::array::checked_bytes(self.dtype, &self.shape).unwrap_or(0);
        if n == 0 {
            return &[];
        }
        // SAFETY: the compiled code returned a buffer of this shape.
        unsafe { std::slice::from_raw_parts(self.data, n) }
    }
}

unsafe extern "C" {
    fn free(p: *mut std::ffi::c_void);
}

impl Drop for ResultArray {
    fn drop(&mut self) {
        if !self.allocated.is_null() {
            // SAFETY: `memref.alloc` lowers to `malloc` in the CPU pipeline.
            unsafe { free(self.allocated as *mut std::ffi::c_void) };
        }
    }
}

/// The bits a scalar is passed as (`None` for arrays).
pub fn scalar_bits(v: &HostValue) -> Option<u64> {
    Some(match v {
        HostValue::Int(i, DType::I32, _) => (*i as i32) as u32 as u64,
        HostValue::Int(i, _, _) => *i as u64,
        HostValue::Float(f, DType::F32, _) => (*f as f32).to_bits() as u64,
        HostValue::Float(f, _, _) => f.to_bits(),
        HostValue::Bool(b) => *b as u64,
        HostValue::Array(_) | HostValue::Device { .. } => return None,
    })
}

/// Compiles `func` for the CPU and runs it on `args`; array arguments are updated in
/// place, and the return values are returned.
pub fn run(compiler: &Compiler, file: &SourceFile, func: &str, args: &mut [HostValue], opts: &Options) -> DResult<Vec<HostValue>> {
    let sig: Vec<ArgType> = args.iter().map(|a| a.arg_type()).collect();
    CpuFunction::compile(compiler, file, func, &sig, opts)?.call(args)
}

impl CpuFunction {
    /// Compiles `func` for argument types `sig` (LLVM through MLIR's execution engine).
    pub fn compile(compiler: &Compiler, file: &SourceFile, func: &str, sig: &[ArgType], opts: &Options) -> DResult<CpuFunction> {
        Ok(Self::compile_with_payload(compiler, file, func, sig, opts)?.0)
    }

    /// Compiles, also returning the cache payload (the LLVM-dialect module as text and
    /// the function's metadata).
    pub fn compile_with_payload(
        compiler: &Compiler,
        file: &SourceFile,
        func: &str,
        sig: &[ArgType],
        opts: &Options,
    ) -> DResult<(CpuFunction, serde_json::Value)> {
        let (llvm, lowered) = compiler.compile_cpu(file, func, sig, opts)?;
        let text = llvm.to_generic();
        let payload = serde_json::json!({ "name": lowered.name, "results": lowered.results, "llvm": text });
        let f = Self::from_llvm(compiler, &text, &lowered.name, lowered.results, sig).map_err(|e| appy_compiler::mlir_error(file, &e))?;
        Ok((f, payload))
    }

    /// Rebuilds a function from a cache payload; `None` if the payload is invalid.
    pub fn from_cached(compiler: &Compiler, v: &serde_json::Value, sig: &[ArgType]) -> Option<CpuFunction> {
        let name = v.get("name")?.as_str()?;
        let results: Vec<ArgType> = serde_json::from_value(v.get("results")?.clone()).ok()?;
        let text = v.get("llvm")?.as_str()?;
        Self::from_llvm(compiler, text, name, results, sig).ok()
    }

    fn from_llvm(compiler: &Compiler, text: &str, name: &str, results: Vec<ArgType>, sig: &[ArgType]) -> Result<CpuFunction, String> {
        let module = compiler.ctx.parse(text)?;
        // No perf jitdump directory left behind (see `jitdump`).
        // LLVM code generation over the long instruction chains of deep expressions:
        // see `appy_ir::stack`.
        let engine = appy_ir::stack::deep(|| crate::jitdump::quietly(|| ExecutionEngine::new(&module, 2, &[], false, false)));
        // The C API's `invoke_packed(name)` calls `_mlir_ciface_{name}` through its
        // packed wrapper `_mlir__mlir_ciface_{name}`.
        let packed = engine.lookup(&format!("_mlir__mlir_ciface_{name}"));
        if engine.lookup(&format!("_mlir_ciface_{name}")).is_null() || packed.is_null() {
            return Err(format!("the CPU execution engine could not compile `{name}`"));
        }
        // SAFETY: the packed wrapper has the signature `void(void **)`.
        let packed = unsafe { std::mem::transmute::<*mut (), unsafe extern "C" fn(*mut *mut ())>(packed) };
        Ok(CpuFunction {
            engine,
            name: name.to_string(),
            results,
            args: sig.to_vec(),
            packed,
            print_cb: text.contains("appy.print_callback"),
        })
    }

    /// The argument types this function was compiled for.
    pub fn signature(&self) -> &[ArgType] {
        &self.args
    }

    /// Runs the function on arrays in the caller's memory (no copies).
    ///
    /// # Safety
    /// `args` match [`CpuFunction::signature`] (arrays of its ranks and element types,
    /// scalars of its types); every array pointer is valid for reads and writes of its
    /// shape's elements for the duration of the call.
    pub unsafe fn call_raw(&self, args: &[RawArg<'_>]) -> Vec<RawResult> {
        let n = args.len();
        let mut descs: Vec<[i64; 3 + 2 * MAX_RANK]> = Vec::with_capacity(n);
        let mut scalars: Vec<u64> = Vec::with_capacity(n);
        for a in args {
            match a {
                RawArg::Array { ptr, shape } => {
                    let mut d = [0i64; 3 + 2 * MAX_RANK];
                    let r = shape.len().min(MAX_RANK);
                    d[0] = *ptr as i64;
                    d[1] = *ptr as i64;
                    let mut stride = 1i64;
                    for k in (0..r).rev() {
                        d[3 + k] = shape[k] as i64;
                        d[3 + r + k] = stride;
                        stride *= shape[k] as i64;
                    }
                    descs.push(d);
                }
                RawArg::Scalar(bits) => scalars.push(*bits),
            }
        }
        let mut desc_ptrs: Vec<*mut i64> = descs.iter_mut().map(|d| d.as_mut_ptr()).collect();
        let struct_ret = self.results.len() > 1 || self.results.iter().any(|r| matches!(r, ArgType::Array { .. }));
        let layout = result_layout(&self.results);
        let mut ret_buf = vec![0u64; layout.iter().map(|(o, s)| o + s).max().unwrap_or(8).div_ceil(8) + 1];
        let mut ret_ptr: *mut u64 = ret_buf.as_mut_ptr();
        let mut packed: Vec<*mut ()> = Vec::with_capacity(n + 2);
        if struct_ret {
            packed.push(&mut ret_ptr as *mut *mut u64 as *mut ());
        }
        let (mut di, mut si) = (0, 0);
        for a in args {
            match a {
                RawArg::Array { .. } => {
                    packed.push(&mut desc_ptrs[di] as *mut *mut i64 as *mut ());
                    di += 1;
                }
                RawArg::Scalar(_) => {
                    packed.push(&mut scalars[si] as *mut u64 as *mut ());
                    si += 1;
                }
            }
        }
        if self.print_cb {
            packed.push(&PRINT_CALLBACK as *const _ as *mut ());
        }
        if !struct_ret && self.results.len() == 1 {
            packed.push(ret_buf.as_mut_ptr() as *mut ());
        }
        // SAFETY: the packed arguments match the function's signature (the caller's
        // contract); every pointer lives until the call returns.
        unsafe { (self.packed)(packed.as_mut_ptr()) };
        let base = ret_buf.as_ptr() as *const u8;
        let mut out = Vec::with_capacity(self.results.len());
        let mut seen: Vec<*mut u8> = vec![];
        for (r, (off, _)) in self.results.iter().zip(&layout) {
            // SAFETY: the layout is the LLVM struct the function fills.
            let p = unsafe { base.add(*off) };
            out.push(match r {
                ArgType::Scalar { dtype, weak } => RawResult::Scalar(read_scalar(p, *dtype, *weak)),
                ArgType::Array { dtype, rank } => unsafe {
                    let f = p as *const i64;
                    let allocated = *f as *mut u8;
                    let data = (*f.add(1) as *const u8).add(*f.add(2) as usize * dtype.size());
                    let shape: Vec<usize> = (0..*rank).map(|i| *f.add(3 + i) as usize).collect();
                    let alias = args
                        .iter()
                        .position(|a| matches!(a, RawArg::Array { ptr, .. } if std::ptr::eq(*ptr, data)));
                    match alias {
                        Some(k) => RawResult::Alias(k),
                        None => {
                            // A buffer returned twice is freed once; a view into an
                            // argument is not ours to free.
                            let in_arg = args.iter().zip(&self.args).any(|(a, t)| match (a, t) {
                                (RawArg::Array { ptr, shape }, ArgType::Array { dtype, .. }) => {
                                    let len = shape.iter().product::<usize>() * dtype.size();
                                    (*ptr as usize..*ptr as usize + len.max(1)).contains(&(allocated as usize))
                                }
                                _ => false,
                            });
                            let owned = !in_arg && !seen.contains(&allocated);
                            seen.push(allocated);
                            RawResult::Array(ResultArray {
                                allocated: if owned { allocated } else { std::ptr::null_mut() },
                                data,
                                dtype: *dtype,
                                shape,
                            })
                        }
                    }
                },
            });
        }
        out
    }

    /// Runs the function; array arguments are updated in place.
    pub fn call(&self, args: &mut [HostValue]) -> DResult<Vec<HostValue>> {
        let sig: Vec<ArgType> = args.iter().map(|a| a.arg_type()).collect();
        if sig != self.args {
            return Err(Diagnostic::bare(format!("`{}` was compiled for other argument types", self.name)));
        }
        call_engine(&self.engine, &self.name, &self.results, self.print_cb, args)
    }
}

fn call_engine(
    engine: &ExecutionEngine,
    name: &str,
    results: &[ArgType],
    print_cb: bool,
    args: &mut [HostValue],
) -> DResult<Vec<HostValue>> {
    // Argument storage (kept alive until the call returns).
    let mut buffers: Vec<Aligned> = vec![];
    let mut descs: Vec<Box<[i64]>> = vec![];
    let mut desc_ptrs: Vec<Box<*mut i64>> = vec![];
    let mut scalars: Vec<Box<[u64; 1]>> = vec![];
    enum Slot {
        Desc,
        Scalar(usize),
    }
    let mut slots = vec![];
    for a in args.iter() {
        match a {
            HostValue::Array(arr) => {
                let mut buf = Aligned::new(&arr.data);
                let p = buf.ptr() as i64;
                buffers.push(buf);
                let r = arr.shape.len();
                let mut d = vec![p, p, 0];
                d.extend(arr.shape.iter().map(|x| *x as i64));
                let mut strides = vec![1i64; r];
                for i in (0..r.saturating_sub(1)).rev() {
                    strides[i] = strides[i + 1] * arr.shape[i + 1] as i64;
                }
                d.extend(strides);
                descs.push(d.into_boxed_slice());
                slots.push(Slot::Desc);
            }
            HostValue::Int(i, dt, _) => {
                let bits: u64 = match dt {
                    DType::I32 => (*i as i32) as u32 as u64,
                    _ => *i as u64,
                };
                scalars.push(Box::new([bits]));
                slots.push(Slot::Scalar(scalars.len() - 1));
            }
            HostValue::Float(f, dt, _) => {
                let bits = match dt {
                    DType::F32 => (*f as f32).to_bits() as u64,
                    _ => f.to_bits(),
                };
                scalars.push(Box::new([bits]));
                slots.push(Slot::Scalar(scalars.len() - 1));
            }
            HostValue::Bool(b) => {
                scalars.push(Box::new([*b as u64]));
                slots.push(Slot::Scalar(scalars.len() - 1));
            }
            HostValue::Device { .. } => return Err(Diagnostic::bare("a device (GPU) array cannot be passed to the CPU back end")),
        }
    }
    for d in descs.iter_mut() {
        desc_ptrs.push(Box::new(d.as_mut_ptr()));
    }
    let mut packed: Vec<*mut ()> = vec![];
    // Results: a single scalar comes back in the last slot; memrefs or several results
    // through a pointer to a struct passed first.
    let results = results.to_vec();
    let struct_ret = results.len() > 1 || results.iter().any(|r| matches!(r, ArgType::Array { .. }));
    let layout = result_layout(&results);
    let mut ret_buf = vec![0u64; layout.iter().map(|(o, s)| o + s).max().unwrap_or(8).div_ceil(8) + 1];
    let mut ret_ptr: Box<*mut u64> = Box::new(ret_buf.as_mut_ptr());
    if struct_ret {
        packed.push(&mut *ret_ptr as *mut *mut u64 as *mut ());
    }
    let mut di = 0;
    for s in &slots {
        match s {
            Slot::Desc => {
                packed.push(&mut *desc_ptrs[di] as *mut *mut i64 as *mut ());
                di += 1;
            }
            Slot::Scalar(i) => packed.push(scalars[*i].as_mut_ptr() as *mut ()),
        }
    }
    if print_cb {
        packed.push(&PRINT_CALLBACK as *const _ as *mut ());
    }
    if !struct_ret && results.len() == 1 {
        packed.push(ret_buf.as_mut_ptr() as *mut ());
    }
    unsafe {
        engine
            .invoke_packed(name, &mut packed)
            .map_err(|e| Diagnostic::bare(format!("running `{name}` on the CPU failed: {e}")))?;
    }
    // Copy arrays back.
    let mut bi = 0;
    for a in args.iter_mut() {
        if let HostValue::Array(arr) = a {
            buffers[bi].copy_to(&mut arr.data);
            bi += 1;
        }
    }
    // Read results.
    let base = ret_buf.as_ptr() as *const u8;
    let mut out = vec![];
    for (r, (off, _)) in results.iter().zip(&layout) {
        let p = unsafe { base.add(*off) };
        out.push(match r {
            ArgType::Scalar { dtype, weak } => read_scalar(p, *dtype, *weak),
            ArgType::Array { dtype, rank } => unsafe {
                let f = p as *const i64;
                let aligned = *f.add(1) as *const u8;
                let offset = *f.add(2) as usize;
                let shape: Vec<usize> = (0..*rank).map(|i| *f.add(3 + i) as usize).collect();
                // The shape comes from the function (e.g. `np.empty(N)`): checked.
                let mut arr = HostArray::try_zeros(*dtype, shape).map_err(|e| Diagnostic::bare(format!("`{name}` returned {e}")))?;
                if !arr.data.is_empty() {
                    std::ptr::copy_nonoverlapping(aligned.add(offset * dtype.size()), arr.data.as_mut_ptr(), arr.data.len());
                }
                HostValue::Array(arr)
            },
        });
    }
    Ok(out)
}

fn read_scalar(p: *const u8, dtype: DType, weak: bool) -> HostValue {
    unsafe {
        match dtype {
            DType::F32 => HostValue::Float(*(p as *const f32) as f64, dtype, weak),
            DType::F64 => HostValue::Float(*(p as *const f64), dtype, weak),
            DType::I32 => HostValue::Int(*(p as *const i32) as i64, dtype, weak),
            DType::I64 => HostValue::Int(*(p as *const i64), dtype, weak),
            DType::Bool => HostValue::Bool(*p & 1 != 0),
        }
    }
}

/// The highest array rank [`CpuFunction::call_raw`] passes.
pub const MAX_RANK: usize = 8;

/// Offsets and sizes of the results in the LLVM struct that returns them.
fn result_layout(results: &[ArgType]) -> Vec<(usize, usize)> {
    let mut off = 0usize;
    let mut out = vec![];
    for r in results {
        let (size, align) = match r {
            ArgType::Array { rank, .. } => ((3 + 2 * rank) * 8, 8),
            ArgType::Scalar { dtype, .. } => (dtype.size(), dtype.size()),
        };
        off = off.div_ceil(align) * align;
        out.push((off, size));
        off += size;
    }
    out
}
