//! The commands' output files (`--out DIR`, `-o FILE`): written all or nothing, each
//! atomically, never over an input.
//!
//! Every output is first written to an exclusively created temporary file next to its
//! target (and synced); only when all of them are written are they renamed into
//! place, so a kill or an error leaves the previous files intact rather than empty or
//! half new. Two outputs with the same path (a parameter named `return_0` and the
//! first returned value) and an output that is one of the command's inputs (`compile
//! -o kernel.py`, `--out` over an argument's `.npy`) are refused before anything is
//! written.

use appy_runtime::files::{same_file, write_temporary};
use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// A file to write.
pub struct Output {
    /// Where.
    pub path: PathBuf,
    /// What it holds, for messages ("the final value of parameter `A`").
    pub what: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// A file the command read, and what it was ("the source", "the array of parameter
/// `A`").
pub struct Input {
    /// Where.
    pub path: PathBuf,
    /// What it was.
    pub what: String,
}

/// Writes every output, or none (see the module documentation).
pub fn write_all(outputs: &[Output], inputs: &[Input]) -> Result<(), String> {
    for (i, o) in outputs.iter().enumerate() {
        if let Some(other) = outputs[..i].iter().find(|p| p.path == o.path || same_file(&p.path, &o.path)) {
            return Err(format!(
                "{} would hold both {} and {}; rename one of them",
                o.path.display(),
                other.what,
                o.what
            ));
        }
        if let Some(inp) = inputs.iter().find(|inp| same_file(&inp.path, &o.path)) {
            return Err(format!(
                "{} is {} and would be overwritten by {}; write the output elsewhere",
                o.path.display(),
                inp.what,
                o.what
            ));
        }
        if let Some(why) = refused(&o.path) {
            return Err(format!("cannot write {} to {}: {why}", o.what, o.path.display()));
        }
    }
    let (direct, files): (Vec<&Output>, Vec<&Output>) = outputs.iter().partition(|o| is_stream(&o.path));
    let mut written: Vec<PathBuf> = vec![];
    for o in &files {
        match write_temporary(&o.path, &o.bytes, 0o666, true) {
            Ok(tmp) => written.push(tmp),
            Err(e) => {
                for t in &written {
                    let _ = std::fs::remove_file(t);
                }
                return Err(format!("cannot write {}: {e}", o.path.display()));
            }
        }
    }
    for (k, (o, tmp)) in files.iter().zip(&written).enumerate() {
        if let Err(e) = std::fs::rename(tmp, &o.path) {
            for t in &written[k..] {
                let _ = std::fs::remove_file(t);
            }
            return Err(format!("cannot write {}: {e}", o.path.display()));
        }
    }
    // Streams last, once every file is in place: they cannot be written atomically.
    for o in direct {
        write_stream(&o.path, &o.bytes).map_err(|e| format!("cannot write {}: {e}", o.path.display()))?;
    }
    Ok(())
}

/// Whether `p` is written directly rather than through a temporary file: `-`
/// (standard output), a character device (`/dev/null`, a terminal) or a pipe.
fn is_stream(p: &Path) -> bool {
    if p.as_os_str() == "-" {
        return true;
    }
    std::fs::metadata(p).is_ok_and(|m| {
        let t = m.file_type();
        t.is_char_device() || t.is_fifo()
    })
}

/// Why an output cannot go to `p` (a directory, a socket, a block device), if so.
fn refused(p: &Path) -> Option<&'static str> {
    if is_stream(p) {
        return None;
    }
    let m = std::fs::metadata(p).ok()?;
    let t = m.file_type();
    if t.is_dir() {
        Some("it is a directory")
    } else if !t.is_file() {
        Some("it is neither a regular file, a character device nor a pipe")
    } else {
        None
    }
}

/// Writes `bytes` to standard output (`-`), a device or a pipe, in place.
fn write_stream(p: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if p.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)?;
        return out.flush();
    }
    let mut f = std::fs::OpenOptions::new().write(true).open(p)?;
    f.write_all(bytes)?;
    f.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("appy-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn out(path: PathBuf, what: &str, bytes: &[u8]) -> Output {
        Output {
            path,
            what: what.into(),
            bytes: bytes.to_vec(),
        }
    }

    fn listing(d: &std::path::Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn all_or_nothing() {
        let d = tmp("all");
        std::fs::write(d.join("A.npy"), "old A").unwrap();
        std::fs::write(d.join("B.npy"), "old B").unwrap();
        std::fs::create_dir(d.join("C.npy")).unwrap();
        let outs = [
            out(d.join("A.npy"), "A", b"new A"),
            out(d.join("B.npy"), "B", b"new B"),
            out(d.join("C.npy"), "C", b"new C"),
        ];
        let e = write_all(&outs, &[]).unwrap_err();
        assert!(e.contains("it is a directory"), "{e}");
        // Nothing was replaced, and no temporary file is left.
        assert_eq!(std::fs::read_to_string(d.join("A.npy")).unwrap(), "old A");
        assert_eq!(std::fs::read_to_string(d.join("B.npy")).unwrap(), "old B");
        assert_eq!(listing(&d), ["A.npy", "B.npy", "C.npy"]);
        std::fs::remove_dir(d.join("C.npy")).unwrap();
        write_all(&outs, &[]).unwrap();
        assert_eq!(std::fs::read_to_string(d.join("C.npy")).unwrap(), "new C");
        assert_eq!(listing(&d), ["A.npy", "B.npy", "C.npy"]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn devices_and_pipes_are_written_directly() {
        // `-o /dev/null` (a character device) is written in place, not renamed over.
        write_all(&[out("/dev/null".into(), "the output", b"text")], &[]).unwrap();
        assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
        // A pipe: a reader gets the bytes.
        let d = tmp("fifo");
        let fifo = d.join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_all(&[out(fifo.clone(), "the output", b"through a pipe")], &[]).unwrap();
        assert_eq!(reader.join().unwrap(), b"through a pipe");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn collisions_and_inputs_are_refused() {
        let d = tmp("refuse");
        let e = write_all(
            &[
                out(d.join("return_0.npy"), "the final value of parameter `return_0`", b"x"),
                out(d.join("./return_0.npy"), "return value 0", b"y"),
            ],
            &[],
        )
        .unwrap_err();
        assert!(
            e.contains("would hold both the final value of parameter `return_0` and return value 0"),
            "{e}"
        );
        std::fs::write(d.join("k.py"), "source").unwrap();
        // The same file under another spelling, and through a link.
        std::os::unix::fs::symlink(d.join("k.py"), d.join("link.py")).unwrap();
        let input = [Input {
            path: d.join("k.py"),
            what: "the source".into(),
        }];
        for p in [d.join("k.py"), d.join("sub/../k.py"), d.join("link.py")] {
            std::fs::create_dir_all(d.join("sub")).unwrap();
            let e = write_all(&[out(p.clone(), "the bundle", b"{}")], &input).unwrap_err();
            assert!(e.contains("is the source and would be overwritten by the bundle"), "{p:?}: {e}");
        }
        assert_eq!(std::fs::read_to_string(d.join("k.py")).unwrap(), "source");
        let _ = std::fs::remove_dir_all(&d);
    }
}
