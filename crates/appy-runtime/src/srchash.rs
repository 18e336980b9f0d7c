//! The hash of the compiler's sources, which identifies a build of the compiler in the
//! cache keys (`build.rs` computes it with this module; the tests below check it).
//! Every file under the given paths counts, by its path relative to the root and its
//! bytes, in sorted order, so the hash does not depend on the directory the checkout
//! lives in, only on what it holds.

use std::path::{Path, PathBuf};

/// The files under `paths` (relative to `root`; a path is a file, or a directory walked
/// recursively), as paths relative to `root`, sorted. Missing paths are skipped.
pub fn files(root: &Path, paths: &[&str]) -> Vec<PathBuf> {
    fn walk(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
        let p = root.join(rel);
        if p.is_file() {
            out.push(rel.to_path_buf());
        } else if let Ok(rd) = std::fs::read_dir(&p) {
            for e in rd.flatten() {
                walk(root, &rel.join(e.file_name()), out);
            }
        }
    }
    let mut out = vec![];
    for p in paths {
        walk(root, Path::new(p), &mut out);
    }
    out.sort();
    out
}

/// FNV-1a (64 bits) over every file of [`files`]: its relative path (with `/`), a
/// zero byte, its length and its bytes.
pub fn hash(root: &Path, paths: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= *b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
    };
    for rel in files(root, paths) {
        let bytes = std::fs::read(root.join(&rel)).unwrap_or_default();
        feed(rel.to_string_lossy().replace('\\', "/").as_bytes());
        feed(&[0]);
        feed(&(bytes.len() as u64).to_le_bytes());
        feed(&bytes);
    }
    h
}

/// What identifies the compiler: the sources of the crates that make or run compiled
/// code, and the locked versions of every dependency (melior, the MLIR bindings).
pub const INPUTS: &[&str] = &[
    "crates/appy-ir/src",
    "crates/appy-ir/Cargo.toml",
    "crates/appy-frontend/src",
    "crates/appy-frontend/Cargo.toml",
    "crates/appy-passes/src",
    "crates/appy-passes/Cargo.toml",
    "crates/appy-compiler/src",
    "crates/appy-compiler/Cargo.toml",
    "crates/appy-runtime/src",
    "crates/appy-runtime/build.rs",
    "crates/appy-runtime/Cargo.toml",
    "Cargo.lock",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_change_to_a_source_changes_the_hash() {
        let root = std::env::temp_dir().join(format!("appy-srchash-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("crates/appy-passes/src/sub")).unwrap();
        std::fs::write(root.join("crates/appy-passes/src/lib.rs"), "fn a() {}\n").unwrap();
        std::fs::write(root.join("crates/appy-passes/src/sub/x.rs"), "fn b() {}\n").unwrap();
        std::fs::write(root.join("Cargo.lock"), "version = 4\n").unwrap();
        let h0 = hash(&root, INPUTS);
        assert_eq!(files(&root, INPUTS).len(), 3);
        assert_eq!(hash(&root, INPUTS), h0, "deterministic");
        // An edit in a nested file, a new file, a renamed file, a changed lock file.
        std::fs::write(root.join("crates/appy-passes/src/sub/x.rs"), "fn b() { }\n").unwrap();
        let h1 = hash(&root, INPUTS);
        assert_ne!(h1, h0);
        std::fs::write(root.join("crates/appy-passes/src/new.rs"), "").unwrap();
        let h2 = hash(&root, INPUTS);
        assert_ne!(h2, h1);
        std::fs::rename(
            root.join("crates/appy-passes/src/new.rs"),
            root.join("crates/appy-passes/src/new2.rs"),
        )
        .unwrap();
        let h3 = hash(&root, INPUTS);
        assert_ne!(h3, h2);
        std::fs::write(root.join("Cargo.lock"), "version = 4\n# melior 0.28\n").unwrap();
        assert_ne!(hash(&root, INPUTS), h3);
        // Files outside the inputs (tests, docs) do not count.
        let h4 = hash(&root, INPUTS);
        std::fs::create_dir_all(root.join("tests")).unwrap();
        std::fs::write(root.join("tests/t.rs"), "").unwrap();
        std::fs::write(root.join("README.md"), "").unwrap();
        assert_eq!(hash(&root, INPUTS), h4);
        let _ = std::fs::remove_dir_all(&root);
    }
}
