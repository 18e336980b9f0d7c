//! The contract between `appy-cpu-blas` (compiled code) and the runtime's BLAS loader:
//! the BLAS routines compiled code may call, and the public globals through which it
//! calls them (each a `memref<1xi64>` holding the routine's address, written by the
//! runtime before the first call).

/// The CBLAS routines compiled code may call (`cblas_<name>`, ILP64).
pub const ROUTINES: [&str; 4] = ["dgemm", "sgemm", "dgemv", "sgemv"];

/// The global holding routine `name`'s address in compiled code.
pub fn global_name(name: &str) -> String {
    format!("appy_blas_{name}")
}
