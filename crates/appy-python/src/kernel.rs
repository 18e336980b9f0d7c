//! [`Kernel`]: what an `@appy.jit` function becomes. Calling it reads the arguments,
//! finds the specialisation for their types (compiling it on the first call), and runs
//! it with the GIL released.

use crate::args::{self, Arg, Args, Naming};
use crate::compile::{self, Artifact, Target};
use crate::devarray::DeviceArray;
use crate::errors::{compile_error, runtime_error};
use appy_ir::diag::{Diagnostic, SourceFile, Span};
use appy_ir::types::{ArgType, DType};
use appy_runtime::RunError;
use appy_runtime::cpu::{CpuFunction, RawArg, RawResult, scalar_bits};
use appy_runtime::gpu::{Candidates, RunOptions};
use appy_runtime::{Device, HostValue};
use numpy::{PyArrayDyn, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};
use pyo3::{IntoPyObjectExt, intern};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

/// The program's runtime error as Python and NumPy raise it: `AssertionError` for a
/// failed `assert`, `IndexError` for an index out of bounds (checked mode),
/// `ValueError` for a negative dimension, a negative exponent of an integer power, a
/// loop that breaks an `assume(...)` clause, or a tuple stored into a row of another
/// length.
fn program_error(msg: String) -> PyErr {
    if msg.contains(": error: AssertionError: ") {
        pyo3::exceptions::PyAssertionError::new_err(msg)
    } else if msg.contains("negative dimensions")
        || msg.contains("negative integer powers")
        || msg.contains("assumption does not hold")
        || msg.contains("could not broadcast input array")
    {
        pyo3::exceptions::PyValueError::new_err(msg)
    } else {
        pyo3::exceptions::PyIndexError::new_err(msg)
    }
}

/// A specialisation's key: the back end and the argument types.
type SpecKey = (Target, Vec<ArgType>);

/// A compiled specialisation.
enum Spec {
    Cpu(CpuFunction),
    Gpu {
        bundle: Box<appy_ir::bundle::Bundle>,
        loaded: Candidates,
        /// The candidates on GPUs 1, 2, ... when calls split their launches between
        /// GPUs (`APPY_DEVICES`), made at the first such call.
        peers: std::sync::OnceLock<Vec<Candidates>>,
        /// When `bundle` is the first candidate alone: the whole tuned bundle, being
        /// compiled in the background, taken at the next call (`take_tuned`).
        pending: PendingTuning,
    },
}

/// The tuned bundle a GPU specialisation waits for, if any: the receiver, and a flag
/// that every call reads without taking the lock.
struct PendingTuning {
    rx: Mutex<Option<compile::Pending>>,
    waiting: std::sync::atomic::AtomicBool,
}

impl PendingTuning {
    fn new(rx: Option<compile::Pending>) -> Self {
        let waiting = std::sync::atomic::AtomicBool::new(rx.is_some());
        PendingTuning {
            rx: Mutex::new(rx),
            waiting,
        }
    }
    /// Whether a tuned bundle is still to be taken.
    fn waiting(&self) -> bool {
        self.waiting.load(std::sync::atomic::Ordering::Acquire)
    }
    /// Takes the receiver (`None` when another thread took it).
    fn take(&self) -> Option<compile::Pending> {
        let mut g = self.rx.lock().unwrap_or_else(|e| e.into_inner());
        self.waiting.store(false, std::sync::atomic::Ordering::Release);
        g.take()
    }
    /// Puts a receiver back, for the next call to wait on.
    fn put_back(&self, rx: compile::Pending) {
        let mut g = self.rx.lock().unwrap_or_else(|e| e.into_inner());
        *g = Some(rx);
        self.waiting.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// The function's source as the compiler sees it, and how to map its locations back
/// to the user's file.
struct Source {
    /// The text compiled: the user's file with everything but the imports and this
    /// function blanked (same lines), the function dedented by `indent`.
    file: SourceFile,
    /// The user's file.
    real: Option<SourceFile>,
    indent: usize,
    lines: (usize, usize),
}

impl Source {
    /// Moves a diagnostic's location from the compiled text to the user's file.
    fn relocate(&self, mut d: Diagnostic) -> Diagnostic {
        let (Some(real), Some(span)) = (&self.real, d.span) else { return d };
        if d.file.as_ref().is_none_or(|f| f.text() != self.file.text()) {
            return d;
        }
        let map = |off: usize| {
            let (l, c) = self.file.line_col(off);
            let c = if (self.lines.0..=self.lines.1).contains(&l) {
                c + self.indent
            } else {
                c
            };
            real.offset(l, c)
        };
        d.span = Some(Span::new(map(span.start), map(span.end).max(map(span.start))));
        d.file = Some(real.clone());
        d
    }
}

/// An `@appy.jit` function (the Python class `appy.Dispatcher` derives from it).
#[pyclass(frozen, subclass, dict, weakref, module = "appy._native", name = "Kernel")]
pub struct Kernel {
    func: String,
    params: Vec<String>,
    source: Option<Source>,
    filename: String,
    device: Option<Device>,
    dump_code: bool,
    /// `dump_code_to_file=PATH`: the generated code of each compilation written there.
    dump_file: Option<String>,
    /// `dry_run=True` (APPy's option): each call compiles its specialisation, then runs
    /// the original Python function instead of the compiled code.
    dry_run: bool,
    /// `verbose_block_loop=True`: each compilation prints how the loops were blocked.
    verbose_blocks: bool,
    specs: RwLock<HashMap<SpecKey, Arc<Spec>>>,
    /// Specialisations loaded from the persistent cache whose first call is pending
    /// (see `appy_runtime::cache::Trial`), and whether there are any (checked per call).
    trials: Mutex<HashMap<SpecKey, appy_runtime::cache::Trial>>,
    any_trials: std::sync::atomic::AtomicBool,
}

#[pymethods]
impl Kernel {
    /// `Kernel(func, params, filename, text, real_text, indent, first_line, last_line,
    /// device, dump_code, dump_code_to_file, dry_run, verbose_block_loop)`: `text` is the
    /// source the compiler reads (None when the function's source could not be found),
    /// `real_text` the user's file.
    #[new]
    #[pyo3(signature = (func, params, filename, text=None, real_text=None, indent=0, first_line=0, last_line=0, device=None, dump_code=false, dump_code_to_file=None, dry_run=false, verbose_block_loop=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        func: String,
        params: Vec<String>,
        filename: String,
        text: Option<String>,
        real_text: Option<String>,
        indent: usize,
        first_line: usize,
        last_line: usize,
        device: Option<&str>,
        dump_code: bool,
        dump_code_to_file: Option<String>,
        dry_run: bool,
        verbose_block_loop: bool,
    ) -> PyResult<Self> {
        let device = device
            .map(|d| d.parse::<Device>())
            .transpose()
            .map_err(pyo3::exceptions::PyValueError::new_err)?;
        let source = text.map(|t| Source {
            file: SourceFile::new(filename.clone(), t),
            real: real_text.map(|r| SourceFile::new(filename.clone(), r)),
            indent,
            lines: (first_line, last_line),
        });
        Ok(Kernel {
            func,
            params,
            source,
            filename,
            device,
            dump_code,
            dump_file: dump_code_to_file,
            dry_run,
            verbose_blocks: verbose_block_loop,
            specs: RwLock::new(HashMap::new()),
            trials: Mutex::new(HashMap::new()),
            any_trials: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Calls the function (see the package documentation).
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(slf: &Bound<'py, Self>, args: &Bound<'py, PyTuple>, kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let bound;
        let args = if kwargs.is_some_and(|k| !k.is_empty()) || args.len() != this.params.len() {
            bound = slf.call_method1(intern!(py, "_bind"), (args, kwargs))?.cast_into::<PyTuple>()?;
            &bound
        } else {
            args
        };
        let naming = Naming {
            func: &this.func,
            params: &this.params,
        };
        let a = args::extract(py, args, &naming)?;
        if this.dry_run {
            // APPy's `dry_run`: compile (errors and dumped code as usual), then the
            // function's sequential meaning, run by Python on the same arguments.
            this.prepare(py, &a)?;
            drop(a);
            return Ok(slf.getattr(intern!(py, "py_func"))?.call1(args)?.unbind());
        }
        let r = this.run(py, &a);
        let r = r.and_then(|v| {
            args::write_back(py, &a)?;
            Ok(v)
        });
        drop(a);
        if crate::log::pending() {
            crate::log::flush_logs(py)?;
        }
        r
    }

    /// The argument signatures compiled so far, e.g. `['cpu(f64[:], int)']`.
    fn signatures(&self) -> Vec<String> {
        let specs = self.specs.read().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<String> = specs
            .keys()
            .map(|(t, sig)| {
                let t = match t {
                    Target::Cpu => "cpu",
                    Target::Gpu { .. } => "gpu",
                };
                format!("{t}({})", sig.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", "))
            })
            .collect();
        v.sort();
        v
    }
}

static NP_SCALARS: PyOnceLock<Vec<Py<PyAny>>> = PyOnceLock::new();
static FRAMEWORKS: PyOnceLock<Mutex<HashMap<&'static str, Py<PyAny>>>> = PyOnceLock::new();

impl Kernel {
    /// The back end for a call.
    fn target(&self, py: Python<'_>, a: &Args<'_>) -> PyResult<Target> {
        static TUNE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let tune = *TUNE.get_or_init(appy_ir::config::autotune);
        let device = self.device.unwrap_or_else(crate::default_device);
        if a.any_device {
            if device == Device::Cpu {
                return Err(runtime_error(
                    py,
                    format!(
                        "`{}`: GPU arrays were passed, but the device is `cpu` (use appy.device('auto') or 'gpu')",
                        self.func
                    ),
                ));
            }
            crate::gpu_with(py).map_err(|e| runtime_error(py, format!("`{}`: GPU arrays were passed, but {e}", self.func)))?;
            return Ok(Target::Gpu { tune });
        }
        Ok(match device {
            Device::Cpu => Target::Cpu,
            Device::Gpu => {
                crate::gpu_with(py).map_err(|e| runtime_error(py, format!("no usable GPU (device `gpu` was requested): {e}")))?;
                Target::Gpu { tune }
            }
            Device::Auto => {
                if crate::gpu_with(py).is_ok() {
                    Target::Gpu { tune }
                } else {
                    Target::Cpu
                }
            }
        })
    }

    /// The specialisation for a call's arguments, compiled on its first use.
    fn prepare(&self, py: Python<'_>, a: &Args<'_>) -> PyResult<(SpecKey, Arc<Spec>)> {
        let target = self.target(py, a)?;
        let key = (target, a.args.iter().map(|x| x.arg_type()).collect::<Vec<_>>());
        let found = self.specs.read().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
        let spec = match found {
            Some(s) if matches!(&*s, Spec::Gpu { pending, .. } if pending.waiting()) => self.take_tuned(py, &key, s)?,
            Some(s) => s,
            None => self.specialise(py, key.clone())?,
        };
        Ok((key, spec))
    }

    /// A later call of a specialisation whose first call ran its first candidate alone:
    /// the whole tuned bundle replaces it, once the background compilers are done
    /// (waited for without the GIL; Ctrl-C stops the wait, and the next call waits
    /// again). If a candidate failed to compile, the first candidate goes on running,
    /// untuned, with a warning.
    fn take_tuned(&self, py: Python<'_>, key: &SpecKey, spec: Arc<Spec>) -> PyResult<Arc<Spec>> {
        let Spec::Gpu { pending, .. } = &*spec else { return Ok(spec) };
        // Another thread may have taken it.
        let Some(rx) = pending.take() else {
            return Ok(spec);
        };
        let t0 = std::time::Instant::now();
        let got = match crate::compile::wait_interruptibly(py, rx) {
            Ok(got) => got,
            Err((rx, e)) => {
                // Interrupted: the next call waits again.
                pending.put_back(rx);
                return Err(e);
            }
        };
        if crate::log::pending() {
            crate::log::flush_logs(py)?;
        }
        match got {
            Some(Ok(b)) => {
                crate::log::log(
                    py,
                    20,
                    &format!(
                        "{}: {} autotuning candidates ready (waited {:.1} ms)",
                        self.func,
                        b.candidates(),
                        t0.elapsed().as_secs_f64() * 1e3
                    ),
                );
                let tuned = Arc::new(Spec::Gpu {
                    loaded: Candidates::new(&b),
                    peers: Default::default(),
                    bundle: Box::new(b),
                    pending: PendingTuning::new(None),
                });
                self.specs
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key.clone(), tuned.clone());
                Ok(tuned)
            }
            Some(Err(d)) => {
                crate::log::log(
                    py,
                    30,
                    &format!("{}: not autotuned, a candidate failed to compile: {}", self.func, d.message),
                );
                Ok(spec)
            }
            None => Ok(spec),
        }
    }

    fn run(&self, py: Python<'_>, a: &Args<'_>) -> PyResult<Py<PyAny>> {
        let (key, spec) = self.prepare(py, a)?;
        let r = match &*spec {
            Spec::Cpu(f) => self.run_cpu(py, f, a),
            Spec::Gpu { bundle, loaded, peers, .. } => self.run_gpu(py, bundle, (loaded, peers), a),
        };
        if self.any_trials.load(std::sync::atomic::Ordering::Acquire) {
            self.settle_trial(py, &key, &r);
        }
        r
    }

    /// The first call of a specialisation loaded from the persistent cache returned:
    /// the entry is good, or (it failed, not by an interrupt) evicted and the
    /// specialisation compiled again at the next call.
    fn settle_trial(&self, py: Python<'_>, key: &SpecKey, r: &PyResult<Py<PyAny>>) {
        let mut trials = self.trials.lock().unwrap_or_else(|e| e.into_inner());
        let Some(t) = trials.remove(key) else { return };
        if trials.is_empty() {
            self.any_trials.store(false, std::sync::atomic::Ordering::Release);
        }
        drop(trials);
        match r {
            Err(e) if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) => {
                t.failed();
                self.specs.write().unwrap_or_else(|e| e.into_inner()).remove(key);
            }
            _ => t.passed(),
        }
    }

    /// Compiles (or loads from the persistent cache) the specialisation for `key`.
    fn specialise(&self, py: Python<'_>, key: SpecKey) -> PyResult<Arc<Spec>> {
        let Some(src) = &self.source else {
            return Err(runtime_error(
                py,
                format!(
                    "the source of `{}` is not available (appy compiles functions defined in files; inspect.getsource failed)",
                    self.func
                ),
            ));
        };
        let t0 = std::time::Instant::now();
        let outcome = compile::compile(py, src.file.clone(), &self.func, key.1.clone(), key.0)?;
        if crate::log::pending() {
            crate::log::flush_logs(py)?;
        }
        let (artifact, trial, secs) = outcome.map_err(|d| compile_error(py, &src.relocate(d), (&self.filename, src.lines.0)))?;
        let from_disk = trial.is_some();
        let sig = key.1.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", ");
        let what = if from_disk { "loaded from the cache" } else { "compiled" };
        let spec = match artifact {
            Artifact::Cpu(f, code) => {
                self.dump(py, &code)?;
                if self.verbose_blocks {
                    print_code(
                        py,
                        &format!(
                            "[appy] {}({sig}) for the CPU: each parallel loop's iterations are split among the OpenMP threads; loops are not blocked (LLVM vectorises the innermost ones)",
                            self.func
                        ),
                    )?;
                }
                Spec::Cpu(f)
            }
            Artifact::Gpu(bundle, pending) => {
                self.dump(py, &bundle.ptx)?;
                if self.verbose_blocks {
                    let names: Vec<&str> = bundle.kernels.iter().map(|k| k.name.as_str()).collect();
                    let mut mvls: Vec<i64> = std::iter::once(bundle.mvl).chain(bundle.variants.iter().map(|v| v.mvl)).collect();
                    if pending.is_some() {
                        mvls.extend(appy_ir::TUNE_MVLS);
                    }
                    mvls.sort_unstable();
                    mvls.dedup();
                    print_code(
                        py,
                        &format!(
                            "[appy] {}({sig}) for the GPU: {} kernel(s) ({}), one per parallel loop nest; each loop blocked into groups of MVL iterations (one thread block per group), MVL {} ({})",
                            self.func,
                            names.len(),
                            names.join(", "),
                            mvls.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(", "),
                            if pending.is_some() {
                                "the first call runs MVL 1024 while the others compile in the background; the second call tunes"
                            } else if mvls.len() > 1 {
                                "autotuned on the first call"
                            } else {
                                "not tuned"
                            }
                        ),
                    )?;
                }
                // Candidates load on their first use: code from the cache that the
                // driver rejects fails that call, and the entry is evicted then
                // (`settle_trial`).
                let loaded = Candidates::new(&bundle);
                Spec::Gpu {
                    bundle,
                    loaded,
                    peers: Default::default(),
                    pending: PendingTuning::new(pending),
                }
            }
        };
        crate::log::log(
            py,
            20,
            &format!(
                "{what} {}({sig}) for the {} in {:.1} ms (wall {:.1} ms)",
                self.func,
                if key.0 == Target::Cpu { "CPU" } else { "GPU" },
                secs * 1e3,
                t0.elapsed().as_secs_f64() * 1e3
            ),
        );
        let spec = Arc::new(spec);
        if let Some(t) = trial {
            self.trials.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), t);
            self.any_trials.store(true, std::sync::atomic::Ordering::Release);
        }
        self.specs.write().unwrap_or_else(|e| e.into_inner()).insert(key, spec.clone());
        Ok(spec)
    }

    fn run_cpu(&self, py: Python<'_>, f: &CpuFunction, a: &Args<'_>) -> PyResult<Py<PyAny>> {
        // The shapes compiled code sees: a complex array has one more axis, of its parts.
        let shapes: Vec<Vec<usize>> = a
            .args
            .iter()
            .map(|x| match x {
                Arg::Host { dtype, shape, .. } if dtype.is_complex() => [shape.as_slice(), &[2]].concat(),
                Arg::Host { shape, .. } => shape.clone(),
                _ => vec![],
            })
            .collect();
        let mut raw = Vec::with_capacity(a.args.len());
        for (x, shape) in a.args.iter().zip(&shapes) {
            raw.push(match x {
                Arg::Host { ptr, .. } => RawArg::Array {
                    ptr: *ptr,
                    shape,
                    strides: None,
                },
                Arg::Scalar(v) => RawArg::Scalar(scalar_bits(v).expect("scalar")),
                Arg::Device { .. } => unreachable!("device arrays select the GPU"),
            });
        }
        struct Raw<'a>(Vec<RawArg<'a>>);
        // SAFETY: the pointers are the caller's arrays, kept alive (and not resizable:
        // referenced) by `a` for the call; the compiled code may run on any thread.
        unsafe impl Send for Raw<'_> {}
        let raw = Raw(raw);
        // SAFETY: the specialisation was compiled for exactly these argument types.
        let results = py.detach(move || {
            let raw = raw;
            unsafe { f.call_raw(&raw.0) }
        });
        let results = match results {
            Ok(r) => r,
            Err(e) => return Err(program_error(self.relocate_line(e))),
        };
        self.raise_warnings(py)?;
        let mut out = Vec::with_capacity(results.len());
        for r in &results {
            out.push(match r {
                RawResult::Scalar(v) => scalar(py, v, a.framework.is_some())?,
                RawResult::Alias(k) => a.objs[*k].clone().unbind(),
                RawResult::Array(arr) => {
                    let n = new_numpy(py, arr.dtype, &arr.shape, arr.bytes())?;
                    convert(py, n, a.framework)?
                }
            });
        }
        drop(results);
        pack(py, out)
    }

    /// Raises the runtime warnings of the calls so far (integer division by zero) as
    /// Python `RuntimeWarning`s, as NumPy does.
    fn raise_warnings(&self, py: Python<'_>) -> PyResult<()> {
        for w in appy_runtime::status::take_warnings() {
            let msg = std::ffi::CString::new(self.relocate_line(w)).unwrap_or_default();
            PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(), &msg, 1)?;
        }
        Ok(())
    }

    /// A runtime message `FILE:LINE:COL: ...` with the column in the user's file.
    fn relocate_line(&self, msg: String) -> String {
        let Some(src) = &self.source else { return msg };
        if src.indent == 0 {
            return msg;
        }
        let mut parts = msg.splitn(4, ':');
        let (Some(f), Some(l), Some(c), Some(rest)) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return msg;
        };
        match (l.parse::<usize>(), c.parse::<usize>()) {
            (Ok(l), Ok(c)) if (src.lines.0..=src.lines.1).contains(&l) => format!("{f}:{l}:{}:{rest}", c + src.indent),
            _ => msg,
        }
    }

    /// A call on the GPU (`loaded`: the candidates on GPU 0 and, when launches are split
    /// between GPUs, on the others).
    fn run_gpu(
        &self,
        py: Python<'_>,
        b: &appy_ir::bundle::Bundle,
        (loaded, peers): (&Candidates, &std::sync::OnceLock<Vec<Candidates>>),
        a: &Args<'_>,
    ) -> PyResult<Py<PyAny>> {
        let (mut vals, before) = crate::lend::host_values(py, &a.args)?;
        let on_device = a.any_device;
        let interrupted: Mutex<Option<PyErr>> = Mutex::new(None);
        let r = py.detach(|| {
            let gpu = crate::gpu().map_err(RunError::Unavailable)?;
            let gpus = gpu.lock().unwrap_or_else(|e| e.into_inner());
            let g = &gpus[0];
            let stop = || {
                Python::attach(|py| match py.check_signals() {
                    Ok(()) => false,
                    Err(e) => {
                        *interrupted.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                        true
                    }
                })
            };
            let k = appy_runtime::tune::choose_with(g, b, loaded, &vals, Some(&stop))?;
            // On device arrays the call returns once its work is queued on the
            // default stream, as CuPy's and torch's do (docs/PYTHON.md, "Devices").
            let opts = RunOptions {
                results_on_device: on_device,
                interrupt: Some(&stop),
                return_early: on_device,
            };
            let l = loaded.get(g, b, k)?;
            let (res, timing) = if gpus.len() > 1 && !on_device {
                // Every launch split between the GPUs (docs/MAPPING.md).
                let others = peers.get_or_init(|| gpus[1..].iter().map(|_| Candidates::new(b)).collect());
                let mut ls = vec![l];
                for (gd, c) in gpus[1..].iter().zip(others) {
                    ls.push(c.get(gd, b, k)?);
                }
                appy_runtime::gpu::Gpu::run_split(&gpus, &ls, &[], b.candidate(k), &mut vals, &opts)?
            } else {
                g.run_with(b.candidate(k), l, &mut vals, &opts)?
            };
            // Results in new device memory belong to the caller from here on.
            let mut owned = vec![];
            for v in &res {
                if let HostValue::Device { ptr, .. } = v
                    && !vals.iter().any(|x| matches!(x, HostValue::Device { ptr: p, .. } if p == ptr))
                    && !owned.iter().any(|(p, _)| p == ptr)
                {
                    owned.push((*ptr, Arc::new(g.adopt(*ptr))));
                }
            }
            Ok::<_, RunError>((res, owned, timing.returned_args))
        });
        let (res, owned, returned_args) = match r {
            Ok(x) => x,
            Err(e) => {
                if let Some(err) = interrupted.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    return Err(err);
                }
                if let RunError::Checked(m) = e {
                    return Err(program_error(self.relocate_line(m)));
                }
                return Err(runtime_error(py, format!("`{}` failed on the GPU: {e}", self.func)));
            }
        };
        self.raise_warnings(py)?;
        // Host arrays: the results back into the caller's memory.
        crate::lend::write_back(&a.args, &vals, &before);
        let mut out = Vec::with_capacity(res.len());
        for (i, v) in res.into_iter().enumerate() {
            out.push(match v {
                // `return a` of a NumPy argument: that array (updated in place above).
                HostValue::Array(_)
                    if returned_args
                        .get(i)
                        .copied()
                        .flatten()
                        .is_some_and(|p| matches!(a.args.get(p), Some(Arg::Host { .. }))) =>
                {
                    a.objs[returned_args[i].expect("checked")].clone().unbind()
                }
                HostValue::Array(arr) => {
                    let n = new_numpy(py, arr.dtype, &arr.shape, &arr.data)?;
                    convert(py, n, a.framework)?
                }
                HostValue::Device { ptr, dtype, shape } => {
                    let alias = a.args.iter().position(|x| matches!(x, Arg::Device { ptr: p, .. } if *p == ptr));
                    match alias {
                        Some(k) => a.objs[k].clone().unbind(),
                        None => {
                            let buf = owned
                                .iter()
                                .find(|(p, _)| *p == ptr)
                                .map(|(_, b)| b.clone())
                                .expect("adopted above");
                            let d = Bound::new(py, DeviceArray::shared(buf, dtype, shape))?.into_any().unbind();
                            convert(py, d, a.framework)?
                        }
                    }
                }
                s => scalar(py, &s, a.framework.is_some())?,
            });
        }
        pack(py, out)
    }
}

/// A Python value for a scalar result: Python `float`/`int` for weakly typed float64
/// and int64 results (as Python computes them) and for calls on torch/CuPy/JAX arrays
/// (as their `.item()` gives), NumPy scalars (`np.float32`, ...) otherwise, as NumPy
/// computes them.
fn scalar(py: Python<'_>, v: &HostValue, python: bool) -> PyResult<Py<PyAny>> {
    // NumPy's scalar types, in the order of `DType::ALL`.
    // (NumPy has no bfloat16: a bfloat16 scalar is returned as a float32 of its value.)
    let np = NP_SCALARS.get_or_try_init(py, || -> PyResult<Vec<Py<PyAny>>> {
        let np = py.import("numpy")?;
        DType::ALL
            .iter()
            .map(|d| Ok(np.getattr(if *d == DType::BF16 { "float32" } else { d.numpy() })?.unbind()))
            .collect()
    })?;
    let ty = |d: DType| &np[DType::ALL.iter().position(|x| *x == d).unwrap_or(0)];
    Ok(match v {
        HostValue::Bool(b) => b.into_py_any(py)?,
        HostValue::Float(f, DType::F64, true) => f.into_py_any(py)?,
        HostValue::Float(f, _, _) if python => f.into_py_any(py)?,
        HostValue::Float(f, d, _) => ty(*d).call1(py, (*f,))?,
        HostValue::Int(i, DType::I64, true) => i.into_py_any(py)?,
        HostValue::Int(i, DType::U64, _) if python => (*i as u64).into_py_any(py)?,
        HostValue::Int(i, _, _) if python => i.into_py_any(py)?,
        HostValue::Int(i, DType::U64, _) => ty(DType::U64).call1(py, (*i as u64,))?,
        HostValue::Int(i, d, _) => ty(*d).call1(py, (*i,))?,
        HostValue::Array(_) | HostValue::Device { .. } => unreachable!("arrays are converted by the caller"),
    })
}

/// A new NumPy array with a copy of `bytes`.
fn new_numpy(py: Python<'_>, dtype: DType, shape: &[usize], bytes: &[u8]) -> PyResult<Py<PyAny>> {
    fn make<T: numpy::Element>(py: Python<'_>, shape: &[usize], bytes: &[u8]) -> Py<PyAny> {
        // SAFETY: a new uninitialised array, filled completely before it is returned.
        unsafe {
            let a = PyArrayDyn::<T>::new(py, shape, false);
            if !bytes.is_empty() {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), a.data() as *mut u8, bytes.len());
            }
            a.into_any().unbind()
        }
    }
    let n = appy_runtime::array::bytes_of(dtype, shape).map_err(|e| runtime_error(py, format!("a result is {e}")))?;
    if bytes.len() != n {
        return Err(runtime_error(py, "internal error: result size mismatch"));
    }
    Ok(match dtype {
        DType::F32 => make::<f32>(py, shape, bytes),
        DType::F64 => make::<f64>(py, shape, bytes),
        DType::I32 => make::<i32>(py, shape, bytes),
        DType::I64 => make::<i64>(py, shape, bytes),
        DType::I8 => make::<i8>(py, shape, bytes),
        DType::I16 => make::<i16>(py, shape, bytes),
        DType::U8 => make::<u8>(py, shape, bytes),
        DType::U16 => make::<u16>(py, shape, bytes),
        DType::U32 => make::<u32>(py, shape, bytes),
        DType::U64 => make::<u64>(py, shape, bytes),
        DType::Bool => make::<bool>(py, shape, bytes),
        // The bits as uint16, viewed as NumPy's float16.
        DType::F16 => make::<u16>(py, shape, bytes)
            .bind(py)
            .call_method1(intern!(py, "view"), ("float16",))?
            .unbind(),
        // The parts as floats of one more axis, viewed as NumPy's complex type.
        DType::C64 | DType::C128 => {
            let parts = [shape, &[2]].concat();
            let a = if dtype == DType::C64 {
                make::<f32>(py, &parts, bytes)
            } else {
                make::<f64>(py, &parts, bytes)
            };
            a.bind(py)
                .call_method1(intern!(py, "view"), (dtype.numpy(),))?
                .call_method1(intern!(py, "reshape"), (shape.to_vec(),))?
                .unbind()
        }
        DType::BF16 => {
            return Err(runtime_error(
                py,
                "a bfloat16 result cannot be a NumPy array (NumPy has no bfloat16): call the function on torch or JAX arrays",
            ));
        }
    })
}

/// A result array as an array of the arguments' library (torch, CuPy, JAX), through
/// DLPack (no copy); unchanged when the arguments were NumPy arrays.
fn convert(py: Python<'_>, arr: Py<PyAny>, framework: Option<&'static str>) -> PyResult<Py<PyAny>> {
    let Some(fw) = framework else { return Ok(arr) };
    let table = FRAMEWORKS.get_or_init(py, Default::default);
    let f = {
        let t = table.lock().unwrap_or_else(|e| e.into_inner());
        t.get(fw).map(|f| f.clone_ref(py))
    };
    let f = match f {
        Some(f) => f,
        None => {
            let f = match fw {
                "torch" => py.import("torch")?.getattr("from_dlpack")?,
                "cupy" => py.import("cupy")?.getattr("from_dlpack")?,
                _ => py.import("jax.dlpack")?.getattr("from_dlpack")?,
            }
            .unbind();
            table.lock().unwrap_or_else(|e| e.into_inner()).insert(fw, f.clone_ref(py));
            f
        }
    };
    f.call1(py, (arr,))
}

impl Kernel {
    /// `dump_code` and `dump_code_to_file`: the generated code to `sys.stdout` and to
    /// the file (written anew at each compilation, as APPy does).
    fn dump(&self, py: Python<'_>, code: &str) -> PyResult<()> {
        if self.dump_code {
            print_code(py, code)?;
        }
        if let Some(path) = &self.dump_file {
            std::fs::write(path, format!("{code}\n"))
                .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("`{}`: dump_code_to_file={path:?}: {e}", self.func)))?;
        }
        Ok(())
    }
}

/// `dump_code=True`: the generated code to `sys.stdout`.
fn print_code(py: Python<'_>, code: &str) -> PyResult<()> {
    py.import("sys")?.getattr("stdout")?.call_method1("write", (format!("{code}\n"),))?;
    Ok(())
}

/// No result: None; one: itself; several: a tuple.
fn pack(py: Python<'_>, mut out: Vec<Py<PyAny>>) -> PyResult<Py<PyAny>> {
    Ok(match out.len() {
        0 => py.None(),
        1 => out.pop().expect("one"),
        _ => PyTuple::new(py, out)?.into_any().unbind(),
    })
}
