//! The CPU target: the `appy` level to the LLVM dialect ([`crate::pipelines::appy_to_llvm`]),
//! which the runtime's CPU executor hands to MLIR's ExecutionEngine.

use crate::{Compiler, Options, pipelines};
use appy_ir::diag::{DResult, SourceFile};
use appy_ir::ir::Module;

/// Lowers an `appy`-level module to the LLVM dialect.
pub fn to_llvm(c: &Compiler, file: &SourceFile, appy: Module, opts: &Options) -> DResult<Module> {
    c.run(file, appy, &pipelines::appy_to_llvm(opts.mvl), None)
}
