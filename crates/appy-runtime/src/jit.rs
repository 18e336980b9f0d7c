//! The embedding API: compile a source once, call its jitted functions many times.
//!
//! Each function is specialised for the types of the arguments it is called with
//! (dtype and rank of arrays, scalar kinds); the specialisation is compiled on the first
//! call and cached, so later calls with the same types run without compiling.
//!
//! ```
//! use appy_runtime::{Device, HostArray, HostValue, jit::Jit};
//! use appy_ir::types::DType;
//!
//! let src = "import appy\n\n@appy.jit\ndef scale(a, N):\n    #pragma parallel for simd\n    for i in range(N):\n        a[i] = 2.0 * a[i]\n";
//! let mut jit = Jit::from_source("scale.py", src, Device::Auto);
//! let a = HostArray::from_f64(DType::F64, vec![3], &[1.0, 2.0, 3.0]);
//! let mut args = vec![HostValue::Array(a), HostValue::Int(3, DType::I64, true)];
//! jit.call("scale", &mut args).unwrap();
//! let HostValue::Array(a) = &args[0] else { unreachable!() };
//! assert_eq!(a.get_f64(2), 6.0);
//! ```

use crate::Device;
use crate::array::HostValue;
use appy_compiler::{Compiler, Options};
use appy_ir::diag::{DResult, Diagnostic, SourceFile};
use appy_ir::types::ArgType;
use std::collections::HashMap;

/// An argument of [`Jit::call_views`]: an ndarray view of any layout (its final
/// contents are written back through the view), or a scalar.
pub enum ViewArg<'a> {
    /// A mutable view of float32 elements.
    F32(ndarray::ArrayViewMutD<'a, f32>),
    /// A mutable view of float64 elements.
    F64(ndarray::ArrayViewMutD<'a, f64>),
    /// A mutable view of int32 elements.
    I32(ndarray::ArrayViewMutD<'a, i32>),
    /// A mutable view of int64 elements.
    I64(ndarray::ArrayViewMutD<'a, i64>),
    /// A scalar.
    Scalar(HostValue),
}

/// A source file whose jitted functions can be called.
pub struct Jit {
    file: SourceFile,
    compiler: Compiler,
    opts: Options,
    device: Device,
    #[cfg(feature = "cuda")]
    gpu: Option<crate::gpu::Gpu>,
    cache: HashMap<(String, Vec<ArgType>), Compiled>,
    compilations: usize,
    disk_hits: usize,
    cache_dir: Option<std::path::PathBuf>,
    /// Compile GPU specialisations for every vector length of [`appy_ir::TUNE_MVLS`]
    /// and autotune (`APPY_AUTOTUNE=0` turns it off).
    tune: bool,
}

enum Compiled {
    Cpu(crate::cpu::CpuFunction),
    #[cfg(feature = "cuda")]
    Gpu(Box<appy_ir::bundle::Bundle>, Vec<crate::gpu::Loaded>),
}

impl Jit {
    /// Wraps source text (named `name` in diagnostics). With [`Device::Auto`] the GPU
    /// is used when a driver and a device are present.
    pub fn from_source(name: &str, text: &str, device: Device) -> Jit {
        #[cfg(feature = "cuda")]
        let gpu = match device {
            Device::Cpu => None,
            _ => crate::gpu::Gpu::open().ok(),
        };
        Jit {
            file: SourceFile::new(name, text),
            compiler: Compiler::new(),
            opts: Options::default(),
            device,
            #[cfg(feature = "cuda")]
            gpu,
            cache: HashMap::new(),
            compilations: 0,
            tune: appy_ir::config::autotune(),
            disk_hits: 0,
            cache_dir: crate::cache::dir(),
        }
    }

    /// Uses `dir` for the persistent compile cache (`None` disables it).
    pub fn with_cache_dir(mut self, dir: Option<std::path::PathBuf>) -> Self {
        self.cache_dir = dir;
        self
    }

    /// How many specialisations were loaded from the persistent cache.
    pub fn disk_hits(&self) -> usize {
        self.disk_hits
    }

    /// Whether calls run on the GPU.
    pub fn on_gpu(&self) -> bool {
        #[cfg(feature = "cuda")]
        return self.gpu.is_some();
        #[cfg(not(feature = "cuda"))]
        false
    }

    /// Sets the compile options (clears nothing: options are part of no cache key, so
    /// set them before the first call).
    pub fn with_options(mut self, opts: Options) -> Self {
        self.opts = opts;
        self
    }

    /// Turns autotuning of GPU specialisations on or off (on by default).
    pub fn with_tuning(mut self, tune: bool) -> Self {
        self.tune = tune;
        self
    }

    /// Times `reps` calls of `func` on copies of `args` (the arguments are not
    /// modified): on the GPU with the data resident on the device and CUDA events (the
    /// autotuned candidate); on the CPU with the wall clock. Returns seconds per call;
    /// the first call is a warm-up and is not included.
    pub fn bench(&mut self, func: &str, args: &[HostValue], reps: usize) -> DResult<Vec<f64>> {
        let key = self.specialise(func, args)?;
        match self.cache.get(&key).expect("just inserted") {
            Compiled::Cpu(f) => {
                let mut times = vec![];
                for _ in 0..reps + 1 {
                    let mut a = args.to_vec();
                    let t0 = std::time::Instant::now();
                    f.call(&mut a)?;
                    times.push(t0.elapsed().as_secs_f64());
                }
                times.remove(0);
                Ok(times)
            }
            #[cfg(feature = "cuda")]
            Compiled::Gpu(b, loaded) => {
                let gpu = self.gpu.as_ref().expect("GPU specialisations need a GPU");
                let k = crate::tune::choose(gpu, b, loaded, args).map_err(Diagnostic::bare)?;
                let mut t = gpu.bench(b.candidate(k), &loaded[k], args, reps + 1).map_err(Diagnostic::bare)?;
                t.remove(0);
                Ok(t)
            }
        }
    }

    /// How many specialisations have been compiled so far.
    pub fn compilations(&self) -> usize {
        self.compilations
    }

    /// Calls `func` with ndarray views (strided or transposed views work: their
    /// elements are gathered, and what the function computed is written back through
    /// the views).
    pub fn call_views(&mut self, func: &str, args: &mut [ViewArg<'_>]) -> DResult<Vec<HostValue>> {
        let mut vals: Vec<HostValue> = args
            .iter()
            .map(|a| match a {
                ViewArg::F32(v) => HostValue::Array(crate::HostArray::from_view(&v.view())),
                ViewArg::F64(v) => HostValue::Array(crate::HostArray::from_view(&v.view())),
                ViewArg::I32(v) => HostValue::Array(crate::HostArray::from_view(&v.view())),
                ViewArg::I64(v) => HostValue::Array(crate::HostArray::from_view(&v.view())),
                ViewArg::Scalar(s) => s.clone(),
            })
            .collect();
        let ret = self.call(func, &mut vals)?;
        for (a, v) in args.iter_mut().zip(&vals) {
            let HostValue::Array(arr) = v else { continue };
            let r = match a {
                ViewArg::F32(view) => arr.write_to_view(view),
                ViewArg::F64(view) => arr.write_to_view(view),
                ViewArg::I32(view) => arr.write_to_view(view),
                ViewArg::I64(view) => arr.write_to_view(view),
                ViewArg::Scalar(_) => Ok(()),
            };
            r.map_err(Diagnostic::bare)?;
        }
        Ok(ret)
    }

    /// Calls `func` with `args`; arrays are updated in place; returns the return values.
    pub fn call(&mut self, func: &str, args: &mut [HostValue]) -> DResult<Vec<HostValue>> {
        let key = self.specialise(func, args)?;
        match self.cache.get(&key).expect("just inserted") {
            Compiled::Cpu(f) => f.call(args),
            #[cfg(feature = "cuda")]
            Compiled::Gpu(b, loaded) => {
                let gpu = self.gpu.as_ref().expect("GPU specialisations need a GPU");
                let before = args.to_vec();
                let run = crate::tune::choose(gpu, b, loaded, args).and_then(|k| gpu.run(b.candidate(k), &loaded[k], args));
                match run {
                    Ok((r, _)) => Ok(r),
                    Err(e) if self.device == Device::Auto => {
                        // A GPU failure (out of memory, a launch or JIT error) with
                        // `Device::Auto`: run on the CPU instead, from the original inputs.
                        tracing::warn!("the GPU failed ({e}); running `{func}` on the CPU");
                        args.clone_from_slice(&before);
                        self.gpu = None;
                        self.cache.retain(|_, c| matches!(c, Compiled::Cpu(_)));
                        self.call(func, args)
                    }
                    Err(e) => Err(Diagnostic::bare(e)),
                }
            }
        }
    }

    /// Compiles `func` for the types of `args` unless already done; returns the key of
    /// its specialisation.
    fn specialise(&mut self, func: &str, args: &[HostValue]) -> DResult<(String, Vec<ArgType>)> {
        let sig: Vec<ArgType> = args.iter().map(|a| a.arg_type()).collect();
        let key = (func.to_string(), sig);
        if !self.cache.contains_key(&key) {
            let compiled = self.compile(func, &key.1)?;
            self.cache.insert(key.clone(), compiled);
        }
        Ok(key)
    }

    fn compile(&mut self, func: &str, sig: &[ArgType]) -> DResult<Compiled> {
        #[cfg(feature = "cuda")]
        if self.gpu.is_some() {
            let (b, from_disk) = compile_gpu_cached(
                &self.compiler,
                &self.file,
                func,
                sig,
                &self.opts,
                self.tune,
                self.cache_dir.as_deref(),
            )?;
            if from_disk {
                self.disk_hits += 1;
            } else {
                self.compilations += 1;
            }
            let gpu = self.gpu.as_ref().expect("checked");
            match gpu.load_candidates(&b) {
                Ok(loaded) => return Ok(Compiled::Gpu(Box::new(b), loaded)),
                Err(e) if self.device == Device::Auto => {
                    tracing::warn!("the GPU rejected `{func}` ({e}); running on the CPU");
                    self.gpu = None;
                }
                Err(e) => return Err(Diagnostic::bare(e)),
            }
        }
        if self.device == Device::Gpu {
            return Err(Diagnostic::bare(
                "no usable GPU (device gpu was requested): no CUDA driver or device found",
            ));
        }
        let (f, from_disk, _) = compile_cpu_cached(&self.compiler, &self.file, func, sig, &self.opts, self.cache_dir.as_deref())?;
        if from_disk {
            self.disk_hits += 1;
        } else {
            self.compilations += 1;
        }
        Ok(Compiled::Cpu(f))
    }
}

/// The persistent-cache key of a specialisation.
fn cache_key(kind: &str, file: &SourceFile, func: &str, sig: &[ArgType], opts: &Options) -> String {
    crate::cache::key(kind, file.text(), func, &format!("{sig:?}"), &format!("{opts:?}"))
}

/// Compiles `func` of `file` for the GPU and argument types `sig`, or loads it from the
/// persistent cache in `cache_dir` (see [`crate::cache`]). With `tune`, the bundle holds
/// one candidate per vector length of [`appy_ir::TUNE_MVLS`]. Returns the bundle and
/// whether it came from the cache.
#[cfg(feature = "cuda")]
pub fn compile_gpu_cached(
    compiler: &Compiler,
    file: &SourceFile,
    func: &str,
    sig: &[ArgType],
    opts: &Options,
    tune: bool,
    cache_dir: Option<&std::path::Path>,
) -> DResult<(appy_ir::bundle::Bundle, bool)> {
    let mvls: &[i64] = if tune { &appy_ir::TUNE_MVLS } else { &[] };
    let key = cache_key(if tune { "gpu-tuned" } else { "gpu" }, file, func, sig, opts);
    let cached = cache_dir.and_then(|d| crate::cache::load(d, &key));
    let from_disk = cached
        .and_then(|v| serde_json::from_value::<appy_ir::bundle::Bundle>(v).ok())
        .filter(|b| b.version == appy_ir::bundle::BUNDLE_VERSION && b.func == func && b.args == sig);
    if let Some(b) = from_disk {
        return Ok((b, true));
    }
    let b = compiler.compile_gpu_tuned(file, func, sig, opts, mvls)?;
    if let Some(d) = cache_dir {
        crate::cache::store(d, &key, serde_json::to_value(&b).expect("bundle serializes"));
    }
    Ok((b, false))
}

/// Compiles `func` of `file` for the CPU and argument types `sig`, or loads it from the
/// persistent cache in `cache_dir`. Returns the function, whether it came from the
/// cache, and its code (the LLVM-dialect module as text).
pub fn compile_cpu_cached(
    compiler: &Compiler,
    file: &SourceFile,
    func: &str,
    sig: &[ArgType],
    opts: &Options,
    cache_dir: Option<&std::path::Path>,
) -> DResult<(crate::cpu::CpuFunction, bool, String)> {
    let key = cache_key("cpu", file, func, sig, opts);
    if let Some(d) = cache_dir
        && let Some(v) = crate::cache::load(d, &key)
    {
        match crate::cpu::CpuFunction::from_cached(compiler, &v, sig) {
            Some(f) => {
                let code = v.get("llvm").and_then(|t| t.as_str()).unwrap_or_default().to_string();
                return Ok((f, true, code));
            }
            None => {
                tracing::warn!("appy cache: invalid CPU entry for `{func}`; rebuilding");
                let _ = std::fs::remove_file(crate::cache::file_for(d, &key));
            }
        }
    }
    let (f, payload) = crate::cpu::CpuFunction::compile_with_payload(compiler, file, func, sig, opts)?;
    let code = payload.get("llvm").and_then(|t| t.as_str()).unwrap_or_default().to_string();
    if let Some(d) = cache_dir {
        crate::cache::store(d, &key, payload);
    }
    Ok((f, false, code))
}
