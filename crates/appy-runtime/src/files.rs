//! Files appy reads from places others can write (the cache directory) and files it
//! writes (cache entries, the commands' outputs): no links followed, no blocking on a
//! FIFO, bounded reads, and atomic replacement through an exclusively created
//! temporary file.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Reads a regular file of at most `cap` bytes without following a link at `p` and
/// without blocking. `Ok(None)`: no such file; `Err`: something else is there (a link,
/// a FIFO, a device, a directory, a larger file).
pub fn read_regular(p: &Path, cap: u64) -> Result<Option<Vec<u8>>, String> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(p);
    let f = match f {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err("a symbolic link".into()),
        Err(e) => return Err(format!("cannot open it: {e}")),
    };
    let meta = f.metadata().map_err(|e| format!("cannot stat it: {e}"))?;
    if !meta.file_type().is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > cap {
        return Err(format!("{} bytes, more than the limit of {cap}", meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > cap {
        return Err(format!("more than the limit of {cap} bytes"));
    }
    Ok(Some(bytes))
}

/// Creates `dir` and its parents (mode 0700) if needed.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Creates a new file at `p` with mode 0600, never through an existing file or link.
pub fn create_new(p: &Path) -> std::io::Result<std::fs::File> {
    create_new_mode(p, 0o600)
}

/// Creates a new file at `p` with `mode` (less the umask), never through an existing
/// file or link.
pub fn create_new_mode(p: &Path, mode: u32) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(p)
}

/// A temporary name next to `p` (hidden, ending in `.tmp`) that no one can predict.
pub fn temporary_for(p: &Path) -> PathBuf {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let stack = &n as *const u64 as usize;
    let salt = appy_ir::fnv1a(format!("{t}.{n}.{stack}.{}", std::process::id()).as_bytes());
    let name = p.file_name().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    p.with_file_name(format!(".{name}.{}.{salt:016x}.tmp", std::process::id()))
}

/// Writes `bytes` to a new temporary file next to `p` (mode 0600) and renames it to
/// `p`; with `durable`, the data reaches the disk before the rename.
pub fn write_atomic(p: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let tmp = write_temporary(p, bytes, 0o600, durable)?;
    std::fs::rename(&tmp, p).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Writes `bytes` to a new temporary file next to `p` with `mode` (less the umask)
/// and returns its path (rename it to `p` to publish it). Nothing is left on error.
pub fn write_temporary(p: &Path, bytes: &[u8], mode: u32, durable: bool) -> std::io::Result<PathBuf> {
    let tmp = temporary_for(p);
    let r = create_new_mode(&tmp, mode).and_then(|mut f| {
        f.write_all(bytes)?;
        if durable { f.sync_all() } else { Ok(()) }
    });
    match r {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Whether `a` and `b` name the same file: the same device and inode when both
/// exist, else the same canonical directory and file name.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        return x.dev() == y.dev() && x.ino() == y.ino();
    }
    let canon = |p: &Path| -> Option<PathBuf> {
        if let Ok(c) = p.canonicalize() {
            return Some(c);
        }
        let parent = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.canonicalize().ok()?,
            _ => std::env::current_dir().ok()?,
        };
        Some(parent.join(p.file_name()?))
    };
    matches!((canon(a), canon(b)), (Some(x), Some(y)) if x == y)
}
