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

impl ViewArg<'_> {
    /// A Python `int` argument (as `3` is in Python: a weak int64 scalar, which takes the
    /// dtype of the arrays it meets).
    pub fn int(v: i64) -> Self {
        ViewArg::Scalar(HostValue::Int(v, appy_ir::types::DType::I64, true))
    }

    /// A Python `float` argument (as `2.0` is in Python: a weak float64 scalar).
    pub fn float(v: f64) -> Self {
        ViewArg::Scalar(HostValue::Float(v, appy_ir::types::DType::F64, true))
    }

    /// A Python `bool` argument.
    pub fn bool(v: bool) -> Self {
        ViewArg::Scalar(HostValue::Bool(v))
    }
}

macro_rules! view_from {
    ($t:ty, $v:ident) => {
        impl<'a, D: ndarray::Dimension> From<ndarray::ArrayViewMut<'a, $t, D>> for ViewArg<'a> {
            /// A mutable view of any dimension and layout.
            fn from(v: ndarray::ArrayViewMut<'a, $t, D>) -> Self {
                ViewArg::$v(v.into_dyn())
            }
        }
    };
}
view_from!(f32, F32);
view_from!(f64, F64);
view_from!(i32, I32);
view_from!(i64, I64);

/// A source file whose jitted functions can be called.
pub struct Jit {
    file: SourceFile,
    compiler: Compiler,
    opts: Options,
    device: Device,
    #[cfg(feature = "cuda")]
    gpu: Option<crate::gpu::Gpu>,
    cache: HashMap<Key, Compiled>,
    /// Specialisations loaded from the persistent cache whose first call is pending.
    trials: HashMap<Key, crate::cache::Trial>,
    compilations: usize,
    disk_hits: usize,
    object_hits: usize,
    gathered: usize,
    cache_dir: Option<std::path::PathBuf>,
    /// Compile GPU specialisations for every vector length of [`appy_ir::TUNE_MVLS`]
    /// and autotune (`APPY_AUTOTUNE=0` turns it off).
    tune: bool,
}

/// A specialisation: function, argument types, and (CPU) which parameters take strided
/// arrays (empty: none).
type Key = (String, Vec<ArgType>, Vec<bool>);

enum Compiled {
    Cpu(crate::cpu::CpuFunction),
    #[cfg(feature = "cuda")]
    Gpu(Box<appy_ir::bundle::Bundle>, crate::gpu::Candidates),
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
            opts: Options {
                bounds_check: appy_ir::config::bounds_check(),
                vector_code: appy_ir::config::gpu_vector(),
                ..Options::default()
            },
            device,
            #[cfg(feature = "cuda")]
            gpu,
            cache: HashMap::new(),
            trials: HashMap::new(),
            compilations: 0,
            tune: appy_ir::config::autotune(),
            disk_hits: 0,
            object_hits: 0,
            gathered: 0,
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

    /// How many CPU specialisations were loaded as native code (a shared object in the
    /// persistent cache, so LLVM did not run).
    pub fn object_hits(&self) -> usize {
        self.object_hits
    }

    /// How many [`Jit::call_views`] calls gathered their views into copies (on the
    /// GPU, or for a function that cannot take strided arrays).
    pub fn gathered_view_calls(&self) -> usize {
        self.gathered
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
    /// autotuned candidate); on the CPU with the wall clock. Returns seconds per call.
    /// Warm-up calls come first and are not included: one on the GPU; on the CPU as
    /// many as fit in 0.2 s of calls (at least one, at most 50). A fresh process's
    /// parallel loops can run several times slower for the first ~0.1 s (measured on a
    /// 2-core virtual machine right after another process with large arrays exited;
    /// one thread was not affected), and a single warm-up call did not cover that.
    pub fn bench(&mut self, func: &str, args: &[HostValue], reps: usize) -> DResult<Vec<f64>> {
        let key = self.specialise(func, args)?;
        match self.cache.get(&key).expect("just inserted") {
            Compiled::Cpu(f) => {
                let warm = std::time::Instant::now();
                let mut calls = 0;
                while calls == 0 || (calls < 50 && warm.elapsed().as_secs_f64() < 0.2) {
                    let mut a = args.to_vec();
                    f.call(&mut a)?;
                    calls += 1;
                }
                let mut times = vec![];
                for _ in 0..reps {
                    let mut a = args.to_vec();
                    let t0 = std::time::Instant::now();
                    f.call(&mut a)?;
                    times.push(t0.elapsed().as_secs_f64());
                }
                Ok(times)
            }
            #[cfg(feature = "cuda")]
            Compiled::Gpu(b, loaded) => {
                let gpu = self.gpu.as_ref().expect("GPU specialisations need a GPU");
                let k = crate::tune::choose(gpu, b, loaded, args).map_err(Diagnostic::bare)?;
                let l = loaded.get(gpu, b, k).map_err(Diagnostic::bare)?;
                let mut t = gpu.bench(b.candidate(k), l, args, reps + 1).map_err(Diagnostic::bare)?;
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

    /// Calls `func` with ndarray views of any layout; what the function computes is
    /// written through the views. On the CPU the function works on the views' own
    /// memory: a view that is not C-contiguous (a slice with a step, a transpose,
    /// negative strides) is passed with its strides, to a specialisation compiled for
    /// strided arrays. Only where the function cannot take a strided array (it returns
    /// it) and on the GPU are the elements gathered into a copy and written back.
    pub fn call_views(&mut self, func: &str, args: &mut [ViewArg<'_>]) -> DResult<Vec<HostValue>> {
        if !self.on_gpu()
            && let Some(r) = self.call_views_in_place(func, args)
        {
            return r;
        }
        self.gathered += 1;
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
            r.map_err(|e| Diagnostic::bare(e.to_string()))?;
        }
        Ok(ret)
    }

    /// [`Jit::call_views`] on the CPU without copies; `None` when the function cannot
    /// take the strided views (the caller gathers them).
    fn call_views_in_place(&mut self, func: &str, args: &mut [ViewArg<'_>]) -> Option<DResult<Vec<HostValue>>> {
        use crate::cpu::{RawArg, RawResult};
        use appy_ir::types::DType;
        // The view's address and strides; strided when not C-contiguous.
        fn raw<'a, T: crate::array::Element>(v: &'a mut ndarray::ArrayViewMutD<'_, T>) -> (RawArg<'a>, bool) {
            let strided = !crate::cpu::is_c_contiguous(v.shape(), v.strides());
            let ptr = v.as_mut_ptr() as *mut u8;
            let (shape, strides) = (v.shape(), v.strides());
            (
                RawArg::Array {
                    ptr,
                    shape,
                    strides: Some(strides),
                },
                strided,
            )
        }
        let array = |dtype: DType, rank: usize| ArgType::Array { dtype, rank };
        let sig: Vec<ArgType> = args
            .iter()
            .map(|a| match a {
                ViewArg::F32(v) => array(DType::F32, v.ndim()),
                ViewArg::F64(v) => array(DType::F64, v.ndim()),
                ViewArg::I32(v) => array(DType::I32, v.ndim()),
                ViewArg::I64(v) => array(DType::I64, v.ndim()),
                ViewArg::Scalar(s) => s.arg_type(),
            })
            .collect();
        if sig
            .iter()
            .any(|t| matches!(t, ArgType::Array { rank, .. } if *rank > crate::cpu::MAX_RANK))
        {
            return None;
        }
        let strided: Vec<bool> = args
            .iter_mut()
            .map(|a| match a {
                ViewArg::F32(v) => raw(v).1,
                ViewArg::F64(v) => raw(v).1,
                ViewArg::I32(v) => raw(v).1,
                ViewArg::I64(v) => raw(v).1,
                ViewArg::Scalar(_) => false,
            })
            .collect();
        let strided = if strided.contains(&true) { strided } else { vec![] };
        let key = match self.specialise_sig(func, sig, strided.clone()) {
            Ok(k) => k,
            // The function cannot take strided arrays (or does not compile at all: the
            // gathering path reports that).
            Err(_) if !strided.is_empty() => return None,
            Err(e) => return Some(Err(e)),
        };
        let Some(Compiled::Cpu(f)) = self.cache.get(&key) else {
            return None;
        };
        let raws: Vec<RawArg<'_>> = args
            .iter_mut()
            .map(|a| match a {
                ViewArg::F32(v) => raw(v).0,
                ViewArg::F64(v) => raw(v).0,
                ViewArg::I32(v) => raw(v).0,
                ViewArg::I64(v) => raw(v).0,
                ViewArg::Scalar(s) => RawArg::Scalar(crate::cpu::scalar_bits(s).unwrap_or(0)),
            })
            .collect();
        // SAFETY: the specialisation takes these types and layouts; the views are
        // borrowed mutably for the call, so nothing else accesses them.
        let results = unsafe { f.call_raw(&raws) };
        drop(raws);
        let results = match results {
            Ok(r) => r,
            Err(e) => {
                return Some(Err(
                    Diagnostic::from_runtime_line(&self.file, &e).unwrap_or_else(|| Diagnostic::bare(e))
                ));
            }
        };
        let mut out = vec![];
        for r in results {
            out.push(match r {
                RawResult::Scalar(v) => v,
                RawResult::Alias(k) => HostValue::Array(match &args[k] {
                    ViewArg::F32(v) => crate::HostArray::from_view(&v.view()),
                    ViewArg::F64(v) => crate::HostArray::from_view(&v.view()),
                    ViewArg::I32(v) => crate::HostArray::from_view(&v.view()),
                    ViewArg::I64(v) => crate::HostArray::from_view(&v.view()),
                    ViewArg::Scalar(_) => unreachable!("an array result"),
                }),
                RawResult::Array(a) => HostValue::Array(a.into_host_array()),
            });
        }
        Some(Ok(out))
    }

    /// Calls `func` with `args`; arrays are updated in place; returns the return values.
    ///
    /// In checked mode an index out of bounds is an error located at its subscript;
    /// runtime warnings are queued ([`crate::status::take_warnings`]).
    pub fn call(&mut self, func: &str, args: &mut [HostValue]) -> DResult<Vec<HostValue>> {
        self.call_unlocated(func, args).map_err(|d| match (&d.file, d.span) {
            (None, None) => Diagnostic::from_runtime_line(&self.file, &d.message).unwrap_or(d),
            _ => d,
        })
    }

    fn call_unlocated(&mut self, func: &str, args: &mut [HostValue]) -> DResult<Vec<HostValue>> {
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
                let run = crate::tune::choose(gpu, b, loaded, args)
                    .and_then(|k| Ok((k, loaded.get(gpu, b, k)?)))
                    .and_then(|(k, l)| gpu.run(b.candidate(k), l, args));
                match run {
                    Ok((r, _)) => Ok(r),
                    Err(e) if trial.is_none() && self.device == Device::Auto && !matches!(e, crate::RunError::Checked(_)) => {
                        // A GPU failure (out of memory, a launch or JIT error) with
                        // `Device::Auto`: run on the CPU instead, from the original inputs.
                        tracing::warn!("the GPU failed ({e}); running `{func}` on the CPU");
                        args.clone_from_slice(&before);
                        self.gpu = None;
                        self.cache.retain(|_, c| matches!(c, Compiled::Cpu(_)));
                        self.call_unlocated(func, args)
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
            // The program's own error (checked mode): the code is good.
            (Some(t), Err(e)) if appy_ir::status::is_program_error(&e.message) => {
                t.passed();
                Err(e)
            }
            (Some(t), Err(e)) => {
                tracing::warn!("`{func}`: the code loaded from the cache failed its first call ({e}); compiling it again");
                t.failed();
                self.cache.remove(&key);
                args.clone_from_slice(&saved.expect("saved with the trial"));
                self.call_unlocated(func, args)
            }
            (None, r) => r,
        }
    }

    /// Compiles `func` for the types of `args` unless already done; returns the key of
    /// its specialisation.
    fn specialise(&mut self, func: &str, args: &[HostValue]) -> DResult<Key> {
        let sig: Vec<ArgType> = args.iter().map(|a| a.arg_type()).collect();
        self.specialise_sig(func, sig, vec![])
    }

    fn specialise_sig(&mut self, func: &str, sig: Vec<ArgType>, strided: Vec<bool>) -> DResult<Key> {
        let key = (func.to_string(), sig, strided);
        if !self.cache.contains_key(&key) {
            let (compiled, trial) = self.compile(func, &key.1, &key.2)?;
            self.cache.insert(key.clone(), compiled);
            if let Some(t) = trial {
                self.trials.insert(key.clone(), t);
            }
        }
        Ok(key)
    }

    fn compile(&mut self, func: &str, sig: &[ArgType], strided: &[bool]) -> DResult<(Compiled, Option<crate::cache::Trial>)> {
        #[cfg(feature = "cuda")]
        if self.gpu.is_some() {
            let c = compile_gpu_cached(
                &self.compiler,
                &self.file,
                func,
                sig,
                &self.opts,
                self.tune,
                self.cache_dir.as_deref(),
            )?;
            // Candidates load on first use: a rejection by the driver then fails the
            // call, which evicts code from the cache (the trial) or, with
            // `Device::Auto`, runs on the CPU (`call_unlocated`).
            let loaded = crate::gpu::Candidates::new(&c.value);
            if c.from_disk {
                self.disk_hits += 1;
            } else {
                self.compilations += 1;
            }
            return Ok((Compiled::Gpu(Box::new(c.value), loaded), c.trial));
        }
        if self.device == Device::Gpu {
            return Err(Diagnostic::bare(
                "no usable GPU (device gpu was requested): no CUDA driver or device found",
            ));
        }
        let (c, origin) = compile_cpu_cached_with(
            &self.compiler,
            &self.file,
            func,
            sig,
            strided,
            &self.opts,
            self.cache_dir.as_deref(),
        )?;
        match origin {
            Origin::Compiled => self.compilations += 1,
            Origin::CachedModule => self.disk_hits += 1,
            Origin::CachedObject => {
                self.disk_hits += 1;
                self.object_hits += 1;
            }
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
    let spec = GpuSpec {
        file,
        func,
        sig,
        opts,
        tune,
    };
    if let Some(c) = spec.lookup(cache_dir) {
        return Ok(c);
    }
    let b = compiler.compile_gpu_tuned(file, func, sig, opts, spec.mvls())?;
    spec.store(cache_dir, &b);
    Ok(Cached {
        value: b,
        from_disk: false,
        trial: None,
    })
}

/// What a GPU specialisation is compiled from, all of which its persistent-cache key
/// names: the function of a source for argument types, the options, and whether the
/// bundle holds the autotuning candidates.
#[cfg(feature = "cuda")]
#[derive(Clone, Copy)]
pub struct GpuSpec<'a> {
    /// The source.
    pub file: &'a SourceFile,
    /// The function.
    pub func: &'a str,
    /// The argument types.
    pub sig: &'a [ArgType],
    /// The options.
    pub opts: &'a Options,
    /// With every autotuning candidate ([`appy_ir::TUNE_MVLS`]).
    pub tune: bool,
}

#[cfg(feature = "cuda")]
impl GpuSpec<'_> {
    /// The vector lengths of the candidates (none beyond `opts.mvl` untuned).
    pub fn mvls(&self) -> &'static [i64] {
        if self.tune { &appy_ir::TUNE_MVLS } else { &[] }
    }

    fn key(&self) -> String {
        cache_key(
            if self.tune { "gpu-tuned" } else { "gpu" },
            self.file,
            self.func,
            self.sig,
            self.opts,
        )
    }

    /// The bundle that [`compile_gpu_cached`] would load from the persistent cache in
    /// `cache_dir`, if there is one that agrees with the function (one that does not is
    /// evicted).
    pub fn lookup(&self, cache_dir: Option<&std::path::Path>) -> Option<Cached<appy_ir::bundle::Bundle>> {
        let d = cache_dir?;
        let key = self.key();
        let v = crate::cache::load(d, &key)?;
        // The IR nests as deep as the source's statements (see `appy_ir::stack`).
        let bundle = appy_ir::stack::deep(|| serde_json::from_value::<appy_ir::bundle::Bundle>(v).ok());
        match bundle.filter(|b| bundle_agrees(b, self.file, self.func, self.sig, self.opts.mvl, self.mvls())) {
            Some(b) => Some(Cached {
                value: b,
                from_disk: true,
                trial: Some(crate::cache::begin_trial(d, &key)),
            }),
            None => {
                tracing::warn!(
                    "appy cache: the GPU entry for `{}` does not match the function; rebuilding",
                    self.func
                );
                crate::cache::evict(d, &key);
                None
            }
        }
    }

    /// Stores `b` in the persistent cache in `cache_dir` (if any) under the key that
    /// [`GpuSpec::lookup`] reads.
    pub fn store(&self, cache_dir: Option<&std::path::Path>, b: &appy_ir::bundle::Bundle) {
        if let Some(d) = cache_dir {
            crate::cache::store(d, &self.key(), serde_json::to_value(b).expect("bundle serializes"));
        }
    }
}

/// Whether a cached bundle is the one compiling `func` for `sig` would make, as far as
/// its metadata tells.
#[cfg(feature = "cuda")]
fn bundle_agrees(b: &appy_ir::bundle::Bundle, file: &SourceFile, func: &str, sig: &[ArgType], mvl: i64, mvls: &[i64]) -> bool {
    let Some((name, params, results)) = expected_signature(file, func, sig) else {
        return false;
    };
    let mut want: Vec<i64> = std::iter::once(mvl).chain(mvls.iter().copied().filter(|m| *m != mvl)).collect();
    // The vector lengths of the first values of the `tune(...)` lists; the other
    // values' candidates come from the same source (the cache key's hash).
    let mut have: Vec<i64> = (0..b.candidates())
        .filter(|k| b.candidate(*k).choice == 0 && !b.candidate(*k).vector_code)
        .map(|k| b.candidate(k).mvl)
        .collect();
    want.sort_unstable();
    have.sort_unstable();
    b.mvl == mvl
        && want == have
        && (0..b.candidates()).all(|k| {
            let c = b.candidate(k);
            c.version == appy_ir::bundle::BUNDLE_VERSION
                && c.func == name
                && c.params == params
                && c.args.iter().cloned().eq(sig.iter().map(ArgType::abi))
                && c.results == results
        })
}

/// Where a CPU specialisation came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Compiled now.
    Compiled,
    /// Rebuilt from the persistent cache's LLVM module (LLVM ran, appy's passes did not).
    CachedModule,
    /// Loaded as native code (the cache's shared object: neither appy's passes nor LLVM
    /// ran).
    CachedObject,
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
    compile_cpu_cached_with(compiler, file, func, sig, &[], opts, cache_dir).map(|(c, _)| c)
}

/// [`compile_cpu_cached`] for parameters of any strides (`strided`, see
/// [`crate::cpu::CpuFunction::strided`]), with where the code came from. Native code is
/// specific to the host CPU and to the OpenMP and vector-math choices, which the cache
/// key includes; it is kept next to the cache entry as a shared object
/// (`<entry>.<code hash>.so`, [`crate::cpu::shared_object_path`]) and loaded with
/// `dlopen`, only for the entry whose code it was made from.
pub fn compile_cpu_cached_with(
    compiler: &Compiler,
    file: &SourceFile,
    func: &str,
    sig: &[ArgType],
    strided: &[bool],
    opts: &Options,
    cache_dir: Option<&std::path::Path>,
) -> DResult<(Cached<(crate::cpu::CpuFunction, String)>, Origin)> {
    let host = crate::cpu::host();
    let opts = host.options(opts);
    let kind = if strided.contains(&true) {
        format!("cpu {} strided {strided:?}", host.cpu)
    } else {
        format!("cpu {}", host.cpu)
    };
    let key = cache_key(&kind, file, func, sig, &opts);
    // The stem of the native code's file (see `cpu::shared_object_path`); none is
    // written into a directory the cache does not use.
    let cache_dir = cache_dir.filter(|d| crate::cache::usable(d));
    let object = cache_dir.map(|d| crate::cache::file_for(d, &key));
    if let Some(d) = cache_dir
        && let Some(v) = crate::cache::load(d, &key)
    {
        let stem = object.as_deref().expect("cache directory");
        let code = || v.get("llvm").and_then(|t| t.as_str()).unwrap_or_default().to_string();
        let so = &crate::cpu::shared_object_path(stem, &code());
        let agrees = expected_signature(file, func, sig).is_some_and(|(name, _, results)| {
            v.get("name").and_then(|n| n.as_str()) == Some(name.as_str())
                && v.get("results")
                    .and_then(|r| serde_json::from_value::<Vec<ArgType>>(r.clone()).ok())
                    == Some(results)
        });
        let cached = |f, origin| {
            Ok((
                Cached {
                    value: (f, code()),
                    from_disk: true,
                    trial: Some(crate::cache::begin_trial(d, &key)),
                },
                origin,
            ))
        };
        if agrees && so.exists() {
            match crate::cpu::CpuFunction::load_shared(so, &v, sig) {
                Ok(f) => return cached(f, Origin::CachedObject),
                Err(e) => tracing::warn!("appy cache: cannot load {} ({e}); compiling it again", so.display()),
            }
        }
        match agrees
            .then(|| crate::cpu::CpuFunction::from_cached(compiler, &v, sig, Some(stem)))
            .flatten()
        {
            Some(f) => return cached(f, Origin::CachedModule),
            None => {
                tracing::warn!("appy cache: invalid CPU entry for `{func}`; rebuilding");
                crate::cache::evict(d, &key);
            }
        }
    }
    let (f, payload) = crate::cpu::CpuFunction::compile_to(compiler, file, func, sig, strided, &opts, object.as_deref())?;
    let code = payload.get("llvm").and_then(|t| t.as_str()).unwrap_or_default().to_string();
    if let Some(d) = cache_dir {
        crate::cache::store(d, &key, payload);
    }
    Ok((
        Cached {
            value: (f, code),
            from_disk: false,
            trial: None,
        },
        Origin::Compiled,
    ))
}

#[cfg(test)]
#[path = "jit_cache_tests.rs"]
mod cache_process_tests;

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
