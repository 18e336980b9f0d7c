//! The targets: NVIDIA GPUs ([`nvptx`]: NVVM → PTX, libdevice) and the CPU ([`cpu`]:
//! the LLVM dialect for MLIR's ExecutionEngine).

pub mod cpu;
pub mod libdevice;
pub mod nvptx;
