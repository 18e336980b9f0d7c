//! The CPU executor: compiles a function to native code (MLIR's execution engine:
//! LLVM at -O3 for the host CPU, OpenMP for parallel loops, glibc's vector math
//! library `libmvec` for math functions in vectorised loops) and calls it with memref
//! descriptors over the arguments' own memory — no copies.
//!
//! Compiled code can be kept as a shared object (see [`CpuFunction::compile_to`]): the
//! execution engine's object file, linked with the system C compiler driver (`cc`),
//! loaded with `dlopen` by later processes without running LLVM again. Every
//! specialisation of a function exports the same symbols (`f`, `_mlir_ciface_f`, …), so
//! each shared object binds its own references to its own definitions
//! (`-Wl,-Bsymbolic`) and is loaded with `RTLD_LOCAL`, lending its symbols to no other
//! code; only the OpenMP runtime and the vector math library, which compiled code of
//! every kind calls, are loaded with `RTLD_GLOBAL`.

use crate::array::{HostArray, HostValue};
use appy_compiler::{Compiler, Options};
use appy_ir::diag::{DResult, Diagnostic, SourceFile};
use appy_ir::status::{STATUS_LEN, Status};
use appy_ir::types::{ArgType, DType};
use melior::ExecutionEngine;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

unsafe extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
    fn dlclose(handle: *mut c_void) -> c_int;
    fn free(p: *mut c_void);
    fn LLVMGetHostCPUName() -> *mut c_char;
    fn LLVMGetHostCPUFeatures() -> *mut c_char;
    fn LLVMDisposeMessage(m: *mut c_char);
}

const RTLD_NOW: c_int = 2;
const RTLD_GLOBAL: c_int = 0x100;
const RTLD_LOCAL: c_int = 0;

/// The host's native-code facilities, found once per process.
pub struct Host {
    /// The OpenMP runtime (`libomp.so`), when found: parallel loops use it.
    pub libomp: Option<PathBuf>,
    /// glibc's vector math library (`libmvec.so.1`), when found: vectorised loops call
    /// its vector versions of `exp`, `log`, `pow`, `tanh` ....
    pub libmvec: Option<PathBuf>,
    /// `APPY_NUM_THREADS`, when set: the number of threads of parallel regions
    /// (else OpenMP's default: `OMP_NUM_THREADS`, or one per core).
    pub threads: Option<i32>,
    /// The host CPU (LLVM's name and features): compiled code is specific to it.
    pub cpu: String,
    /// The vector math functions usable on this host (`Options::vector_math`).
    pub vector_math: String,
    set_threads: Option<unsafe extern "C" fn(c_int)>,
    /// libomp's `kmp_get_blocktime` and `kmp_set_blocktime`: how long idle workers spin.
    blocktime: Option<(unsafe extern "C" fn() -> c_int, unsafe extern "C" fn(c_int))>,
}

/// The library `var` names, else the first of `first` (a copy shipped with the embedding
/// package) and `candidates` (the system's) that exists.
fn find_lib(var: &str, first: Option<&Path>, candidates: &[&str]) -> Option<PathBuf> {
    if let Some(p) = appy_ir::config::library(var) {
        return p.filter(|p| p.exists());
    }
    first
        .map(Path::to_path_buf)
        .into_iter()
        .chain(candidates.iter().map(PathBuf::from))
        .find(|p| p.exists())
}

/// Loads a library whose symbols compiled code resolves from the process (the OpenMP
/// runtime and the vector math library: the execution engine looks symbols up in the
/// process's global scope).
fn load_global(path: &Path) -> Result<*mut c_void, String> {
    load_with(path, RTLD_NOW | RTLD_GLOBAL)
}

fn load_with(path: &Path, flags: c_int) -> Result<*mut c_void, String> {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| "bad library path".to_string())?;
    let h = unsafe { dlopen(c.as_ptr(), flags) };
    if h.is_null() {
        return Err(dl_error());
    }
    Ok(h)
}

fn dl_error() -> String {
    let e = unsafe { dlerror() };
    if e.is_null() {
        "unknown dlopen error".into()
    } else {
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

fn llvm_string(p: *mut c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    unsafe { LLVMDisposeMessage(p) };
    s
}

static BUNDLED_LIBOMP: OnceLock<PathBuf> = OnceLock::new();

/// Registers an OpenMP runtime shipped with the embedding package (the Python wheel
/// vendors LLVM's `libomp.so.5` as `appy/_vendor/libomp.so.5`). It is tried after
/// `APPY_LIBOMP` and before the system's copies. Only the first registration counts, and
/// only before the first use of [`host`].
pub fn register_bundled_libomp(path: PathBuf) {
    let _ = BUNDLED_LIBOMP.set(path);
}

/// The host setup (OpenMP runtime, vector math library, LLVM options), done once.
pub fn host() -> &'static Host {
    static HOST: OnceLock<Host> = OnceLock::new();
    HOST.get_or_init(|| {
        let libomp = find_lib(
            appy_ir::config::LIBOMP,
            BUNDLED_LIBOMP.get().map(PathBuf::as_path),
            &[
                "/usr/lib/llvm-22/lib/libomp.so",
                "/usr/lib/llvm-22/lib/libomp.so.5",
                "/usr/lib/x86_64-linux-gnu/libomp.so.5",
                "/usr/lib/libomp.so",
            ],
        );
        let mut set_threads = None;
        let mut blocktime = None;
        let libomp = libomp.and_then(|p| match load_global(&p) {
            Ok(h) => {
                let f = unsafe { dlsym(h, c"omp_set_num_threads".as_ptr()) };
                if !f.is_null() {
                    set_threads = Some(unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int)>(f) });
                }
                let (get, set) = unsafe { (dlsym(h, c"kmp_get_blocktime".as_ptr()), dlsym(h, c"kmp_set_blocktime".as_ptr())) };
                if !get.is_null() && !set.is_null() {
                    // SAFETY: libomp's `int kmp_get_blocktime(void)` and
                    // `void kmp_set_blocktime(int)`.
                    blocktime = unsafe {
                        Some((
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> c_int>(get),
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int)>(set),
                        ))
                    };
                }
                Some(p)
            }
            Err(e) => {
                tracing::warn!(
                    "cannot load the OpenMP runtime {}: {e}; parallel loops run on one thread",
                    p.display()
                );
                None
            }
        });
        if libomp.is_none() {
            tracing::warn!("no OpenMP runtime found (install libomp-22-dev or set APPY_LIBOMP): parallel loops run on one thread");
        }
        let features = llvm_string(unsafe { LLVMGetHostCPUFeatures() });
        let has = |f: &str| features.split(',').any(|x| x == format!("+{f}"));
        // glibc's vector math library: the instruction sets it has vector functions for
        // that this CPU supports (checked on `expf`), and whether it has glibc 2.35's
        // full set (checked on `tanh`).
        let mut vector_math = String::new();
        let libmvec = find_lib(
            appy_ir::config::LIBMVEC,
            None,
            &[
                "/lib/x86_64-linux-gnu/libmvec.so.1",
                "/usr/lib/x86_64-linux-gnu/libmvec.so.1",
                "/usr/lib64/libmvec.so.1",
            ],
        )
        .and_then(|p| {
            let h = load_global(&p).ok()?;
            let sym = |s: &CStr| !unsafe { dlsym(h, s.as_ptr()) }.is_null();
            for (isa, probe, feature) in [
                ('b', c"_ZGVbN4v_expf", "sse4.1"),
                ('c', c"_ZGVcN8v_expf", "avx"),
                ('d', c"_ZGVdN8v_expf", "avx2"),
                ('e', c"_ZGVeN16v_expf", "avx512f"),
            ] {
                if sym(probe) && has(feature) {
                    vector_math.push(isa);
                }
            }
            if !vector_math.is_empty() {
                vector_math.push_str(if sym(c"_ZGVbN2v_tanh") { ":1" } else { ":0" });
            }
            Some(p)
        });
        let threads = appy_ir::config::num_threads();
        let cpu = format!(
            "{} {:016x}",
            llvm_string(unsafe { LLVMGetHostCPUName() }),
            crate::cache::fnv(features.as_bytes())
        );
        Host {
            libomp,
            libmvec,
            threads,
            cpu,
            vector_math,
            set_threads,
            blocktime,
        }
    })
}

static THREADS: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Sets the number of threads of parallel regions for this process (`None`: back to
/// `APPY_NUM_THREADS`, else OpenMP's default).
pub fn set_num_threads(n: Option<usize>) {
    let n = n.map(|n| n.clamp(1, i32::MAX as usize) as i32).unwrap_or(0);
    THREADS.store(n, std::sync::atomic::Ordering::Relaxed);
}

impl Host {
    /// Compile options for this host: OpenMP only when its runtime was found.
    pub fn options(&self, opts: &Options) -> Options {
        Options {
            openmp: opts.openmp && self.libomp.is_some(),
            vector_math: self.vector_math.clone(),
            blas: crate::blas::blas().is_some(),
            ..opts.clone()
        }
    }
    pub(crate) fn shared_libs(&self) -> Vec<String> {
        self.libomp.iter().chain(&self.libmvec).map(|p| p.display().to_string()).collect()
    }
}

/// The compiled code of a function (owns the memory the entry point is in).
#[allow(dead_code)]
enum Code {
    /// In-process JIT.
    Engine(ExecutionEngine),
    /// A shared object loaded with `dlopen`.
    Shared(SharedObject),
}

struct SharedObject(*mut c_void);

impl Drop for SharedObject {
    fn drop(&mut self) {
        unsafe { dlclose(self.0) };
    }
}

/// A function compiled for the CPU, specialised for one signature.
pub struct CpuFunction {
    code: Code,
    name: String,
    results: Vec<ArgType>,
    args: Vec<ArgType>,
    /// Per parameter: whether it takes any strided layout (else C-contiguous arrays).
    strided: Vec<bool>,
    /// The packed entry point `_mlir__mlir_ciface_<name>(void **args)`, looked up once:
    /// one pointer per argument of the C interface (a memref's is a pointer to its
    /// descriptor), the results first (through a pointer to a struct) or last (a
    /// single scalar).
    packed: unsafe extern "C" fn(*mut *mut ()),
    /// The function prints: it takes [`print_callback`] as a last parameter
    /// (`appy-cpu-print`).
    print_cb: bool,
    /// The function takes a status buffer after its parameters ([`appy_ir::status`]).
    status: Option<Status>,
    /// The function calls the BLAS library ([`crate::blas`]).
    blas: bool,
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

/// The module attribute of code that takes the print callback.
const PRINT_MARK: &str = "appy.print_callback";

/// The packed-argument slot of the print callback.
static PRINT_CALLBACK: unsafe extern "C" fn(*mut u8, *mut u8, i64, i64, i64, *mut i64, *mut i64, i64, i64, i64) = print_callback;

// SAFETY: after construction the code is only read: symbol lookups (thread safe in
// LLVM's ORC JIT and in `dlsym`) and calls of the compiled code, which keeps no state
// between calls (every allocation is the call's own).
unsafe impl Send for CpuFunction {}
unsafe impl Sync for CpuFunction {}

/// An argument of [`CpuFunction::call_raw`].
#[derive(Clone, Copy, Debug)]
pub enum RawArg<'a> {
    /// An array in the caller's memory, aligned for its element type, used in place:
    /// the function reads and writes it directly.
    Array {
        /// The first element.
        ptr: *mut u8,
        /// The shape.
        shape: &'a [usize],
        /// The strides, in elements (any sign); `None`: C-contiguous. Only parameters
        /// compiled as strided ([`CpuFunction::strided`]) take other strides.
        strides: Option<&'a [isize]>,
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
    /// The array as a host array: its buffer as it is when the compiled code allocated
    /// it (cache-line aligned), else a copy.
    pub fn into_host_array(mut self) -> HostArray {
        let n = self.shape.iter().product::<usize>() * self.dtype.size();
        if !self.allocated.is_null() && (self.data as usize).is_multiple_of(crate::array::AlignedBytes::ALIGN) {
            let base = std::mem::replace(&mut self.allocated, std::ptr::null_mut());
            // SAFETY: `base` is the `malloc` block the compiled code allocated (see
            // `appy-cpu-alloc`), owned by this value alone; the data lies inside it.
            let data = unsafe { crate::array::AlignedBytes::from_malloc(base, self.data as *mut u8, n) };
            return HostArray {
                dtype: self.dtype,
                shape: std::mem::take(&mut self.shape),
                data,
            };
        }
        let mut arr = HostArray::zeros(self.dtype, self.shape.clone());
        arr.data.copy_from_slice(self.bytes());
        arr
    }

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

impl Drop for ResultArray {
    fn drop(&mut self) {
        if !self.allocated.is_null() {
            // SAFETY: `memref.alloc` allocates with `malloc`/`posix_memalign` in the
            // CPU pipeline (`appy-cpu-alloc`).
            unsafe { free(self.allocated as *mut c_void) };
        }
    }
}

/// The bits a scalar is passed as (`None` for arrays).
pub fn scalar_bits(v: &HostValue) -> Option<u64> {
    Some(match v {
        HostValue::Int(i, d, _) => d.int_to_bits(*i),
        HostValue::Float(f, DType::F32, _) => (*f as f32).to_bits() as u64,
        HostValue::Float(f, d @ (DType::F16 | DType::BF16), _) => d.half().expect("16-bit float").from_f64(*f) as u64,
        HostValue::Float(f, _, _) => f.to_bits(),
        HostValue::Bool(b) => *b as u64,
        HostValue::Array(_) | HostValue::Device { .. } => return None,
    })
}

/// The C-order strides (in elements) of a shape.
pub fn c_strides(shape: &[usize]) -> Vec<isize> {
    let mut s = vec![1isize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1] as isize;
    }
    s
}

/// Whether an array with these shape and strides (in elements) is C-contiguous
/// (strides of axes of length 1 do not matter, nor any stride of an empty array).
pub fn is_c_contiguous(shape: &[usize], strides: &[isize]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let want = c_strides(shape);
    shape.iter().zip(strides).zip(&want).all(|((n, s), w)| *n == 1 || s == w)
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
        Ok(Self::compile_to(compiler, file, func, sig, &[], opts, None)?.0)
    }

    /// Compiles, also returning the cache payload (the LLVM-dialect module as text and
    /// the function's metadata); with `object` (a cache entry's path), also writes the
    /// native code next to it as a shared object ([`shared_object_path`];
    /// [`CpuFunction::load_shared`] loads it). Parameters marked in
    /// `strided` accept arrays of any strides ([`CpuFunction::call_raw`]).
    pub fn compile_to(
        compiler: &Compiler,
        file: &SourceFile,
        func: &str,
        sig: &[ArgType],
        strided: &[bool],
        opts: &Options,
        object: Option<&Path>,
    ) -> DResult<(CpuFunction, serde_json::Value)> {
        let opts = host().options(opts);
        let (llvm, lowered) = compiler.compile_cpu(file, func, sig, &opts, strided)?;
        let text = llvm.to_generic();
        let payload = serde_json::json!({
            "name": lowered.name,
            "results": lowered.results,
            "strided": strided,
            "status": lowered.status,
            "llvm": text
        });
        let meta = Meta {
            name: lowered.name.clone(),
            results: lowered.results,
            strided: strided.to_vec(),
            print_cb: text.contains(PRINT_MARK),
            status: lowered.status,
        };
        let f = Self::from_llvm(compiler, &text, meta, sig, object)
            .map_err(|e| appy_compiler::mlir_error(file, &appy_ir::diag::IrError::new(e)))?;
        Ok((f, payload))
    }

    /// Rebuilds a function from a cache payload (re-running LLVM); `None` if the
    /// payload is invalid. With `object` (the entry's path), the native code is written
    /// next to it too ([`shared_object_path`]).
    pub fn from_cached(compiler: &Compiler, v: &serde_json::Value, sig: &[ArgType], object: Option<&Path>) -> Option<CpuFunction> {
        let meta = payload_meta(v)?;
        let text = v.get("llvm")?.as_str()?;
        Self::from_llvm(compiler, text, meta, sig, object).ok()
    }

    /// Loads a shared object written by [`CpuFunction::compile_to`] for the function of
    /// a cache payload, with `RTLD_LOCAL`: its symbols, the same as those of the
    /// function's other specialisations, stay its own. The file must be this user's (or
    /// root's) and writable by no one else (checked on the open file just before
    /// `dlopen` opens it again by path: replacing it in between needs write access to
    /// the cache directory, which only this user and root have, see
    /// [`crate::cache::usable`]).
    pub fn load_shared(path: &Path, v: &serde_json::Value, sig: &[ArgType]) -> Result<CpuFunction, String> {
        let meta = payload_meta(v).ok_or("invalid cache payload")?;
        let name = meta.name;
        let _ = host();
        match crate::files::open_private(path) {
            Ok(Some(_)) => {}
            Ok(None) => return Err("no such file".into()),
            Err(r) => return Err(r.why),
        }
        let h = load_with(path, RTLD_NOW | RTLD_LOCAL)?;
        let so = SharedObject(h);
        let sym = CString::new(format!("_mlir__mlir_ciface_{name}")).map_err(|_| "bad function name")?;
        let p = unsafe { dlsym(so.0, sym.as_ptr()) };
        if p.is_null() {
            return Err(format!("{} has no entry point for `{name}`", path.display()));
        }
        let blas = crate::blas::bind(&|g| match CString::new(g) {
            Ok(c) => unsafe { dlsym(so.0, c.as_ptr()) },
            Err(_) => std::ptr::null_mut(),
        })?;
        Ok(CpuFunction {
            // SAFETY: the packed wrapper has the signature `void(void **)`.
            packed: unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut *mut ())>(p) },
            code: Code::Shared(so),
            name,
            results: meta.results,
            args: sig.iter().map(ArgType::abi).collect(),
            strided: meta.strided,
            print_cb: meta.print_cb,
            status: meta.status,
            blas,
        })
    }

    fn from_llvm(compiler: &Compiler, text: &str, meta: Meta, sig: &[ArgType], object: Option<&Path>) -> Result<CpuFunction, String> {
        let name = meta.name.as_str();
        let host = host();
        let module = compiler.ctx.parse(text)?;
        // MLIR's C API reads each path as a NUL-terminated string: keep a NUL after it.
        let libs: Vec<String> = host.shared_libs().into_iter().map(|s| s + "\0").collect();
        let libs: Vec<&str> = libs.iter().map(|s| &s[..s.len() - 1]).collect();
        let t0 = std::time::Instant::now();
        // No perf jitdump directory left behind (see `jitdump`).
        // LLVM code generation over the long instruction chains of deep expressions:
        // see `appy_ir::stack`.
        let engine = appy_ir::stack::deep(|| {
            crate::jitdump::quietly(|| ExecutionEngine::new(&module, 3, &libs, object.is_some(), object.is_some()))
        });
        // `_mlir__mlir_ciface_{name}` is the packed wrapper of `_mlir_ciface_{name}`.
        let p = engine.lookup(&format!("_mlir__mlir_ciface_{name}"));
        if p.is_null() || engine.lookup(&format!("_mlir_ciface_{name}")).is_null() {
            return Err(format!("the CPU execution engine could not compile `{name}`"));
        }
        tracing::debug!("LLVM compiled `{name}` in {:.1} ms", t0.elapsed().as_secs_f64() * 1e3);
        let blas = crate::blas::bind(&|g| engine.lookup(g) as *mut c_void)?;
        if let Some(stem) = object
            && let Err(e) = write_shared_object(&engine, &shared_object_path(stem, text), host)
        {
            tracing::warn!("appy cache: cannot write native code for `{name}` ({e}); it will be compiled again next time");
        }
        Ok(CpuFunction {
            // SAFETY: the packed wrapper has the signature `void(void **)`.
            packed: unsafe { std::mem::transmute::<*mut (), unsafe extern "C" fn(*mut *mut ())>(p) },
            code: Code::Engine(engine),
            name: name.to_string(),
            results: meta.results,
            args: sig.iter().map(ArgType::abi).collect(),
            strided: meta.strided,
            print_cb: meta.print_cb,
            status: meta.status,
            blas,
        })
    }

    /// Whether the code was loaded from a shared object (not compiled in-process).
    pub fn is_shared_object(&self) -> bool {
        matches!(self.code, Code::Shared(_))
    }

    /// Per parameter: whether it takes arrays of any strides (else C-contiguous ones).
    pub fn strided(&self) -> &[bool] {
        &self.strided
    }

    /// The argument types this function was compiled for.
    pub fn signature(&self) -> &[ArgType] {
        &self.args
    }

    /// Runs the function on arrays in the caller's memory (no copies).
    ///
    /// # Safety
    /// `args` match [`CpuFunction::signature`] (arrays of its ranks and element types,
    /// scalars of its types), arrays of parameters not [`CpuFunction::strided`] are
    /// C-contiguous; every array pointer is valid for reads and writes of the elements
    /// its shape and strides reach, for the duration of the call, and nothing else
    /// accesses them meanwhile.
    ///
    /// # Errors
    /// An index out of bounds in checked mode or a negative dimension (the line names
    /// the subscript or allocation); the function's warnings (integer division by zero)
    /// are queued ([`crate::status::take_warnings`]).
    pub unsafe fn call_raw(&self, args: &[RawArg<'_>]) -> Result<Vec<RawResult>, String> {
        let n = args.len();
        let mut descs: Vec<[i64; 3 + 2 * MAX_RANK]> = Vec::with_capacity(n);
        let mut scalars: Vec<u64> = Vec::with_capacity(n);
        for a in args {
            match a {
                RawArg::Array { ptr, shape, strides } => {
                    let mut d = [0i64; 3 + 2 * MAX_RANK];
                    let r = shape.len().min(MAX_RANK);
                    d[0] = *ptr as i64;
                    d[1] = *ptr as i64;
                    let mut stride = 1i64;
                    for k in (0..r).rev() {
                        d[3 + k] = shape[k] as i64;
                        d[3 + r + k] = match strides {
                            Some(s) => s[k] as i64,
                            None => stride,
                        };
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
        // The status buffer, as a 1-D memref descriptor (allocated, aligned, offset, size, stride).
        let mut status_buf = [0i64; STATUS_LEN];
        let sp = status_buf.as_mut_ptr() as i64;
        let mut status_desc = [sp, sp, 0, STATUS_LEN as i64, 1];
        let mut status_ptr: *mut i64 = status_desc.as_mut_ptr();
        if self.status.is_some() {
            packed.push(&mut status_ptr as *mut *mut i64 as *mut ());
        }
        if self.print_cb {
            packed.push(&PRINT_CALLBACK as *const _ as *mut ());
        }
        if !struct_ret && self.results.len() == 1 {
            packed.push(ret_buf.as_mut_ptr() as *mut ());
        }
        let host = host();
        let threads = match THREADS.load(std::sync::atomic::Ordering::Relaxed) {
            0 => host.threads,
            n => Some(n),
        };
        if let (Some(n), Some(set)) = (threads, host.set_threads) {
            // The number of threads is a per-thread OpenMP setting: set it on the thread
            // that starts the parallel regions.
            unsafe { set(n) };
        }
        // With a BLAS library whose threads need idle cores, OpenMP's workers stop
        // spinning after each parallel loop during this call (a per-thread setting,
        // restored after it).
        let mut restore_blocktime = None;
        if self.blas {
            crate::blas::set_threads(threads);
            if let (Some(b), Some((get, set))) = (crate::blas::blas(), host.blocktime)
                && b.needs_idle_cores
            {
                // SAFETY: libomp's own functions, on the calling thread.
                restore_blocktime = Some((unsafe { get() }, set));
                unsafe { set(0) };
            }
        }
        // SAFETY: the packed arguments match the function's signature (the caller's
        // contract); every pointer lives until the call returns.
        unsafe { (self.packed)(packed.as_mut_ptr()) };
        if let Some((t, set)) = restore_blocktime {
            // SAFETY: as above.
            unsafe { set(t) };
        }
        let checked = match &self.status {
            // SAFETY: the compiled code wrote the buffer through the descriptor.
            Some(st) => st.decode(unsafe { &*std::ptr::addr_of!(status_buf) }),
            None => Ok(vec![]),
        };
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
                                (RawArg::Array { ptr, shape, .. }, ArgType::Array { dtype, .. }) => {
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
        // On an error, the results made so far are dropped (new arrays freed).
        crate::status::queue(checked?);
        Ok(out)
    }

    /// Runs the function on host values; arrays are passed in place (their own memory,
    /// which the function updates). An array the function allocates and returns becomes
    /// the result's storage without a copy.
    pub fn call(&self, args: &mut [HostValue]) -> DResult<Vec<HostValue>> {
        // Complex arrays are passed as float arrays of one more axis.
        let complex = HostValue::all_to_abi(args);
        let r = self.call_abi(args);
        HostValue::all_from_abi(args, &complex);
        r
    }

    fn call_abi(&self, args: &mut [HostValue]) -> DResult<Vec<HostValue>> {
        let sig: Vec<ArgType> = args.iter().map(|a| a.arg_type()).collect();
        if sig != self.args {
            return Err(Diagnostic::bare(format!("`{}` was compiled for other argument types", self.name)));
        }
        let mut raw = Vec::with_capacity(args.len());
        for a in args.iter_mut() {
            raw.push(match a {
                HostValue::Array(x) => RawArg::Array {
                    ptr: x.data.as_mut_ptr(),
                    shape: &x.shape,
                    strides: None,
                },
                HostValue::Device { .. } => {
                    return Err(Diagnostic::bare("a device (GPU) array cannot be passed to the CPU back end"));
                }
                v => RawArg::Scalar(scalar_bits(v).expect("a scalar")),
            });
        }
        if raw
            .iter()
            .any(|a| matches!(a, RawArg::Array { shape, .. } if shape.len() > MAX_RANK))
        {
            return Err(Diagnostic::bare(format!(
                "arrays of more than {MAX_RANK} dimensions are not supported"
            )));
        }
        // SAFETY: the signature matches; the arrays are C-contiguous host arrays borrowed
        // mutably for the call.
        let results = unsafe { self.call_raw(&raw) };
        drop(raw);
        let results = results.map_err(Diagnostic::bare)?;
        Ok(results
            .into_iter()
            .map(|r| match r {
                RawResult::Scalar(v) => v,
                RawResult::Alias(k) => args[k].clone(),
                RawResult::Array(a) => HostValue::Array(a.into_host_array()),
            })
            .collect())
    }
}

fn read_scalar(p: *const u8, dtype: DType, weak: bool) -> HostValue {
    unsafe {
        match dtype {
            DType::F32 => HostValue::Float(*(p as *const f32) as f64, dtype, weak),
            DType::F64 => HostValue::Float(*(p as *const f64), dtype, weak),
            DType::Bool => HostValue::Bool(*p & 1 != 0),
            DType::F16 | DType::BF16 => {
                let b = u16::from_le_bytes([*p, *p.add(1)]);
                HostValue::Float(dtype.half().expect("16-bit float").to_f64(b), dtype, weak)
            }
            d => {
                let mut raw = [0u8; 8];
                std::ptr::copy_nonoverlapping(p, raw.as_mut_ptr(), d.size());
                HostValue::Int(d.int_from_bits(u64::from_le_bytes(raw)), dtype, weak)
            }
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

/// What a compiled function needs besides its code.
struct Meta {
    name: String,
    results: Vec<ArgType>,
    strided: Vec<bool>,
    /// The function takes the print callback (`appy-cpu-print`).
    print_cb: bool,
    /// The status buffer's sites, when the function takes one.
    status: Option<Status>,
}

fn payload_meta(v: &serde_json::Value) -> Option<Meta> {
    let name = v.get("name")?.as_str()?.to_string();
    let results: Vec<ArgType> = serde_json::from_value(v.get("results")?.clone()).ok()?;
    let strided: Vec<bool> = serde_json::from_value(v.get("strided")?.clone()).ok()?;
    let print_cb = v.get("llvm")?.as_str()?.contains(PRINT_MARK);
    let status: Option<Status> = serde_json::from_value(v.get("status")?.clone()).ok()?;
    Some(Meta {
        name,
        results,
        strided,
        print_cb,
        status,
    })
}

/// Where the native code of LLVM-dialect module `code` is kept, for the cache entry
/// `stem` (`<stem>.<hash of code>.so`): code loaded from there is the entry's own code,
/// even when the entry was replaced.
pub fn shared_object_path(stem: &Path, code: &str) -> PathBuf {
    stem.with_extension(format!("{:016x}.so", crate::cache::fnv(code.as_bytes())))
}

/// Dumps the engine's object code and links it into a shared object at `path`
/// (through temporary files of unpredictable names, then a rename; mode 0600). The
/// object binds its references to its own symbols (`-Bsymbolic`): the function's other
/// specialisations define the same ones.
fn write_shared_object(engine: &ExecutionEngine, path: &Path, host: &Host) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().ok_or("no directory")?;
    crate::files::create_dir(dir).map_err(|e| e.to_string())?;
    let stem = crate::files::temporary_for(path).display().to_string();
    let obj = PathBuf::from(format!("{stem}.o"));
    let so = PathBuf::from(format!("{stem}.so"));
    engine.dump_to_object_file(&obj.display().to_string());
    if !obj.exists() {
        return Err("the execution engine wrote no object file".into());
    }
    let mut cmd = std::process::Command::new(appy_ir::config::cc());
    cmd.arg("-shared").arg("-Wl,-Bsymbolic").arg("-o").arg(&so).arg(&obj);
    for lib in host.libomp.iter().chain(&host.libmvec) {
        cmd.arg(lib);
        if let Some(d) = lib.parent() {
            cmd.arg(format!("-Wl,-rpath,{}", d.display()));
        }
    }
    cmd.arg("-lm");
    let out = cmd.output().map_err(|e| format!("cannot run the linker: {e}"));
    let _ = std::fs::remove_file(&obj);
    let out = out?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&so);
        return Err(format!("linking failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    std::fs::set_permissions(&so, std::fs::Permissions::from_mode(0o600))
        .and_then(|_| std::fs::rename(&so, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&so);
            e.to_string()
        })
}
