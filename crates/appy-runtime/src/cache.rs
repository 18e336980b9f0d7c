//! The persistent compile cache: one file per specialisation (source text, function,
//! argument types, options, back end, compiler version), under `$APPY_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/appy`, else `~/.cache/appy`. Files are JSON and can be inspected;
//! each one records its full key, and a file that is truncated, garbage, or for another
//! key is ignored, recompiled and rewritten. Writes go through a temporary file and a
//! rename, so a crash never leaves half a file under a valid name.
//! `APPY_ALWAYS_COMPILE=1` ignores compiled entries (autotuning decisions are still
//! used). GPU entries are keyed on the target (`sm_90`) too.

use std::path::{Path, PathBuf};

/// The cache directory, or `None` when caching is disabled (`APPY_CACHE_DIR=` empty or
/// no home directory).
pub fn dir() -> Option<PathBuf> {
    appy_ir::config::cache_dir()
}

/// The key text of a specialisation.
pub fn key(kind: &str, source: &str, func: &str, sig: &str, options: &str) -> String {
    format!(
        "appy {} | {kind}{} | {func} | {sig} | {options} | {:016x}",
        env!("CARGO_PKG_VERSION"),
        if kind.starts_with("gpu") { " sm_90" } else { "" },
        fnv(source.as_bytes())
    )
}

/// FNV-1a, 64 bits.
pub fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

fn path_for(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{:016x}.json", fnv(key.as_bytes())))
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
    let text = std::fs::read_to_string(&p).ok()?;
    let parsed: Result<serde_json::Value, _> = serde_json::from_str(&text);
    match parsed {
        Ok(v) if v.get("key").and_then(|k| k.as_str()) == Some(key) && v.get("payload").is_some() => v.get("payload").cloned(),
        _ => {
            tracing::warn!("appy cache: ignoring invalid entry {} (it will be rebuilt)", p.display());
            let _ = std::fs::remove_file(&p);
            None
        }
    }
}

/// Stores `payload` under `key` (errors are reported and otherwise ignored: the cache
/// is an optimisation).
pub fn store(dir: &Path, key: &str, payload: serde_json::Value) {
    let p = path_for(dir, key);
    let doc = serde_json::json!({ "key": key, "payload": payload });
    let r = std::fs::create_dir_all(dir).and_then(|_| {
        let tmp = p.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, doc.to_string())?;
        std::fs::rename(&tmp, &p)
    });
    if let Err(e) = r {
        tracing::warn!("appy cache: cannot write {}: {e}", p.display());
    }
}

/// The file a key is stored in (for tests and inspection).
pub fn file_for(dir: &Path, key: &str) -> PathBuf {
    path_for(dir, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bypass_ignores_entries() {
        let dir = std::env::temp_dir().join(format!("appy-cache-bypass-{}", std::process::id()));
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
}
