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
        let engine = ExecutionEngine::new(&module, 2, &[], false, false);
        if engine.lookup(&format!("_mlir_ciface_{name}")).is_null() {
            return Err(format!("the CPU execution engine could not compile `{name}`"));
        }
        Ok(CpuFunction {
            engine,
            name: name.to_string(),
            results,
            args: sig.to_vec(),
        })
    }

    /// Runs the function; array arguments are updated in place.
    pub fn call(&self, args: &mut [HostValue]) -> DResult<Vec<HostValue>> {
        let sig: Vec<ArgType> = args.iter().map(|a| a.arg_type()).collect();
        if sig != self.args {
            return Err(Diagnostic::bare(format!("`{}` was compiled for other argument types", self.name)));
        }
        call_engine(&self.engine, &self.name, &self.results, args)
    }
}

fn call_engine(engine: &ExecutionEngine, name: &str, results: &[ArgType], args: &mut [HostValue]) -> DResult<Vec<HostValue>> {
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
                let n: usize = shape.iter().product();
                let mut arr = HostArray::zeros(*dtype, shape);
                if n > 0 {
                    std::ptr::copy_nonoverlapping(aligned.add(offset * dtype.size()), arr.data.as_mut_ptr(), n * dtype.size());
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
