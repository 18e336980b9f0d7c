//! The persistent cache: compiled specialisations and autotuning decisions, one file
//! per entry, under `$APPY_CACHE_DIR`, else `$XDG_CACHE_HOME/appy`, else
//! `~/.cache/appy` ([`appy_ir::config::cache_dir`]).
//!
//! An entry is a JSON file holding its full key, a checksum of its payload and the
//! payload. Keys name the compiler ([`COMPILER_ID`], a hash of its sources computed by
//! the build script), the source text, function, argument types, options and target
//! (and, for GPU code, libdevice's content), so a rebuilt compiler never runs code an
//! older one compiled.
//!
//! Nothing in the directory is trusted:
//! - files are opened without following symbolic links and without blocking, and
//!   anything but a regular file of at most [`MAX_ENTRY_BYTES`] (a FIFO, a device, a
//!   link to `/dev/zero`) is removed unread;
//! - an entry for another key, with a wrong checksum, or whose payload its user
//!   rejects (metadata that disagrees with the function, code that does not load) is
//!   removed ([`evict`]) and rebuilt;
//! - the first call of code loaded from an entry is a [`Trial`]: a marker file holds
//!   the process id until the call returns; an entry whose marker names a process that
//!   died (the code crashed it) is evicted, and one whose first call fails too;
//! - new files are created exclusively (`O_CREAT | O_EXCL`, never through a link) under
//!   an unpredictable name, with mode 0600, then renamed over the entry, so a crash
//!   never leaves half a file under a valid name and a planted link is never written
//!   through. The directory is created with mode 0700.
//!
//! `APPY_ALWAYS_COMPILE=1` ignores compiled entries (autotuning decisions are still
//! used).

#[cfg(test)]
use crate::files::temporary_for;
use crate::files::{create_dir, create_new, read_regular, write_atomic};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The compiler's identity: a hash of the sources of the crates that make or run
/// compiled code, `Cargo.lock` and the LLVM version (see `build.rs`).
pub const COMPILER_ID: &str = env!("COMPILER_SOURCE_HASH");

/// The largest entry read or written (64 MiB; a tuned bundle of eight candidates is a
/// few megabytes).
pub const MAX_ENTRY_BYTES: u64 = 64 << 20;

/// The cache directory, or `None` when caching is disabled (`APPY_CACHE_DIR=` empty or
/// no home directory).
pub fn dir() -> Option<PathBuf> {
    appy_ir::config::cache_dir()
}

/// The key text of a specialisation compiled by this compiler.
pub fn key(kind: &str, source: &str, func: &str, sig: &str, options: &str) -> String {
    key_for(COMPILER_ID, kind, source, func, sig, options)
}

/// The key text of a specialisation compiled by the compiler `compiler`.
pub fn key_for(compiler: &str, kind: &str, source: &str, func: &str, sig: &str, options: &str) -> String {
    format!(
        "appy {compiler} | {kind}{} | {func} | {sig} | {options} | {:016x}",
        if kind.starts_with("gpu") { " sm_90" } else { "" },
        fnv(source.as_bytes())
    )
}

/// FNV-1a, 64 bits ([`appy_ir::fnv1a`]).
pub fn fnv(bytes: &[u8]) -> u64 {
    appy_ir::fnv1a(bytes)
}

fn path_for(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{:016x}.json", fnv(key.as_bytes())))
}

fn marker_for(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{:016x}.trial", fnv(key.as_bytes())))
}

/// The file a key is stored in (for tests and inspection).
pub fn file_for(dir: &Path, key: &str) -> PathBuf {
    path_for(dir, key)
}

/// The checksum of a payload (over its JSON text).
fn checksum(payload: &serde_json::Value) -> String {
    format!("{:016x}", fnv(payload.to_string().as_bytes()))
}

/// The text of the entry for `key` holding `payload` (what [`store`] writes).
pub fn entry_text(key: &str, payload: &serde_json::Value) -> String {
    serde_json::json!({ "key": key, "checksum": checksum(payload), "payload": payload }).to_string()
}

/// Looks `key` up: the cached payload if a valid entry exists. Invalid entries are
/// removed (and reported through `tracing`).
pub fn load(dir: &Path, key: &str) -> Option<serde_json::Value> {
    let always = appy_ir::config::always_compile();
    load_entry(dir, key, always && !key.contains("| tune |"))
}

/// [`load`], ignoring the entry when `bypass` is set.
pub fn load_entry(dir: &Path, key: &str, bypass: bool) -> Option<serde_json::Value> {
    if bypass {
        return None;
    }
    let p = path_for(dir, key);
    let bytes = match read_regular(&p, MAX_ENTRY_BYTES) {
        Ok(Some(b)) => b,
        Ok(None) => return None,
        Err(why) => {
            tracing::warn!("appy cache: removing {} ({why}; it will be rebuilt)", p.display());
            evict(dir, key);
            return None;
        }
    };
    if let Some(pid) = stale_trial(&marker_for(dir, key)) {
        tracing::warn!(
            "appy cache: removing {} (process {pid} died during the first call of its code; it will be rebuilt)",
            p.display()
        );
        evict(dir, key);
        return None;
    }
    let parsed: Option<serde_json::Value> = serde_json::from_slice(&bytes).ok();
    let valid = parsed.as_ref().and_then(|v| {
        let payload = v.get("payload")?;
        (v.get("key")?.as_str()? == key && v.get("checksum")?.as_str()? == checksum(payload)).then(|| payload.clone())
    });
    if valid.is_none() {
        tracing::warn!("appy cache: removing invalid entry {} (it will be rebuilt)", p.display());
        evict(dir, key);
    }
    valid
}

/// Removes the entry for `key` (and its trial marker): it failed to load or to run.
pub fn evict(dir: &Path, key: &str) {
    let _ = std::fs::remove_file(path_for(dir, key));
    // The CPU back end's native code for the entry (`<entry>.<code hash>.so`), if any.
    let prefix = format!("{:016x}.", fnv(key.as_bytes()));
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with(&prefix) && name.ends_with(".so") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let _ = std::fs::remove_file(marker_for(dir, key));
}

/// Stores `payload` under `key` (errors are reported and otherwise ignored: the cache
/// is an optimisation).
pub fn store(dir: &Path, key: &str, payload: serde_json::Value) {
    let p = path_for(dir, key);
    let text = entry_text(key, &payload);
    if text.len() as u64 > MAX_ENTRY_BYTES {
        tracing::warn!(
            "appy cache: not storing {} ({} bytes, more than the limit of {MAX_ENTRY_BYTES})",
            p.display(),
            text.len()
        );
        return;
    }
    if let Err(e) = create_dir(dir).and_then(|_| write_atomic(&p, text.as_bytes(), false)) {
        tracing::warn!("appy cache: cannot write {}: {e}", p.display());
    }
}

/// The first call of code loaded from an entry. While it runs, a marker file next to
/// the entry holds this process's id; [`Trial::passed`] removes it, [`Trial::failed`]
/// evicts the entry. If the process dies in between (the code crashed it), the marker
/// stays, and the next [`load`] of the entry evicts it.
#[derive(Debug)]
pub struct Trial {
    dir: PathBuf,
    key: String,
    /// Whether this trial wrote the marker (another process may be trying the entry).
    marker: bool,
    done: bool,
}

/// Starts the trial of the entry for `key`, loaded from `dir`. When another process is
/// trying it already (or the marker cannot be written), the trial writes no marker,
/// but [`Trial::failed`] still evicts the entry.
pub fn begin_trial(dir: &Path, key: &str) -> Trial {
    let marker = create_new(&marker_for(dir, key))
        .and_then(|mut f| f.write_all(std::process::id().to_string().as_bytes()))
        .is_ok();
    Trial {
        dir: dir.to_path_buf(),
        key: key.to_string(),
        marker,
        done: false,
    }
}

impl Trial {
    /// The first call returned: the entry is good.
    pub fn passed(mut self) {
        self.done = true;
        if self.marker {
            let _ = std::fs::remove_file(marker_for(&self.dir, &self.key));
        }
    }

    /// The first call failed: the entry is removed.
    pub fn failed(mut self) {
        self.done = true;
        tracing::warn!(
            "appy cache: removing {} (its code failed its first call; it will be rebuilt)",
            path_for(&self.dir, &self.key).display()
        );
        evict(&self.dir, &self.key);
    }
}

impl Drop for Trial {
    fn drop(&mut self) {
        // Never called (or the call unwound): nothing was learnt.
        if !self.done && self.marker {
            let _ = std::fs::remove_file(marker_for(&self.dir, &self.key));
        }
    }
}

/// The process id in a trial marker, if that process no longer runs.
fn stale_trial(marker: &Path) -> Option<i32> {
    let bytes = match read_regular(marker, 64) {
        Ok(Some(b)) => b,
        Ok(None) => return None,
        // Not a marker we wrote: remove it, the entry itself was checked.
        Err(_) => {
            let _ = std::fs::remove_file(marker);
            return None;
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    if text.trim().is_empty() {
        // Being written by the process that created it.
        return None;
    }
    let pid: i32 = text.trim().parse().unwrap_or(0);
    if pid <= 0 {
        // Unreadable: treat as the trace of a crash.
        return Some(pid);
    }
    // SAFETY: signal 0 only checks that the process exists (pid > 0: one process).
    let alive = unsafe { libc::kill(pid, 0) } == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    (!alive).then_some(pid)
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
