//! Files appy reads from places others could write (the cache directory) and files it
//! writes (cache entries, the commands' outputs): no links followed, no blocking on a
//! FIFO, bounded reads, ownership and permissions checked on the open file
//! ([`read_private`]), and atomic replacement through an exclusively created temporary
//! file.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why a file or directory with metadata `meta` is not to be trusted with code: it
/// belongs to someone other than this process's user (its effective uid) or root, or its
/// group or others can write it. `None`: it is trusted.
pub fn untrusted(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: `geteuid` cannot fail.
    let me = unsafe { libc::geteuid() };
    let mode = meta.mode() & 0o7777;
    if meta.uid() != me && meta.uid() != 0 {
        Some(format!("it is owned by uid {}, not by you (uid {me})", meta.uid()))
    } else if mode & 0o002 != 0 {
        Some(format!("it is writable by others (mode {mode:04o})"))
    } else if mode & 0o020 != 0 {
        Some(format!("it is writable by its group (mode {mode:04o})"))
    } else {
        None
    }
}

/// Why [`read_private`] or [`open_private`] did not give a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// Why, in words.
    pub why: String,
    /// The file is fine but not trusted ([`untrusted`]); else it is not a regular file
    /// within the size limit, or could not be read.
    pub untrusted: bool,
}

impl Refused {
    fn bad(why: impl Into<String>) -> Refused {
        Refused {
            why: why.into(),
            untrusted: false,
        }
    }
}

/// Opens a regular file without following a link at `p` and without blocking, with its
/// metadata (from the open file, so they are the file's that is read). `Ok(None)`: no
/// such file.
fn open_regular(p: &Path) -> Result<Option<(std::fs::File, std::fs::Metadata)>, Refused> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(p);
    let f = match f {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(Refused::bad("a symbolic link")),
        Err(e) => return Err(Refused::bad(format!("cannot open it: {e}"))),
    };
    let meta = f.metadata().map_err(|e| Refused::bad(format!("cannot stat it: {e}")))?;
    if !meta.file_type().is_file() {
        return Err(Refused::bad("not a regular file"));
    }
    Ok(Some((f, meta)))
}

/// Opens a regular file as [`read_private`] does, refusing one that is not trusted
/// ([`untrusted`], checked on the open file).
pub fn open_private(p: &Path) -> Result<Option<std::fs::File>, Refused> {
    let Some((f, meta)) = open_regular(p)? else {
        return Ok(None);
    };
    if let Some(why) = untrusted(&meta) {
        return Err(Refused { why, untrusted: true });
    }
    Ok(Some(f))
}

fn read_open(f: std::fs::File, meta: &std::fs::Metadata, cap: u64) -> Result<Vec<u8>, Refused> {
    if meta.len() > cap {
        return Err(Refused::bad(format!("{} bytes, more than the limit of {cap}", meta.len())));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Refused::bad(format!("cannot read it: {e}")))?;
    if bytes.len() as u64 > cap {
        return Err(Refused::bad(format!("more than the limit of {cap} bytes")));
    }
    Ok(bytes)
}

/// Reads a regular file of at most `cap` bytes without following a link at `p` and
/// without blocking. `Ok(None)`: no such file; `Err`: something else is there (a link,
/// a FIFO, a device, a directory, a larger file).
pub fn read_regular(p: &Path, cap: u64) -> Result<Option<Vec<u8>>, String> {
    let Some((f, meta)) = open_regular(p).map_err(|r| r.why)? else {
        return Ok(None);
    };
    read_open(f, &meta, cap).map(Some).map_err(|r| r.why)
}

/// [`read_regular`] of a file that must be trusted ([`untrusted`]: this user's or
/// root's, writable by no one else; checked on the open file, so on what is read).
pub fn read_private(p: &Path, cap: u64) -> Result<Option<Vec<u8>>, Refused> {
    let Some((f, meta)) = open_regular(p)? else {
        return Ok(None);
    };
    if let Some(why) = untrusted(&meta) {
        return Err(Refused { why, untrusted: true });
    }
    read_open(f, &meta, cap).map(Some)
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
