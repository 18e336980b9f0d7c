//! The compiled-program format for the GPU: the host program (the `gpu`-level host
//! function lowered to typed ops, [`crate::host`], which the runtime executes), the PTX
//! of its kernels and their parameter types, and the `gpu`-level module itself (for
//! reading and tools). A bundle needs no MLIR to run: only the NVIDIA driver.

use crate::host::HostProgram;
use crate::ir::Module;
use crate::types::ArgType;
use serde::{Deserialize, Serialize};

/// Format version; bumped on incompatible changes (4: the host program).
pub const BUNDLE_VERSION: u32 = 5;

/// One kernel of a bundle.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct KernelInfo {
    /// Symbol name in the PTX.
    pub name: String,
    /// MLIR types of the `gpu.func` parameters (memrefs expand to descriptors).
    pub params: Vec<String>,
}

/// A function compiled for the GPU, specialised for one signature.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Bundle {
    /// [`BUNDLE_VERSION`].
    pub version: u32,
    /// Function name.
    pub func: String,
    /// Parameter names.
    pub params: Vec<String>,
    /// Argument types the function was specialised for.
    pub args: Vec<ArgType>,
    /// Result types.
    pub results: Vec<ArgType>,
    /// The sites of the status buffer when the host function takes one as its last
    /// parameter, after [`Bundle::params`] ([`crate::status`]).
    #[serde(default)]
    pub status: Option<crate::status::Status>,
    /// Threads per block.
    pub mvl: i64,
    /// The `gpu`-level module: the host `func.func`, whose body launches kernels
    /// (`gpu.launch_func`), and the kernels' `gpu.module`. The runtime does not read
    /// it: it is the source of [`Bundle::program`], kept for reading and tools.
    pub host: Module,
    /// The host program the runtime executes, with the kernels' bodies for the access
    /// analysis ([`crate::host::lower`] of `host`).
    pub program: HostProgram,
    /// PTX text of the kernels (empty when there are none).
    pub ptx: String,
    /// The kernels.
    pub kernels: Vec<KernelInfo>,
    /// Autotuning candidates: the same function compiled for other vector lengths
    /// (`appy compile --tune`); the runtime times them on first use per shape bucket.
    #[serde(default)]
    pub variants: Vec<Bundle>,
    /// Which values the `tune(...)` lists of the program's `transform(...)` clauses
    /// took (the k-th of each; 0: the first). Not written when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub choice: u32,
    /// Compiled with seed 002's code generation (a thread's lanes consecutive,
    /// unrolled and jammed, vector loads and stores): an autotuning candidate beside
    /// the plain code at the same vector length. Not written when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub vector_code: bool,
}

fn is_zero(c: &u32) -> bool {
    *c == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Bundle {
    /// The bundle of candidate `k` (0: this one; then the variants).
    pub fn candidate(&self, k: usize) -> &Bundle {
        if k == 0 { self } else { &self.variants[k - 1] }
    }
    /// Number of candidates (1 when not tuned).
    pub fn candidates(&self) -> usize {
        1 + self.variants.len()
    }
}

impl Bundle {
    /// Serializes to JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("bundle serializes")
    }
    /// Deserializes from JSON, checking the version. The IR nests as deep as the
    /// source's statements (an `elif` chain of 20 is deeper than serde_json's default
    /// limit of 128 levels): no limit, on a stack segment of its own ([`crate::stack`]).
    pub fn from_json(s: &str) -> Result<Bundle, String> {
        let b: Bundle = crate::stack::deep(|| {
            let mut de = serde_json::Deserializer::from_str(s);
            de.disable_recursion_limit();
            let b = Bundle::deserialize(&mut de)?;
            de.end().map(|_| b)
        })
        .map_err(|e| format!("not a valid appy bundle: {e}"))?;
        if b.version != BUNDLE_VERSION {
            return Err(format!("bundle version {} is not supported (expected {BUNDLE_VERSION})", b.version));
        }
        Ok(b)
    }
}
