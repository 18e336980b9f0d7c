//! appy's integration suite (one test binary: every binary that links MLIR is large).

mod e2e;
mod errors;
mod lit;
