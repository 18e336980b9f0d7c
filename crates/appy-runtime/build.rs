//! Computes the compiler's identity for the cache keys (`appy_runtime::cache::COMPILER_ID`):
//! a hash of the sources of the crates that make or run compiled code, `Cargo.lock`, and
//! the version of the LLVM/MLIR the bindings link. A rebuilt compiler with any change
//! to them misses every entry the previous one wrote.

#[path = "src/srchash.rs"]
mod srchash;

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..");
    for p in srchash::INPUTS {
        let path = root.join(p);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    let mut h = srchash::hash(&root, srchash::INPUTS);
    // The LLVM/MLIR installation (`.cargo/config.toml` names its prefix).
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    if let Ok(prefix) = std::env::var("MLIR_SYS_220_PREFIX") {
        let cfg = PathBuf::from(prefix).join("bin/llvm-config");
        if cfg.exists() {
            println!("cargo:rerun-if-changed={}", cfg.display());
        }
        if let Ok(out) = std::process::Command::new(&cfg).arg("--version").output() {
            for b in out.stdout {
                h ^= b as u64;
                h = h.wrapping_mul(0x100000001b3);
            }
        }
    }
    println!("cargo:rustc-env=COMPILER_SOURCE_HASH={h:016x}");
}
