//! Compilation on a worker thread.
//!
//! A `Compiler` (an MLIR context) is not thread-safe, and a compile can take seconds:
//! one worker thread owns the compiler and compiles the jobs of every calling thread in
//! turn. The caller waits without the GIL and wakes every 50 ms to run Python's signal
//! handlers, so Ctrl-C interrupts the wait at once; the abandoned compile finishes in
//! the background and lands in the persistent cache, so the next call is quick.

use appy_compiler::{Compiler, Options};
use appy_ir::diag::{Diagnostic, SourceFile};
use appy_ir::types::ArgType;
use pyo3::prelude::*;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What to compile for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The CPU back end.
    Cpu,
    /// The GPU runner (tuned: one candidate per vector length).
    Gpu {
        /// Autotuning candidates.
        tune: bool,
    },
}

/// A compiled specialisation.
pub enum Artifact {
    /// For the CPU, with its code (LLVM dialect) for `dump_code`.
    Cpu(appy_runtime::cpu::CpuFunction, String),
    /// For the GPU; with the whole tuned bundle to come when this is its first
    /// candidate alone (`appy_runtime::background`).
    Gpu(Box<appy_ir::bundle::Bundle>, Option<Pending>),
}

/// The whole tuned bundle, compiled in the background.
pub type Pending = std::sync::mpsc::Receiver<Result<appy_ir::bundle::Bundle, Diagnostic>>;

/// The outcome of a job: the artifact, the trial of its first call when it came from
/// the persistent cache (see `appy_runtime::cache::Trial`), and the seconds the worker
/// took.
pub type Outcome = Result<(Artifact, Option<appy_runtime::cache::Trial>, f64), Diagnostic>;

/// A compile job.
pub struct Job {
    /// The source (named after the user's file).
    pub file: SourceFile,
    /// The function.
    pub func: String,
    /// Argument types.
    pub sig: Vec<ArgType>,
    /// Back end.
    pub target: Target,
    reply: Sender<Outcome>,
}

static WORKER: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();

fn worker() -> &'static Mutex<Sender<Job>> {
    WORKER.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name("appy-compiler".into())
            .spawn(move || {
                let mut compiler = Compiler::new();
                for job in rx {
                    let t0 = Instant::now();
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&compiler, &job)));
                    // Warnings of the program (a pragma on nothing, an unsynchronised
                    // update in a parallel loop): `FILE:LINE:COL: warning: ...` on
                    // stderr, as the `appy` command prints them.
                    for w in compiler.take_warnings() {
                        eprint!("{}", w.render());
                    }
                    let r = match r {
                        Ok(r) => r.map(|(a, trial)| (a, trial, t0.elapsed().as_secs_f64())),
                        Err(p) => {
                            // A compiler bug: start from a fresh context.
                            compiler = Compiler::new();
                            let what = p
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default();
                            Err(Diagnostic::bare(format!(
                                "internal compiler error (please report): the compiler panicked compiling `{}`: {what}",
                                job.func
                            )))
                        }
                    };
                    let _ = job.reply.send(r);
                }
            })
            .expect("spawn the compiler thread");
        Mutex::new(tx)
    })
}

fn run(compiler: &Compiler, job: &Job) -> Result<(Artifact, Option<appy_runtime::cache::Trial>), Diagnostic> {
    let opts = Options {
        bounds_check: appy_ir::config::bounds_check(),
        vector_code: appy_ir::config::gpu_vector(),
        ..Options::default()
    };
    let dir = appy_runtime::cache::dir();
    match job.target {
        Target::Cpu => {
            let c = appy_runtime::jit::compile_cpu_cached(compiler, &job.file, &job.func, &job.sig, &opts, dir.as_deref())?;
            let (f, code) = c.value;
            Ok((Artifact::Cpu(f, code), c.trial))
        }
        Target::Gpu { tune: true } if !appy_ir::config::autotune_first_call() => {
            use appy_runtime::background::{First, compile_gpu_first};
            match compile_gpu_first(compiler, &job.file, &job.func, &job.sig, &opts, dir.as_deref())? {
                First::Tuned(c) => Ok((Artifact::Gpu(Box::new(c.value), None), c.trial)),
                First::Deferred(d) => Ok((Artifact::Gpu(Box::new(d.first.value), Some(d.rest)), d.first.trial)),
            }
        }
        Target::Gpu { tune } => {
            let c = appy_runtime::jit::compile_gpu_cached(compiler, &job.file, &job.func, &job.sig, &opts, tune, dir.as_deref())?;
            Ok((Artifact::Gpu(Box::new(c.value), None), c.trial))
        }
    }
}

/// Compiles on the worker thread; waits without the GIL, running signal handlers
/// every 50 ms (a `KeyboardInterrupt` from them is returned as the error).
pub fn compile(py: Python<'_>, file: SourceFile, func: &str, sig: Vec<ArgType>, target: Target) -> PyResult<Outcome> {
    let (reply, rx): (Sender<Outcome>, Receiver<Outcome>) = channel();
    let job = Job {
        file,
        func: func.to_string(),
        sig,
        target,
        reply,
    };
    worker()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send(job)
        .map_err(|_| crate::errors::runtime_error(py, "the compiler thread has stopped"))?;
    match wait_interruptibly(py, rx) {
        Ok(Some(o)) => Ok(o),
        Ok(None) => Err(crate::errors::runtime_error(py, "the compiler thread has stopped")),
        Err((_, e)) => Err(e),
    }
}

/// Waits for what `rx` receives without the GIL, running signal handlers every 50 ms:
/// `None` when the sender is gone; on an error from a handler (a `KeyboardInterrupt`),
/// the receiver comes back with it, so that a later call can wait again.
pub fn wait_interruptibly<T: Send>(py: Python<'_>, rx: Receiver<T>) -> Result<Option<T>, (Receiver<T>, PyErr)> {
    // `Receiver` is not `Sync`: it moves into each wait and back out.
    let mut rx = rx;
    loop {
        let (r, got) = py.detach(move || {
            let got = rx.recv_timeout(Duration::from_millis(50));
            (rx, got)
        });
        rx = r;
        match got {
            Ok(o) => return Ok(Some(o)),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    return Err((rx, e));
                }
            }
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
        }
    }
}
