//! Writes one `#[test]` per file of `tests/lit/` (included by `tests/suite/lit.rs`), so
//! that each lit file passes or fails on its own, under its own name.

use std::fmt::Write;

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("lit");
    // A file added or removed changes the directory.
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/lit")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".py") || n.ends_with(".mlir"))
        .collect();
    files.sort();
    let mut out = String::new();
    for f in &files {
        let name: String = f.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        writeln!(out, "#[test]\nfn {name}() {{\n    run_file({f:?});\n}}").expect("write");
    }
    let path = std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("lit_tests.rs");
    std::fs::write(path, out).expect("write lit_tests.rs");
}
