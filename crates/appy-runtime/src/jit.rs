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
    /// Specialisations loaded from the persistent cache whose first call is pending.
    trials: HashMap<(String, Vec<ArgType>), crate::cache::Trial>,
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
    /// The warnings of the specialisations compiled since the last call (each once:
    /// a cached specialisation is not lowered again).
    pub fn take_warnings(&self) -> Vec<appy_ir::diag::Diagnostic> {
        self.compiler.take_warnings()
    }

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
            trials: HashMap::new(),
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

    /// Compiles (or loads from the persistent cache) the specialisation of `func` for
    /// the types of `args`, without calling it.
    pub fn prepare(&mut self, func: &str, args: &[HostValue]) -> DResult<()> {
        self.specialise(func, args).map(|_| ())
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
        // The first call of code loaded from the persistent cache is a trial: if it
        // fails, the entry is evicted and the function compiled again.
        let trial = self.trials.remove(&key);
        let saved = trial.as_ref().map(|_| args.to_vec());
        let r = match self.cache.get(&key).expect("just inserted") {
            Compiled::Cpu(f) => f.call(args),
            #[cfg(feature = "cuda")]
            Compiled::Gpu(b, loaded) => {
                let gpu = self.gpu.as_ref().expect("GPU specialisations need a GPU");
                let before = args.to_vec();
                let run = crate::tune::choose(gpu, b, loaded, args).and_then(|k| gpu.run(b.candidate(k), &loaded[k], args));
                match run {
                    Ok((r, _)) => Ok(r),
                    Err(e) if trial.is_none() && self.device == Device::Auto => {
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
        };
        match (trial, r) {
            (Some(t), Ok(v)) => {
                t.passed();
                Ok(v)
            }
            (Some(t), Err(e)) => {
                tracing::warn!("`{func}`: the code loaded from the cache failed its first call ({e}); compiling it again");
                t.failed();
                self.cache.remove(&key);
                args.clone_from_slice(&saved.expect("saved with the trial"));
                self.call(func, args)
            }
            (None, r) => r,
        }
    }

    /// Compiles `func` for the types of `args` unless already done; returns the key of
    /// its specialisation.
    fn specialise(&mut self, func: &str, args: &[HostValue]) -> DResult<(String, Vec<ArgType>)> {
        let sig: Vec<ArgType> = args.iter().map(|a| a.arg_type()).collect();
        let key = (func.to_string(), sig);
        if !self.cache.contains_key(&key) {
            let (compiled, trial) = self.compile(func, &key.1)?;
            self.cache.insert(key.clone(), compiled);
            if let Some(t) = trial {
                self.trials.insert(key.clone(), t);
            }
        }
        Ok(key)
    }

    fn compile(&mut self, func: &str, sig: &[ArgType]) -> DResult<(Compiled, Option<crate::cache::Trial>)> {
        #[cfg(feature = "cuda")]
        if self.gpu.is_some() {
            let mut c = compile_gpu_cached(
                &self.compiler,
                &self.file,
                func,
                sig,
                &self.opts,
                self.tune,
                self.cache_dir.as_deref(),
            )?;
            let gpu = self.gpu.as_ref().expect("checked");
            let mut loaded = gpu.load_candidates(&c.value);
            if let (Err(e), Some(t)) = (&loaded, c.trial.take()) {
                // Code from the cache that the driver rejects: evict it, compile again.
                tracing::warn!("the GPU rejected `{func}` loaded from the cache ({e}); compiling it again");
                t.failed();
                c = compile_gpu_cached(
                    &self.compiler,
                    &self.file,
                    func,
                    sig,
                    &self.opts,
                    self.tune,
                    self.cache_dir.as_deref(),
                )?;
                loaded = gpu.load_candidates(&c.value);
            }
            if c.from_disk {
                self.disk_hits += 1;
            } else {
                self.compilations += 1;
            }
            match loaded {
                Ok(loaded) => return Ok((Compiled::Gpu(Box::new(c.value), loaded), c.trial)),
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
        let c = compile_cpu_cached(&self.compiler, &self.file, func, sig, &self.opts, self.cache_dir.as_deref())?;
        if c.from_disk {
            self.disk_hits += 1;
        } else {
            self.compilations += 1;
        }
        Ok((Compiled::Cpu(c.value.0), c.trial))
    }
}

/// The persistent-cache key of a specialisation: for GPU code it names libdevice's
/// content too.
fn cache_key(kind: &str, file: &SourceFile, func: &str, sig: &[ArgType], opts: &Options) -> String {
    let mut options = format!("{opts:?}");
    if kind.starts_with("gpu") {
        options.push(' ');
        options.push_str(&appy_compiler::target::nvptx::libdevice_id(opts));
    }
    crate::cache::key(kind, file.text(), func, &format!("{sig:?}"), &options)
}

/// A specialisation from [`compile_cpu_cached`] or [`compile_gpu_cached`].
pub struct Cached<T> {
    /// The compiled specialisation.
    pub value: T,
    /// Whether it was loaded from the persistent cache.
    pub from_disk: bool,
    /// For code loaded from the cache: the trial that its first call settles
    /// ([`crate::cache::Trial::passed`] or [`crate::cache::Trial::failed`]).
    pub trial: Option<crate::cache::Trial>,
}

/// The name, parameters and results of `func` for `sig` as the frontend derives them
/// (parsing and lowering without MLIR, a small part of a compile): what a cached
/// entry's metadata must agree with. `None` when the function does not lower (the
/// compile then reports why).
fn expected_signature(file: &SourceFile, func: &str, sig: &[ArgType]) -> Option<(String, Vec<String>, Vec<ArgType>)> {
    // The program (a tree as deep as the source's expressions) is dropped on the
    // compiler's stack segment too (`appy_ir::stack`).
    appy_ir::stack::deep(|| {
        let program = appy_frontend::parse_function(file, func).ok()?;
        let l = appy_frontend::lower::lower(file, &program, sig, &appy_frontend::lower::LowerOptions::default()).ok()?;
        Some((l.name, l.params, l.results))
    })
}

/// Compiles `func` of `file` for the GPU and argument types `sig`, or loads it from the
/// persistent cache in `cache_dir` (see [`crate::cache`]). With `tune`, the bundle holds
/// one candidate per vector length of [`appy_ir::TUNE_MVLS`]. A cached bundle is used
/// only if its metadata (version, function, parameters, argument and result types,
/// vector lengths) agrees with what the frontend derives for `sig`; otherwise it is
/// evicted and compiled again.
#[cfg(feature = "cuda")]
pub fn compile_gpu_cached(
    compiler: &Compiler,
    file: &SourceFile,
    func: &str,
    sig: &[ArgType],
    opts: &Options,
    tune: bool,
    cache_dir: Option<&std::path::Path>,
) -> DResult<Cached<appy_ir::bundle::Bundle>> {
    let mvls: &[i64] = if tune { &appy_ir::TUNE_MVLS } else { &[] };
    let key = cache_key(if tune { "gpu-tuned" } else { "gpu" }, file, func, sig, opts);
    if let Some(d) = cache_dir
        && let Some(v) = crate::cache::load(d, &key)
    {
        let bundle = serde_json::from_value::<appy_ir::bundle::Bundle>(v).ok();
        match bundle.filter(|b| bundle_agrees(b, file, func, sig, opts.mvl, mvls)) {
            Some(b) => {
                return Ok(Cached {
                    value: b,
                    from_disk: true,
                    trial: Some(crate::cache::begin_trial(d, &key)),
                });
            }
            None => {
                tracing::warn!("appy cache: the GPU entry for `{func}` does not match the function; rebuilding");
                crate::cache::evict(d, &key);
            }
        }
    }
    let b = compiler.compile_gpu_tuned(file, func, sig, opts, mvls)?;
    if let Some(d) = cache_dir {
        crate::cache::store(d, &key, serde_json::to_value(&b).expect("bundle serializes"));
    }
    Ok(Cached {
        value: b,
        from_disk: false,
        trial: None,
    })
}

/// Whether a cached bundle is the one compiling `func` for `sig` would make, as far as
/// its metadata tells.
#[cfg(feature = "cuda")]
fn bundle_agrees(b: &appy_ir::bundle::Bundle, file: &SourceFile, func: &str, sig: &[ArgType], mvl: i64, mvls: &[i64]) -> bool {
    let Some((name, params, results)) = expected_signature(file, func, sig) else {
        return false;
    };
    let mut want: Vec<i64> = std::iter::once(mvl).chain(mvls.iter().copied().filter(|m| *m != mvl)).collect();
    let mut have: Vec<i64> = (0..b.candidates()).map(|k| b.candidate(k).mvl).collect();
    want.sort_unstable();
    have.sort_unstable();
    b.mvl == mvl
        && want == have
        && (0..b.candidates()).all(|k| {
            let c = b.candidate(k);
            c.version == appy_ir::bundle::BUNDLE_VERSION && c.func == name && c.params == params && c.args == sig && c.results == results
        })
}

/// Compiles `func` of `file` for the CPU and argument types `sig`, or loads it from the
/// persistent cache in `cache_dir`. Returns the function and its code (the LLVM-dialect
/// module as text). A cached entry is used only if its function name and result types
/// agree with what the frontend derives for `sig` and its code loads; otherwise it is
/// evicted and compiled again.
pub fn compile_cpu_cached(
    compiler: &Compiler,
    file: &SourceFile,
    func: &str,
    sig: &[ArgType],
    opts: &Options,
    cache_dir: Option<&std::path::Path>,
) -> DResult<Cached<(crate::cpu::CpuFunction, String)>> {
    let key = cache_key("cpu", file, func, sig, opts);
    if let Some(d) = cache_dir
        && let Some(v) = crate::cache::load(d, &key)
    {
        let agrees = expected_signature(file, func, sig).is_some_and(|(name, _, results)| {
            v.get("name").and_then(|n| n.as_str()) == Some(name.as_str())
                && v.get("results")
                    .and_then(|r| serde_json::from_value::<Vec<ArgType>>(r.clone()).ok())
                    == Some(results)
        });
        match agrees.then(|| crate::cpu::CpuFunction::from_cached(compiler, &v, sig)).flatten() {
            Some(f) => {
                let code = v.get("llvm").and_then(|t| t.as_str()).unwrap_or_default().to_string();
                return Ok(Cached {
                    value: (f, code),
                    from_disk: true,
                    trial: Some(crate::cache::begin_trial(d, &key)),
                });
            }
            None => {
                tracing::warn!("appy cache: invalid CPU entry for `{func}`; rebuilding");
                crate::cache::evict(d, &key);
            }
        }
    }
    let (f, payload) = crate::cpu::CpuFunction::compile_with_payload(compiler, file, func, sig, opts)?;
    let code = payload.get("llvm").and_then(|t| t.as_str()).unwrap_or_default().to_string();
    if let Some(d) = cache_dir {
        crate::cache::store(d, &key, payload);
    }
    Ok(Cached {
        value: (f, code),
        from_disk: false,
        trial: None,
    })
}

#[cfg(all(test, feature = "cuda"))]
mod tests {
    use super::*;

    /// A cached GPU bundle whose metadata disagrees with the function (results,
    /// parameters, vector lengths, format version), even with a valid checksum, is
    /// evicted and compiled again. (No GPU needed: this is the compile side.)
    #[test]
    fn wrong_gpu_bundles_are_rebuilt() {
        let dir = std::env::temp_dir().join(format!("appy-jit-gpu-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let src = "import appy\n\n@appy.jit\ndef total(a, N):\n    s = 0.0\n    #pragma simd\n    for i in range(N):\n        s += a[i]\n    return s\n";
        let file = SourceFile::new("total.py", src);
        let compiler = Compiler::new();
        let sig = [
            ArgType::Array {
                dtype: appy_ir::types::DType::F64,
                rank: 1,
            },
            ArgType::Scalar {
                dtype: appy_ir::types::DType::I64,
                weak: true,
            },
        ];
        let opts = Options::default();
        let get = || compile_gpu_cached(&compiler, &file, "total", &sig, &opts, false, Some(&dir)).unwrap();
        let first = get();
        assert!(!first.from_disk);
        let again = get();
        assert!(again.from_disk && again.trial.is_some());
        again.trial.unwrap().passed();
        let entry = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "json"))
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&entry).unwrap()).unwrap();
        let key = doc["key"].as_str().unwrap().to_string();
        let edits: Vec<(&str, serde_json::Value)> = vec![
            ("results", serde_json::json!([{"Array": {"dtype": "F64", "rank": 1}}])),
            ("params", serde_json::json!(["a"])),
            ("args", serde_json::json!([])),
            ("func", serde_json::json!("other")),
            ("mvl", serde_json::json!(7)),
            ("version", serde_json::json!(0)),
        ];
        for (field, v) in edits {
            let mut payload = doc["payload"].clone();
            payload[field] = v;
            std::fs::write(&entry, crate::cache::entry_text(&key, &payload)).unwrap();
            let c = get();
            assert!(!c.from_disk, "a bundle with a wrong `{field}` was used");
            assert_eq!(c.value.results, first.value.results);
            let stored: serde_json::Value = serde_json::from_slice(&std::fs::read(&entry).unwrap()).unwrap();
            assert_eq!(stored["payload"], doc["payload"], "rewritten after `{field}`");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// GPU keys name libdevice's content, not its path.
    #[test]
    fn gpu_keys_name_libdevice_content() {
        let dir = std::env::temp_dir().join(format!("appy-jit-libdevice-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("libdevice.10.bc");
        std::fs::write(&lib, b"one").unwrap();
        let file = SourceFile::new("k.py", "x");
        let opts = Options {
            libdevice: Some(lib.clone()),
            ..Default::default()
        };
        let k1 = cache_key("gpu", &file, "f", &[], &opts);
        assert_eq!(cache_key("gpu", &file, "f", &[], &opts), k1);
        // Same path, other content (a different size, so the memo does not apply).
        std::fs::write(&lib, b"other").unwrap();
        let k2 = cache_key("gpu", &file, "f", &[], &opts);
        assert_ne!(k1, k2);
        assert!(k2.contains(&format!("libdevice={:016x}", appy_ir::fnv1a(b"other"))), "{k2}");
        // The CPU back end does not link it.
        assert!(!cache_key("cpu", &file, "f", &[], &opts).contains("libdevice="));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
