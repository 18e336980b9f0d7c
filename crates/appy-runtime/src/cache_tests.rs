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

/// A payload stored is found, whatever it holds: doubles that serde_json's parser does
/// not give back to the bit (autotuning times; about one in nine random doubles),
/// subnormals, extremes, and nesting deeper than serde_json's default limit of 128
/// levels (the IR of a GPU bundle with a long `elif` chain). Nothing is logged.
#[test]
fn every_payload_stored_is_found() {
    let dir = tmp("payloads");
    let mut x: u64 = 0x1234_5678_9abc_def1;
    let times: Vec<serde_json::Value> = (0..64)
        .map(|k| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            serde_json::json!({"mvl": 32 << (k % 8), "ms": (x >> 11) as f64 / (1u64 << 53) as f64 * 3.0})
        })
        .collect();
    let mut deep = serde_json::json!({"x": [1.4095714864048923]});
    for _ in 0..400 {
        deep = serde_json::json!({"regions": [deep]});
    }
    let payloads = [
        serde_json::json!({"mvl": 256, "candidates": times}),
        serde_json::json!([
            0.1234567890123,
            1e-310,
            5e-324,
            -2.2250738585072014e-308,
            1.7976931348623157e308,
            -0.0,
            1.4095714864048923
        ]),
        serde_json::json!({"program": deep, "ptx": "\u{1}\"\\\n", "bits": u64::MAX}),
    ];
    for (i, payload) in payloads.iter().enumerate() {
        let k = key("gpu", "src", "f", &format!("[{i}]"), "");
        let (found, warned) = crate::testlog::warnings(|| {
            store(&dir, &k, payload.clone());
            load_entry(&dir, &k, false)
        });
        assert!(found.is_some(), "payload {i} was not found");
        assert!(warned.is_empty(), "payload {i}: {warned:?}");
        assert!(file_for(&dir, &k).exists(), "payload {i} was evicted");
        // The entry is what `entry_text` gives, the payload's text as written.
        let text = std::fs::read_to_string(file_for(&dir, &k)).unwrap();
        assert_eq!(text, entry_text(&k, payload));
        assert!(text.ends_with(&format!(",\"payload\":{payload}}}")), "payload {i}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode_of(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// Tests run as root here: ownership by another user is tested with `chown`.
fn root() -> bool {
    // SAFETY: `geteuid` cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A directory that its group or others can write is not used (nothing is read from or
/// written to it), with one warning saying why and how to fix it; once fixed, it is used.
#[test]
fn a_directory_others_can_write_is_not_used() {
    let dir = tmp("writable");
    chmod(&dir, 0o700);
    let (k, k2) = (key("cpu", "src", "f", "[f64]", ""), key("cpu", "src", "g", "[f64]", ""));
    store(&dir, &k, serde_json::json!(1));
    assert_eq!(load_entry(&dir, &k, false), Some(serde_json::json!(1)));
    for (mode, who) in [(0o777, "others"), (0o770, "its group"), (0o1777, "others")] {
        chmod(&dir, mode);
        let (r, warned) = crate::testlog::warnings(|| {
            let first = load_entry(&dir, &k, false);
            store(&dir, &k2, serde_json::json!(2));
            (first, load_entry(&dir, &k, false), usable(&dir))
        });
        assert_eq!(r, (None, None, false), "mode {mode:o}");
        assert!(!file_for(&dir, &k2).exists(), "written into a directory of mode {mode:o}");
        assert!(file_for(&dir, &k).exists(), "the entry is left alone");
        let want = format!(
            "appy cache: not using {}: it is writable by {who} (mode {mode:04o}); caching is off (fix with `chmod 700 {}`, or set APPY_CACHE_DIR to a directory of your own)",
            dir.display(),
            dir.display()
        );
        assert_eq!(warned, vec![want], "one warning, once");
        let ((), again) = crate::testlog::warnings(|| assert_eq!(load_entry(&dir, &k, false), None));
        assert!(again.is_empty(), "{again:?}");
    }
    chmod(&dir, 0o700);
    assert_eq!(load_entry(&dir, &k, false), Some(serde_json::json!(1)));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The directories above the cache count too: one that others can write (not sticky,
/// as `/tmp` is) could have the cache directory replaced.
#[test]
fn a_directory_below_one_others_can_write_is_not_used() {
    let top = tmp("open-parent");
    let dir = top.join("cache");
    let k = key("cpu", "src", "f", "[f64]", "");
    chmod(&top, 0o777);
    let (usable_now, warned) = crate::testlog::warnings(|| {
        store(&dir, &k, serde_json::json!(1));
        usable(&dir)
    });
    assert!(!usable_now);
    assert!(!dir.exists(), "created below a directory others can write");
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains(&format!(
            "the directory {} above it is writable by others (mode 0777)",
            top.display()
        )),
        "{warned:?}"
    );
    // Existing, private, but below the open directory.
    std::fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o700);
    assert!(!usable(&dir));
    // A sticky directory (as `/tmp`) keeps what others put below it.
    chmod(&top, 0o1777);
    assert!(usable(&dir));
    store(&dir, &k, serde_json::json!(1));
    assert_eq!(load_entry(&dir, &k, false), Some(serde_json::json!(1)));
    let _ = std::fs::remove_dir_all(&top);
}

/// A directory, or a link to one, that belongs to someone else is not used; a link of
/// this user's to a private directory is.
#[test]
fn someone_elses_directory_or_link_is_not_used() {
    let top = tmp("owners");
    let dir = top.join("cache");
    std::fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o700);
    let link = top.join("link");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    let k = key("cpu", "src", "f", "[f64]", "");
    store(&link, &k, serde_json::json!(1));
    assert_eq!(load_entry(&link, &k, false), Some(serde_json::json!(1)));
    assert!(file_for(&dir, &k).exists());
    if !root() {
        let _ = std::fs::remove_dir_all(&top);
        return;
    }
    std::os::unix::fs::lchown(&link, Some(12345), None).unwrap();
    let (r, warned) = crate::testlog::warnings(|| load_entry(&link, &k, false));
    assert_eq!(r, None);
    assert!(
        warned.len() == 1 && warned[0].contains("it is a symbolic link owned by uid 12345, not by you (uid 0)"),
        "{warned:?}"
    );
    std::os::unix::fs::chown(&dir, Some(12345), None).unwrap();
    let (r, warned) = crate::testlog::warnings(|| load_entry(&dir, &k, false));
    assert_eq!(r, None);
    assert!(
        warned.len() == 1 && warned[0].contains("it is owned by uid 12345, not by you (uid 0); caching is off (set APPY_CACHE_DIR"),
        "{warned:?}"
    );
    // Below a directory of someone else's.
    std::os::unix::fs::chown(&dir, Some(0), None).unwrap();
    assert!(usable(&dir));
    std::os::unix::fs::chown(&top, Some(12345), None).unwrap();
    assert!(!usable(&dir));
    let _ = std::fs::remove_dir_all(&top);
}

/// An entry (or trial marker) in the directory that belongs to someone else or that its
/// group or others can write is ignored, not deleted, and replaced when stored again
/// (mode 0600).
#[test]
fn entries_others_can_write_are_ignored() {
    let dir = tmp("entry-modes");
    chmod(&dir, 0o700);
    let k = key("cpu", "src", "f", "[f64]", "");
    let p = file_for(&dir, &k);
    for mode in [0o666, 0o620, 0o602] {
        store(&dir, &k, serde_json::json!(1));
        chmod(&p, mode);
        let (r, warned) = crate::testlog::warnings(|| load_entry(&dir, &k, false));
        assert_eq!(r, None, "an entry of mode {mode:o} was used");
        assert!(p.exists(), "ignored, not deleted");
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(
            warned[0].starts_with(&format!("appy cache: ignoring {} (it is writable by", p.display())),
            "{warned:?}"
        );
        store(&dir, &k, serde_json::json!(2));
        assert_eq!(mode_of(&p), 0o600);
        assert_eq!(load_entry(&dir, &k, false), Some(serde_json::json!(2)));
    }
    if root() {
        std::os::unix::fs::chown(&p, Some(12345), None).unwrap();
        assert_eq!(load_entry(&dir, &k, false), None);
        assert!(p.exists());
        store(&dir, &k, serde_json::json!(3));
        assert_eq!(load_entry(&dir, &k, false), Some(serde_json::json!(3)));
        // A marker of someone else's naming a dead process does not evict the entry.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let marker = marker_for(&dir, &k);
        std::fs::write(&marker, dead.to_string()).unwrap();
        std::os::unix::fs::chown(&marker, Some(12345), None).unwrap();
        assert_eq!(load_entry(&dir, &k, false), Some(serde_json::json!(3)));
        assert!(marker.exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `APPY_CACHE_DIR` naming a directory that others can write: the cache is off, with
/// one warning in the process however often it is asked for.
#[test]
fn an_open_cache_directory_is_reported_once_per_process() {
    if let Some(task) = appy_ir::config::test_var("APPY_CACHE_CHILD") {
        assert_eq!(task, "open-dir");
        let (dirs, warned) = crate::testlog::warnings(|| (0..3).map(|_| dir()).collect::<Vec<_>>());
        assert_eq!(dirs, vec![None, None, None]);
        let configured = appy_ir::config::cache_dir().unwrap();
        assert_eq!(
            warned,
            vec![format!(
                "appy cache: not using {0}: it is writable by others (mode 0777); caching is off (fix with `chmod 700 {0}`, or set APPY_CACHE_DIR to a directory of your own)",
                configured.display()
            )]
        );
        return;
    }
    let dir = tmp("open-env");
    chmod(&dir, 0o777);
    let name = crate::testlog::test_name(module_path!(), "an_open_cache_directory_is_reported_once_per_process");
    let out = crate::testlog::run_child(
        &name,
        &[("APPY_CACHE_DIR", dir.to_str().unwrap()), ("APPY_CACHE_CHILD", "open-dir")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
