//! The cache's defences, one test per way an entry can be wrong.

use super::*;
use std::time::Duration;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("appy-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `f` on another thread and fails the test if it takes more than 20 s (a FIFO
/// opened for reading blocks until a writer comes).
fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20)).expect("the cache blocked")
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

#[test]
fn bypass_ignores_entries() {
    let dir = tmp("bypass");
    let k = key("gpu", "src", "f", "[f64]", "mvl=1024");
    assert!(k.contains("gpu sm_90"), "{k}");
    store(&dir, &k, serde_json::json!({"x": 1}));
    assert_eq!(load_entry(&dir, &k, false), Some(serde_json::json!({"x": 1})));
    assert_eq!(load_entry(&dir, &k, true), None);
    // A different source, options or target is a different entry.
    assert_eq!(load_entry(&dir, &key("gpu", "src2", "f", "[f64]", "mvl=1024"), false), None);
    assert_eq!(load_entry(&dir, &key("cpu", "src", "f", "[f64]", "mvl=1024"), false), None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn another_compiler_misses_the_entries() {
    let dir = tmp("identity");
    assert_eq!(COMPILER_ID.len(), 16, "{COMPILER_ID}");
    assert!(COMPILER_ID.chars().all(|c| c.is_ascii_hexdigit()));
    let old = key_for("0123456789abcdef", "cpu", "src", "f", "[f64]", "mvl=1024");
    store(&dir, &old, serde_json::json!({"code": "old"}));
    assert_eq!(load_entry(&dir, &old, false), Some(serde_json::json!({"code": "old"})));
    // The same function, source and options, compiled by another build.
    let new = key_for("fedcba9876543210", "cpu", "src", "f", "[f64]", "mvl=1024");
    assert_ne!(file_for(&dir, &old), file_for(&dir, &new));
    assert_eq!(load_entry(&dir, &new, false), None);
    // Even an entry copied under the new name is refused: it records its own key.
    std::fs::copy(file_for(&dir, &old), file_for(&dir, &new)).unwrap();
    assert_eq!(load_entry(&dir, &new, false), None);
    assert!(!file_for(&dir, &new).exists(), "evicted");
    // This build's key names this build.
    assert!(key("cpu", "src", "f", "[f64]", "").starts_with(&format!("appy {COMPILER_ID} |")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_wrong_checksum_is_evicted() {
    let dir = tmp("checksum");
    let k = key("cpu", "src", "f", "[f64]", "");
    store(&dir, &k, serde_json::json!({"results": ["f64"], "llvm": "code"}));
    let p = file_for(&dir, &k);
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    doc["payload"]["results"] = serde_json::json!([]);
    std::fs::write(&p, doc.to_string()).unwrap();
    assert_eq!(load_entry(&dir, &k, false), None);
    assert!(!p.exists(), "evicted");
    // A missing checksum (an entry of an older format) too.
    std::fs::write(&p, serde_json::json!({"key": k, "payload": {"x": 1}}).to_string()).unwrap();
    assert_eq!(load_entry(&dir, &k, false), None);
    assert!(!p.exists(), "evicted");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_fifo_entry_does_not_block() {
    let dir = tmp("fifo");
    let k = key("cpu", "src", "f", "[f64]", "");
    let p = file_for(&dir, &k);
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (d, k2) = (dir.clone(), k.clone());
    assert_eq!(within(move || load_entry(&d, &k2, false)), None);
    assert!(std::fs::symlink_metadata(&p).is_err(), "the FIFO was removed");
    // The entry is written again as a regular file.
    store(&dir, &k, serde_json::json!(1));
    assert_eq!(load_entry(&dir, &k, false), Some(serde_json::json!(1)));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn links_are_never_followed() {
    let dir = tmp("links");
    let k = key("cpu", "src", "f", "[f64]", "");
    let p = file_for(&dir, &k);
    // A link to /dev/zero (read until memory runs out, if followed).
    std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
    let (d, k2) = (dir.clone(), k.clone());
    assert_eq!(within(move || load_entry(&d, &k2, false)), None);
    assert!(std::fs::symlink_metadata(&p).is_err(), "the link was removed");
    // A link to a valid entry elsewhere is not read either.
    let elsewhere = tmp("links-target");
    store(&elsewhere, &k, serde_json::json!(1));
    std::os::unix::fs::symlink(file_for(&elsewhere, &k), &p).unwrap();
    assert_eq!(load_entry(&dir, &k, false), None);
    // A link planted where the entry will be written: storing replaces the link, and
    // the file it points to is not written.
    let victim = elsewhere.join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, &p).unwrap();
    store(&dir, &k, serde_json::json!({"x": 2}));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(!is_link(&p));
    assert_eq!(load_entry(&dir, &k, false), Some(serde_json::json!({"x": 2})));
    // New files are never created through a planted link.
    let planted = dir.join("planted");
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    assert!(create_new(&planted).is_err());
    assert!(write_atomic(&dir.join("fresh"), b"new", false).is_ok());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    // Temporary names are not predictable.
    assert_ne!(temporary_for(&p), temporary_for(&p));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&elsewhere);
}

#[test]
fn entries_and_directory_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tmp("private").join("sub");
    let k = key("cpu", "src", "f", "[f64]", "");
    store(&dir, &k, serde_json::json!(1));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&file_for(&dir, &k)), 0o600);
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn oversized_entries_are_refused() {
    let dir = tmp("size");
    let k = key("cpu", "src", "f", "[f64]", "");
    let p = file_for(&dir, &k);
    // A sparse file one byte over the limit (nothing is read).
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(MAX_ENTRY_BYTES + 1).unwrap();
    drop(f);
    assert_eq!(load_entry(&dir, &k, false), None);
    assert!(!p.exists(), "evicted");
    // The reader's cap, at the byte.
    std::fs::write(&p, vec![b' '; 100]).unwrap();
    assert!(read_regular(&p, 99).is_err());
    assert_eq!(read_regular(&p, 100).unwrap().map(|b| b.len()), Some(100));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn trials() {
    let dir = tmp("trial");
    let k = key("cpu", "src", "f", "[f64]", "");
    store(&dir, &k, serde_json::json!(1));
    let marker = marker_for(&dir, &k);
    // A trial that passes leaves the entry.
    let t = begin_trial(&dir, &k);
    assert!(marker.exists());
    // One marker at a time: a second trial (another process's) writes none, and
    // leaves the first one's.
    let second = begin_trial(&dir, &k);
    assert!(!second.marker);
    second.passed();
    assert!(marker.exists());
    // While this (living) process tries it, others use the entry.
    assert_eq!(load_entry(&dir, &k, false), Some(serde_json::json!(1)));
    t.passed();
    assert!(!marker.exists());
    assert_eq!(load_entry(&dir, &k, false), Some(serde_json::json!(1)));
    // A trial that fails evicts it.
    begin_trial(&dir, &k).failed();
    assert!(!marker.exists() && !file_for(&dir, &k).exists());
    // A process that died during the first call (its marker is left) evicts it.
    store(&dir, &k, serde_json::json!(1));
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    std::fs::write(&marker, dead.to_string()).unwrap();
    assert_eq!(load_entry(&dir, &k, false), None);
    assert!(!marker.exists() && !file_for(&dir, &k).exists());
    // A dropped trial (never called) learns nothing.
    store(&dir, &k, serde_json::json!(1));
    drop(begin_trial(&dir, &k));
    assert!(!marker.exists());
    assert_eq!(load_entry(&dir, &k, false), Some(serde_json::json!(1)));
    let _ = std::fs::remove_dir_all(&dir);
}
