//! The runtime's error: what can go wrong running a compiled program on a device.

use std::fmt;

/// An error of the GPU runner (and of autotuning).
#[derive(Clone, Debug, PartialEq)]
pub enum RunError {
    /// No usable device: no driver, no device, or a library that did not load.
    Unavailable(String),
    /// The device ran out of memory allocating `bytes` bytes.
    OutOfMemory {
        /// The allocation's size.
        bytes: usize,
        /// The driver's message.
        detail: String,
    },
    /// A driver operation failed (`what`: the operation, e.g. "copy to device").
    Driver {
        /// The operation.
        what: String,
        /// The driver's message.
        detail: String,
    },
    /// A kernel failed to launch or to run.
    Kernel {
        /// The kernel's name.
        kernel: String,
        /// What happened.
        detail: String,
    },
    /// A library call (cuBLAS, cuSOLVER) failed.
    Library(String),
    /// The arguments do not match the program's signature.
    Arguments(String),
    /// The bundle cannot be run here: an unsupported format, op or kernel reference.
    Bundle(String),
    /// The program cannot go on: integer division by zero, a library call's operand
    /// out of bounds, a library call under a memory budget.
    Program(String),
    /// An array (an argument, a result, an allocation of the program) whose size is
    /// wrong or too large.
    Array(crate::array::ArrayError),
    /// The program's own error, found by its checks and reported through the status
    /// buffer (`appy_ir::status`): an index out of bounds in checked mode, a negative
    /// dimension. The message is a located `FILE:LINE:COL: error: ...`.
    Checked(String),
    /// The call was stopped by [`crate::exec::RunOptions::interrupt`].
    Interrupted,
}

impl RunError {
    /// A failed driver operation.
    pub fn driver(what: impl Into<String>, detail: impl fmt::Debug) -> RunError {
        RunError::Driver {
            what: what.into(),
            detail: format!("{detail:?}"),
        }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Unavailable(s)
            | RunError::Library(s)
            | RunError::Arguments(s)
            | RunError::Bundle(s)
            | RunError::Program(s)
            | RunError::Checked(s) => f.write_str(s),
            RunError::OutOfMemory { bytes, detail } => write!(f, "device out of memory ({bytes} bytes): {detail}"),
            RunError::Driver { what, detail } => write!(f, "{what} failed: {detail}"),
            RunError::Kernel { kernel, detail } => write!(f, "kernel {kernel} {detail}"),
            RunError::Array(e) => e.fmt(f),
            RunError::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for RunError {}

impl From<crate::array::ArrayError> for RunError {
    fn from(e: crate::array::ArrayError) -> RunError {
        RunError::Array(e)
    }
}

impl From<RunError> for String {
    fn from(e: RunError) -> String {
        e.to_string()
    }
}

/// The runtime's result type.
pub type RunResult<T> = Result<T, RunError>;
