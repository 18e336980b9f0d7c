//! Logging: the compiler's and runtime's `tracing` events, filtered by `$APPY_LOG`
//! (`warn` by default; e.g. `APPY_LOG=debug` or `APPY_LOG=appy_passes=debug`), go to
//! the Python logger `appy`.
//!
//! Events can happen on any thread, some holding locks; taking the GIL there could
//! deadlock, so they are queued and handed to Python logging at the next safe point
//! (after each compile and each call that logged something, or `flush_logs()`).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

static QUEUE: Mutex<Vec<(Level, String)>> = Mutex::new(Vec::new());
static PENDING: AtomicBool = AtomicBool::new(false);
/// Records kept at most between two flushes.
const MAX_QUEUED: usize = 10_000;

struct Queue;

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

impl<S: Subscriber> Layer<S> for Queue {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut m = Message(String::new());
        event.record(&mut m);
        let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() < MAX_QUEUED {
            q.push((
                *event.metadata().level(),
                format!("{}: {}", event.metadata().target(), m.0.trim_start()),
            ));
        }
        PENDING.store(true, Ordering::Release);
    }
}

/// Installs the queueing subscriber (once per process; a subscriber installed by
/// someone else first is left alone).
pub fn init() {
    let filter = appy_ir::config::log()
        .and_then(|d| EnvFilter::try_new(d).ok())
        .unwrap_or_else(|| EnvFilter::new("warn"));
    let _ = tracing_subscriber::registry().with(Queue.with_filter(filter)).try_init();
}

static LOGGER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Whether records are waiting (cheap: one atomic load).
pub fn pending() -> bool {
    PENDING.load(Ordering::Acquire)
}

/// Hands the queued records to the Python logger `appy`.
#[pyfunction]
pub fn flush_logs(py: Python<'_>) -> PyResult<()> {
    if !PENDING.swap(false, Ordering::AcqRel) {
        return Ok(());
    }
    let records = std::mem::take(&mut *QUEUE.lock().unwrap_or_else(|e| e.into_inner()));
    let logger = LOGGER.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("logging")?.call_method1("getLogger", ("appy",))?.unbind())
    })?;
    for (level, msg) in records {
        let l = match level {
            Level::ERROR => 40,
            Level::WARN => 30,
            Level::INFO => 20,
            _ => 10,
        };
        logger.bind(py).call_method1("log", (l, msg))?;
    }
    Ok(())
}

/// A message to the Python logger `appy` (from code that holds the GIL).
pub fn log(py: Python<'_>, level: i32, msg: &str) {
    let logger = LOGGER.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("logging")?.call_method1("getLogger", ("appy",))?.unbind())
    });
    if let Ok(l) = logger {
        let _ = l.bind(py).call_method1("log", (level, msg));
    }
}
