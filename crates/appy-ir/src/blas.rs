//! The contract between `appy-cpu-blas` (compiled code) and the runtime's BLAS loader:
//! the routines compiled code may call, and the public globals through which it calls
//! them (each a `memref<1xi64>` holding the routine's address, written by the runtime
//! before the first call).

/// The routines compiled code may call: CBLAS's (`cblas_<name>`, ILP64) for the
/// products and triangular solves, and the runtime's Cholesky factorisation for
/// `dpotrf`/`spotrf` (`info = f(a, n, lda, rows)`: LAPACK's `?potrf` on a copy of the
/// lower triangle of the row-major `a[:n, :n]`, written back only when `info` is 0;
/// `-1` when the array has fewer than `n` rows or columns).
pub const ROUTINES: [&str; 8] = ["dgemm", "sgemm", "dgemv", "sgemv", "dtrsv", "strsv", "dpotrf", "spotrf"];

/// The global holding routine `name`'s address in compiled code.
pub fn global_name(name: &str) -> String {
    format!("appy_blas_{name}")
}
