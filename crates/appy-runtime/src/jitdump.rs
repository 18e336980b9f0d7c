//! MLIR's execution engine always turns on LLVM's perf listener (the C API offers no
//! switch), which creates a `.debug/jit/llvm-IR-jit-DATE-XXXXXX` directory with a
//! `jit-PID.dump` file per process: under `$JITDUMPDIR`, else a shared default
//! (`/tmp/.debug/jit` here). Every run left one behind, and other users of a shared
//! directory got "could not initialize debugging directory" on every run.
//!
//! The listener is created once per process, with the first engine, and reads
//! `JITDUMPDIR` only then. [`quietly`] creates that first engine with `JITDUMPDIR` set
//! to a new private directory (mode 0700) and removes the directory right after (the
//! listener keeps its open file; nothing is left on disk). When the user has set
//! `JITDUMPDIR` (to profile with `perf`), it is left alone.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static DONE: AtomicBool = AtomicBool::new(false);
static LOCK: Mutex<()> = Mutex::new(());

/// Runs `make` (which creates an execution engine); the first time in a process, with
/// the perf listener's directory private and removed afterwards.
pub fn quietly<T>(make: impl FnOnce() -> T) -> T {
    if DONE.load(Ordering::Acquire) {
        return make();
    }
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if DONE.load(Ordering::Acquire) || std::env::var_os("JITDUMPDIR").is_some() {
        DONE.store(true, Ordering::Release);
        return make();
    }
    let Some(dir) = private_dir() else {
        DONE.store(true, Ordering::Release);
        return make();
    };
    // SAFETY: done once per process, under LOCK, before the engine reads it; Rust's
    // own environment accesses are synchronised with this, and no other code of
    // appy reads JITDUMPDIR.
    unsafe { std::env::set_var("JITDUMPDIR", &dir) };
    let out = make();
    // SAFETY: as above.
    unsafe { std::env::remove_var("JITDUMPDIR") };
    let _ = std::fs::remove_dir_all(&dir);
    DONE.store(true, Ordering::Release);
    out
}

/// A new directory only this user can enter, under the temporary directory.
fn private_dir() -> Option<std::path::PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    for _ in 0..8 {
        let p = crate::files::temporary_for(&std::env::temp_dir().join("appy-jitdump"));
        if std::fs::DirBuilder::new().mode(0o700).create(&p).is_ok() {
            return Some(p);
        }
    }
    None
}
