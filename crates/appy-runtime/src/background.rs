//! Autotuning candidates compiled in the background, so that a first call does not wait
//! for them.
//!
//! A tuned GPU specialisation has one candidate per vector length of
//! [`appy_ir::TUNE_MVLS`] (and per value of the program's `tune(...)` lists). Compiling
//! them all before the first call runs multiplies the first call's compile time by
//! their number. [`compile_gpu_first`] instead returns the first candidate (the default
//! vector length, [`appy_ir::DEFAULT_MVL`]) at once, and hands the others to a pool of
//! compilers on background threads ([`compile_threads`] of them, each with its own
//! MLIR context), which compile them at the same time. The caller runs its first call
//! on the first candidate and picks up the whole bundle later
//! ([`Deferred::rest`]): the Python package waits for it at the second call of the
//! specialisation and tunes there (`crates/appy-python/src/kernel.rs`). The whole
//! bundle is then in the persistent cache, byte for byte what
//! [`Compiler::compile_gpu_tuned`] makes, so a later process loads it and its tuning
//! decision and compiles nothing.

use crate::jit::{Cached, GpuSpec, compile_gpu_cached};
use appy_compiler::{Compiler, Options};
use appy_ir::bundle::Bundle;
use appy_ir::diag::{DResult, Diagnostic, SourceFile};
use appy_ir::types::ArgType;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};

/// What the first call of a tuned GPU specialisation runs.
pub enum First {
    /// The whole bundle, from the persistent cache.
    Tuned(Cached<Bundle>),
    /// The first candidate; the others are being compiled.
    Deferred(Deferred),
}

/// The first candidate of a tuned bundle, and the whole bundle to come.
pub struct Deferred {
    /// The bundle of the first candidate alone (compiled now, or from the cache).
    pub first: Cached<Bundle>,
    /// The whole tuned bundle (the first candidate with every other as its variants),
    /// once the background compilers are done; an error when one of them failed (the
    /// first candidate can still run, untuned).
    pub rest: Receiver<DResult<Bundle>>,
}

/// The tuned bundle of `func` for `sig` from the persistent cache if it is there;
/// otherwise its first candidate (from the cache or compiled now with `compiler`), with
/// the other candidates compiled in the background and the whole bundle stored in the
/// cache when they are done.
pub fn compile_gpu_first(
    compiler: &Compiler,
    file: &SourceFile,
    func: &str,
    sig: &[ArgType],
    opts: &Options,
    cache_dir: Option<&std::path::Path>,
) -> DResult<First> {
    let tuned = GpuSpec {
        file,
        func,
        sig,
        opts,
        tune: true,
    };
    if let Some(c) = tuned.lookup(cache_dir) {
        return Ok(First::Tuned(c));
    }
    let first = compile_gpu_cached(compiler, file, func, sig, opts, false, cache_dir)?;
    let rest = finish(
        file.clone(),
        func.to_string(),
        sig.to_vec(),
        opts.clone(),
        first.value.clone(),
        cache_dir.map(PathBuf::from),
    );
    Ok(First::Deferred(Deferred { first, rest }))
}

/// How many background compilers there are: `APPY_COMPILE_THREADS`, else one fewer
/// than the cores (the caller's own thread compiles too), from 1 to 8 (a tuned bundle
/// has 8 candidates after the first: the other vector lengths and the vector code; a
/// program's `tune(...)` values add more).
pub fn compile_threads() -> usize {
    appy_ir::config::compile_threads().unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get().saturating_sub(1))
            .unwrap_or(1)
            .clamp(1, appy_ir::TUNE_MVLS.len())
    })
}

/// Compiles the candidates of `func` after `first` on the background compilers and
/// sends the assembled bundle (and stores it in the cache).
fn finish(
    file: SourceFile,
    func: String,
    sig: Vec<ArgType>,
    opts: Options,
    first: Bundle,
    cache_dir: Option<PathBuf>,
) -> Receiver<DResult<Bundle>> {
    let (reply, rx) = channel();
    let spawned = std::thread::Builder::new().name("appy-tuning".into()).spawn(move || {
        let t0 = std::time::Instant::now();
        let r = assemble(&file, &func, &sig, &opts, first);
        match &r {
            Ok(b) => {
                let tuned = GpuSpec {
                    file: &file,
                    func: &func,
                    sig: &sig,
                    opts: &opts,
                    tune: true,
                };
                tuned.store(cache_dir.as_deref(), b);
                tracing::debug!(
                    "`{func}`: {} more candidates compiled in the background in {:.1} ms",
                    b.variants.len(),
                    t0.elapsed().as_secs_f64() * 1e3
                );
            }
            Err(_) if STOPPING.load(Ordering::SeqCst) => {}
            Err(e) => tracing::warn!("`{func}`: autotuning candidates failed to compile ({}); not tuning", e.message),
        }
        let _ = reply.send(r);
    });
    if let Err(e) = spawned {
        let (reply, rx) = channel();
        let _ = reply.send(Err(Diagnostic::bare(format!("cannot start a thread: {e}"))));
        return rx;
    }
    rx
}

fn assemble(file: &SourceFile, func: &str, sig: &[ArgType], opts: &Options, mut first: Bundle) -> DResult<Bundle> {
    let choices = Compiler::tune_choices(file, func, sig, opts)?;
    let variants = Compiler::variant_options(opts, &appy_ir::TUNE_MVLS, choices);
    let (tx, rx) = channel();
    for (i, o) in variants.iter().enumerate() {
        pool().submit(Task {
            file: file.clone(),
            func: func.to_string(),
            sig: sig.to_vec(),
            opts: o.clone(),
            index: i,
            reply: tx.clone(),
        })?;
    }
    drop(tx);
    let mut out: Vec<Option<Bundle>> = vec![None; variants.len()];
    for (i, r) in rx.iter() {
        out[i] = Some(r?);
    }
    first.variants = out
        .into_iter()
        .map(|b| b.ok_or_else(|| Diagnostic::bare("a background compiler stopped")))
        .collect::<DResult<_>>()?;
    Compiler::drop_unchanged_vector_code(&mut first);
    Ok(first)
}

/// One candidate to compile.
struct Task {
    file: SourceFile,
    func: String,
    sig: Vec<ArgType>,
    opts: Options,
    index: usize,
    reply: Sender<(usize, DResult<Bundle>)>,
}

/// The background compilers: threads sharing one queue of tasks.
struct Pool {
    tx: Mutex<Sender<Task>>,
}

impl Pool {
    fn submit(&self, t: Task) -> DResult<()> {
        self.tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(t)
            .map_err(|_| Diagnostic::bare("the background compilers have stopped"))
    }
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = channel::<Task>();
        let rx = Arc::new(Mutex::new(rx));
        for k in 0..compile_threads() {
            let rx = rx.clone();
            let _ = std::thread::Builder::new()
                .name(format!("appy-compiler-{k}"))
                .spawn(move || worker(&rx));
        }
        Pool { tx: Mutex::new(tx) }
    })
}

/// Set by [`shutdown`]: tasks not started are answered with an error, not compiled.
static STOPPING: AtomicBool = AtomicBool::new(false);
/// Tasks being compiled now.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Stops the background compilers before the process exits: tasks not started are
/// dropped (their bundles are not assembled, and nothing is stored in the cache), and
/// this waits, at most `timeout`, for those being compiled. A process that exits while
/// a thread is inside LLVM could otherwise crash in LLVM's static destructors. The
/// Python package calls it at exit (`atexit`); returns whether every task finished.
pub fn shutdown(timeout: std::time::Duration) -> bool {
    STOPPING.store(true, Ordering::SeqCst);
    let t0 = std::time::Instant::now();
    while IN_FLIGHT.load(Ordering::SeqCst) > 0 {
        if t0.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    true
}

fn worker(rx: &Mutex<Receiver<Task>>) {
    let mut compiler: Option<Compiler> = None;
    loop {
        let task = {
            let rx = rx.lock().unwrap_or_else(|e| e.into_inner());
            let task = match rx.recv() {
                Ok(t) => t,
                Err(_) => return,
            };
            // Counted before the queue is let go, so that `shutdown` never sees a
            // task between the queue and the count.
            IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
            task
        };
        if STOPPING.load(Ordering::SeqCst) {
            let _ = task.reply.send((task.index, Err(Diagnostic::bare("the process is exiting"))));
            IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
            continue;
        }
        // The context is made on the first task: threads that never get one cost nothing.
        let c = compiler.get_or_insert_with(Compiler::new);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            c.compile_gpu_candidate(&task.file, &task.func, &task.sig, &task.opts)
        }));
        // The program's warnings were reported by the first candidate's compile.
        let _ = c.take_warnings();
        let r = r.unwrap_or_else(|_| {
            // A compiler bug: start from a fresh context.
            compiler = None;
            Err(Diagnostic::bare(format!(
                "internal compiler error (please report): the compiler panicked compiling a candidate of `{}`",
                task.func
            )))
        });
        let _ = task.reply.send((task.index, r));
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One kernel in the default schedule, one with a `tune(...)` list: candidates of
    /// both kinds (vector lengths, list values).
    const SRC: &str = "import appy\n\n@appy.jit\ndef add(a, b, N):\n    #pragma parallel for simd\n    for i in range(N):\n        a[i] = a[i] + b[i]\n    #pragma parallel for transform(split(i, tune(256, 128), outer=g.0, inner=l.0))\n    for i in range(N):\n        b[i] = 2.0 * a[i]\n";

    /// The assembled bundle is the one the tuned compile makes, byte for byte, and is
    /// in the cache afterwards.
    #[test]
    fn background_candidates_are_the_tuned_bundle() {
        let file = SourceFile::new("add.py", SRC);
        let sig = appy_ir::types::parse_signature("f32[:], f32[:], int").unwrap();
        let opts = Options::default();
        let compiler = Compiler::new();
        let dir = tempfile::tempdir().unwrap();
        let First::Deferred(d) = compile_gpu_first(&compiler, &file, "add", &sig, &opts, Some(dir.path())).unwrap() else {
            panic!("an empty cache has no tuned bundle")
        };
        assert!(d.first.value.variants.is_empty());
        assert_eq!(d.first.value.mvl, appy_ir::DEFAULT_MVL);
        let whole = d.rest.recv().unwrap().unwrap();
        let tuned = compiler.compile_gpu_tuned(&file, "add", &sig, &opts, &appy_ir::TUNE_MVLS).unwrap();
        assert_eq!(serde_json::to_string(&whole).unwrap(), serde_json::to_string(&tuned).unwrap());
        // 8 vector lengths, the list's second value, and the vector code.
        assert_eq!(whole.candidates(), appy_ir::TUNE_MVLS.len() + 2);
        assert!(whole.candidate(whole.candidates() - 1).vector_code);
        match compile_gpu_first(&compiler, &file, "add", &sig, &opts, Some(dir.path())).unwrap() {
            First::Tuned(c) => {
                assert!(c.from_disk);
                assert_eq!(serde_json::to_string(&c.value).unwrap(), serde_json::to_string(&tuned).unwrap());
            }
            First::Deferred(_) => panic!("the tuned bundle should be in the cache"),
        }
    }
}
