//! Tests: the warnings the runtime logs (through `tracing`) while a closure runs on
//! this thread.

use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Collects the messages of `WARN` and `ERROR` events.
struct Warnings(Arc<Mutex<Vec<String>>>);

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for Warnings {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        if *event.metadata().level() <= Level::WARN {
            let mut m = Message(String::new());
            event.record(&mut m);
            self.0.lock().unwrap_or_else(|e| e.into_inner()).push(m.0);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Runs `f`, returning its result and the warnings (and errors) logged meanwhile on
/// this thread.
pub fn warnings<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    let seen = Arc::new(Mutex::new(vec![]));
    let r = tracing::subscriber::with_default(Warnings(seen.clone()), f);
    let w = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    (r, w)
}

/// Runs test `name` (its path in this test binary, e.g. `cache::tests::x`) alone in a
/// new process of this test binary, with `env` set (and `APPY_ALWAYS_COMPILE` unset);
/// returns the process's output.
pub fn run_child(name: &str, env: &[(&str, &str)]) -> std::process::Output {
    let exe = std::env::current_exe().expect("the test binary");
    let mut cmd = std::process::Command::new(exe);
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env_remove(appy_ir::config::ALWAYS_COMPILE);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run the test binary")
}

/// The path of a test function of this crate in the test binary (`module_path!()`
/// without the crate name, then `func`).
pub fn test_name(module: &str, func: &str) -> String {
    let m = module.split_once("::").map(|(_, m)| m).unwrap_or(module);
    format!("{m}::{func}")
}
