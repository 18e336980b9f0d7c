//! The persistent cache: compiled specialisations and autotuning decisions, one file
//! per entry, under `$APPY_CACHE_DIR`, else `$XDG_CACHE_HOME/appy`, else
//! `~/.cache/appy` ([`appy_ir::config::cache_dir`]).
//!
//! An entry is a JSON file holding its full key, a checksum of its payload's text and
//! the payload (`{"key":…,"checksum":…,"payload":…}`, [`entry_text`]); the checksum
//! covers the payload's bytes as written, so it does not depend on how numbers are
//! parsed and printed again, and payloads may nest deeper than serde_json's default
//! limit (a GPU bundle's IR). Keys name the compiler ([`COMPILER_ID`], a hash of its
//! sources computed by the build script), the source text, function, argument types,
//! options and target (and, for GPU code, libdevice's content), so a rebuilt compiler
//! never runs code an older one compiled.
//!
//! Only this user (the effective uid) and root may write the cache: a directory that
//! someone else owns or can write (or a directory above it that is not sticky, as
//! `/tmp` is), or a link to it owned by someone else, is not used, with one warning per
//! process ([`usable`]); the cache is then off. Entries are checked on the open file:
//! one owned by someone else or writable by its group or others is ignored (and
//! replaced when the entry is stored again); so is the CPU back end's native code
//! before it is loaded (`cpu::CpuFunction::load_shared`). See docs/ROBUSTNESS.md, "Who
//! can put code into a process", for what this does not cover.
//!
//! Nothing in a trusted directory is trusted either:
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

use crate::files::{create_dir, create_new, read_private, write_atomic};
#[cfg(test)]
use crate::files::{read_regular, temporary_for};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The compiler's identity: a hash of the sources of the crates that make or run
/// compiled code, `Cargo.lock` and the LLVM version (see `build.rs`).
pub const COMPILER_ID: &str = env!("COMPILER_SOURCE_HASH");

/// The largest entry read or written (64 MiB; a tuned bundle of eight candidates is a
/// few megabytes).
pub const MAX_ENTRY_BYTES: u64 = 64 << 20;

/// The cache directory, or `None` when caching is disabled (`APPY_CACHE_DIR=` empty, no
/// home directory, or a directory others can write: see [`usable`]).
pub fn dir() -> Option<PathBuf> {
    appy_ir::config::cache_dir().filter(|d| usable(d))
}

/// Whether `dir` may hold the cache: see [`untrusted_dir`] (checked at every use, a
/// few `stat`s). The first time a directory is refused for a reason, a warning says why
/// (once per process).
pub fn usable(dir: &Path) -> bool {
    static WARNED: std::sync::LazyLock<std::sync::Mutex<std::collections::HashSet<(PathBuf, String)>>> =
        std::sync::LazyLock::new(Default::default);
    let Some((why, fix)) = untrusted_dir(dir) else {
        return true;
    };
    if WARNED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert((dir.to_path_buf(), why.clone()))
    {
        tracing::warn!("appy cache: not using {}: {why}; caching is off ({fix})", dir.display());
    }
    false
}

/// Why `dir` cannot hold the cache, and how to fix it; `None` if it can. The directory,
/// when it exists, must belong to this user or root and be writable by no one else
/// ([`crate::files::untrusted`]), and a symbolic link to it must be this user's or
/// root's; the directories above it (above the nearest existing one, if it does not
/// exist yet: it is created with mode 0700), those of the link too, must belong to this
/// user or root and be writable by no one else unless sticky (`/tmp`). appy never
/// changes the permissions of a directory it did not create.
pub fn untrusted_dir(dir: &Path) -> Option<(String, String)> {
    use std::os::unix::fs::MetadataExt;
    let own = "set APPY_CACHE_DIR to a directory of your own";
    // SAFETY: `geteuid` cannot fail.
    let me = unsafe { libc::geteuid() };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    match std::fs::symlink_metadata(dir) {
        Ok(link) => {
            if link.file_type().is_symlink() && link.uid() != me && link.uid() != 0 {
                let why = format!("it is a symbolic link owned by uid {}, not by you (uid {me})", link.uid());
                return Some((why, own.into()));
            }
            let meta = match std::fs::metadata(dir) {
                Ok(m) => m,
                Err(e) => return Some((format!("cannot follow it: {e}"), own.into())),
            };
            if !meta.is_dir() {
                return Some(("it is not a directory".into(), own.into()));
            }
            if let Some(why) = crate::files::untrusted(&meta) {
                let fix = if meta.uid() == me {
                    format!("fix with `chmod 700 {}`, or {own}", dir.display())
                } else {
                    own.to_string()
                };
                return Some((why, fix));
            }
            if link.file_type().is_symlink() {
                let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
                if let Some(p) = untrusted_ancestors(parent, true) {
                    return Some(p);
                }
            }
            untrusted_ancestors(dir, false)
        }
        Err(_) => {
            // Created later (mode 0700) below its nearest existing ancestor.
            let mut p = dir;
            loop {
                p = match p.parent() {
                    Some(q) if q.as_os_str().is_empty() && p != Path::new(".") => Path::new("."),
                    Some(q) if q.as_os_str().is_empty() => return None,
                    Some(q) => q,
                    None => return None,
                };
                if std::fs::symlink_metadata(p).is_ok() {
                    return untrusted_ancestors(p, true);
                }
            }
        }
    }
}

/// Why the directories from `start` (itself with `inclusive`) up to `/`, links resolved,
/// cannot be trusted to keep what is below them, if so.
fn untrusted_ancestors(start: &Path, inclusive: bool) -> Option<(String, String)> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: `geteuid` cannot fail.
    let me = unsafe { libc::geteuid() };
    let own = "set APPY_CACHE_DIR to a directory of your own";
    let canon = match start.canonicalize() {
        Ok(c) => c,
        Err(e) => return Some((format!("cannot resolve {}: {e}", start.display()), own.into())),
    };
    for a in canon.ancestors().skip(usize::from(!inclusive)) {
        let m = match std::fs::metadata(a) {
            Ok(m) => m,
            Err(e) => return Some((format!("cannot stat {}: {e}", a.display()), own.into())),
        };
        let mode = m.mode() & 0o7777;
        if m.uid() != me && m.uid() != 0 {
            let why = format!(
                "the directory {} above it is owned by uid {}, not by you (uid {me}) or root",
                a.display(),
                m.uid()
            );
            return Some((why, own.into()));
        }
        if mode & 0o022 != 0 && mode & 0o1000 == 0 {
            let who = if mode & 0o002 != 0 { "others" } else { "its group" };
            let why = format!("the directory {} above it is writable by {who} (mode {mode:04o})", a.display());
            return Some((why, format!("fix the permissions of {} or {own}", a.display())));
        }
    }
    None
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

/// The checksum of a payload's text, as written in the entry.
fn checksum(payload_text: &str) -> String {
    format!("{:016x}", fnv(payload_text.as_bytes()))
}

/// The text of the entry for `key` holding `payload` (what [`store`] writes):
/// `{"key":…,"checksum":…,"payload":…}`, the checksum over the payload's text.
pub fn entry_text(key: &str, payload: &serde_json::Value) -> String {
    // A payload may nest deeply (a GPU bundle's IR): see `appy_ir::stack`.
    let text = appy_ir::stack::deep(|| payload.to_string());
    format!(
        "{{\"key\":{},\"checksum\":\"{}\",\"payload\":{text}}}",
        serde_json::Value::from(key),
        checksum(&text)
    )
}

/// The payload of entry text `bytes` if it is the entry for `key` and its payload's
/// text has its checksum.
fn parse_entry(bytes: &[u8], key: &str) -> Option<serde_json::Value> {
    use serde_json::value::RawValue;
    // The fields as written (a payload is skipped over, not parsed, at any depth).
    let fields: std::collections::BTreeMap<String, Box<RawValue>> = serde_json::from_slice(bytes).ok()?;
    let text_of = |f: &str| serde_json::from_str::<String>(fields.get(f)?.get()).ok();
    let payload = fields.get("payload")?.get();
    if text_of("key")? != key || text_of("checksum")? != checksum(payload) {
        return None;
    }
    parse_deep(payload)
}

/// Parses JSON text nested at any depth (on a stack segment of its own, see
/// `appy_ir::stack`).
pub fn parse_deep(text: &str) -> Option<serde_json::Value> {
    appy_ir::stack::deep(|| {
        let mut de = serde_json::Deserializer::from_str(text);
        de.disable_recursion_limit();
        let mut values = de.into_iter::<serde_json::Value>();
        let v = values.next()?.ok()?;
        values.next().is_none().then_some(v)
    })
}

/// Looks `key` up: the cached payload if a valid entry exists. Invalid entries are
/// removed (and reported through `tracing`).
pub fn load(dir: &Path, key: &str) -> Option<serde_json::Value> {
    let always = appy_ir::config::always_compile();
    load_entry(dir, key, always && !key.contains("| tune |"))
}

/// [`load`], ignoring the entry when `bypass` is set.
pub fn load_entry(dir: &Path, key: &str, bypass: bool) -> Option<serde_json::Value> {
    if bypass || !usable(dir) {
        return None;
    }
    let p = path_for(dir, key);
    let bytes = match read_private(&p, MAX_ENTRY_BYTES) {
        Ok(Some(b)) => b,
        Ok(None) => return None,
        Err(r) if r.untrusted => {
            tracing::warn!("appy cache: ignoring {} ({}; it will be replaced)", p.display(), r.why);
            return None;
        }
        Err(r) => {
            tracing::warn!("appy cache: removing {} ({}; it will be rebuilt)", p.display(), r.why);
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
    let valid = parse_entry(&bytes, key);
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
    // Checked before the directory is made, and again after (it may have been there).
    if !usable(dir) {
        return;
    }
    if let Err(e) = create_dir(dir) {
        tracing::warn!("appy cache: cannot create {}: {e}", dir.display());
        return;
    }
    if !usable(dir) {
        return;
    }
    if let Err(e) = write_atomic(&p, text.as_bytes(), false) {
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
    let bytes = match read_private(marker, 64) {
        Ok(Some(b)) => b,
        Ok(None) => return None,
        // Someone else's: ignored.
        Err(r) if r.untrusted => return None,
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
