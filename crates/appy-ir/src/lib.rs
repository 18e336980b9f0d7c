//! appy's IR layer: source locations and diagnostics ([`diag`]), the owned mirror of
//! MLIR operations that Rust passes rewrite ([`ir`], built with [`build`], rewritten
//! with [`rewrite`]), its typed vocabulary (attribute values in [`attrs`], typed op
//! views in [`ops`], memory effects in [`effects`], reductions in [`reduction`], types
//! in [`types`]), the compiled-program format ([`bundle`]) with its typed host program
//! ([`host`]), checked mode's status buffer ([`status`]), Python's formatting of
//! printed values ([`pyfmt`]), every `APPY_*`
//! environment variable ([`config`]), and (feature `mlir`) the bridge to MLIR itself
//! ([`mlir`]): context, parsing, verification, pass pipelines.
#![warn(missing_docs)]
// `Diagnostic`, the error of everything that can reject a user's program, is large;
// boxing it would complicate every caller for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod affine;
pub mod attrs;
pub mod blas;
pub mod build;
pub mod bundle;
pub mod config;
pub mod diag;
pub mod effects;
pub mod half;
pub mod host;
pub mod ir;
pub mod kernel;
#[cfg(feature = "mlir")]
pub mod mlir;
pub mod ops;
pub mod pyfmt;
pub mod reduction;
pub mod rewrite;
pub mod schedule;
pub mod stack;
pub mod status;
pub mod steps;
pub mod types;

/// The default maximum vector length: 1024 lanes, run on the GPU by 256 threads of 4
/// lanes each (measured fastest for streaming kernels on an H200; see BENCHMARKS.md).
pub const DEFAULT_MVL: i64 = 1024;

/// The vector lengths autotuning tries (seed 001 §5.3: 128 to 1024; beyond 256 a
/// thread runs several lanes, so 2048 and 4096 are more elements per thread; 32 and 64
/// are one- and two-warp workers, for short rows).
pub const TUNE_MVLS: [i64; 8] = [32, 64, 128, 256, 512, 1024, 2048, 4096];

/// FNV-1a, 64 bits: the hash of cache keys, cached contents and the compiler's identity
/// (fast and dependency-free; it detects accidents, not adversaries).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_from(0xcbf29ce484222325, bytes)
}

/// [`fnv1a`] continued from the state `h` (to hash several pieces as one).
pub fn fnv1a_from(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}
