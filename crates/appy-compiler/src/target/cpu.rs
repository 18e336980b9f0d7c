//! The CPU target: the `appy` level to the LLVM dialect ([`crate::pipelines::appy_to_llvm`]),
//! which the runtime's CPU executor hands to MLIR's ExecutionEngine.

use crate::pipelines::{self, CpuTarget};
use crate::{Compiler, Options};
use appy_ir::diag::{DResult, SourceFile};
use appy_ir::ir::Module;

/// Lowers an `appy`-level module to the LLVM dialect; the parameters marked in
/// `strided` take strided arrays.
pub fn to_llvm(c: &Compiler, file: &SourceFile, appy: Module, opts: &Options, strided: &[bool]) -> DResult<Module> {
    let t = CpuTarget {
        openmp: opts.openmp,
        vector_math: opts.vector_math.clone(),
        strided: strided.to_vec(),
        blas: opts.blas,
        expand_erfc: opts.expand_erfc,
    };
    c.run(file, appy, &pipelines::appy_to_llvm(opts.mvl, &t), None)
}
