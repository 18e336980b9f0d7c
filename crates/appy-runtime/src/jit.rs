//! The embedding API: compile a source once, call its jitted functions many times.
//!
//! Each function is specialised for the types of the arguments it is called with
//! (dtype and rank of arrays, scalar kinds); the specialisation is compiled on the first
//! call and cached, so later calls with the same types run without compiling.
//!
//! ```no_run
//! use appy_runtime::{Device, HostArray, HostValue, jit::Jit};
//! use appy_ir::types::DType;
//!
//! let src = "import appy\n\n@appy.jit\ndef scale(a, N):\n    #pragma parallel for simd\n    for i in range(N):\n        a[i] = 2.0 * a[i]\n";
//! let mut jit = Jit::from_source("scale.py", src, Device::Auto);
//! let a = HostArray::from_f64(DType::F64, vec![3], &[1.0, 2.0, 3.0]);
//! let mut args = vec![HostValue::Array(a), HostValue::Int(3, DType::I64, true)];
//! jit.call("scale", &mut args).unwrap();
//! let HostValue::Array(a) = &args[0] else { unreachable!() };
//! assert_eq!(a.get_f64(2), 6.0);
//! ```

use crate::Device;
use crate::array::HostValue;
use appy_gpu::{Compiler, Options};
use appy_ir::diag::{DResult, Diagnostic, SourceFile};
use appy_ir::types::ArgType;
use std::collections::HashMap;

/// A source file whose jitted functions can be called.
pub struct Jit {
    file: SourceFile,
    compiler: Compiler,
    opts: Options,
    device: Device,
    #[cfg(feature = "cuda")]
    gpu: Option<crate::gpu::Gpu>,
    cache: HashMap<(String, Vec<ArgType>), Compiled>,
    compilations: usize,
}

enum Compiled {
    Cpu(crate::cpu::CpuFunction),
    #[cfg(feature = "cuda")]
    Gpu(Box<appy_ir::bundle::Bundle>, crate::gpu::Loaded),
}

impl Jit {
    /// Wraps source text (named `name` in diagnostics). With [`Device::Auto`] the GPU
    /// is used when a driver and a device are present.
    pub fn from_source(name: &str, text: &str, device: Device) -> Jit {
        #[cfg(feature = "cuda")]
        let gpu = match device {
            Device::Cpu => None,
            _ => crate::gpu::Gpu::open().ok(),
        };
        Jit {
            file: SourceFile::new(name, text),
            compiler: Compiler::new(),
            opts: Options::default(),
            device,
            #[cfg(feature = "cuda")]
            gpu,
            cache: HashMap::new(),
            compilations: 0,
        }
    }

    /// Sets the compile options (clears nothing: options are part of no cache key, so
    /// set them before the first call).
    pub fn with_options(mut self, opts: Options) -> Self {
        self.opts = opts;
        self
    }

    /// How many specialisations have been compiled so far.
    pub fn compilations(&self) -> usize {
        self.compilations
    }

    /// Calls `func` with `args`; arrays are updated in place; returns the return values.
    pub fn call(&mut self, func: &str, args: &mut [HostValue]) -> DResult<Vec<HostValue>> {
        let sig: Vec<ArgType> = args.iter().map(|a| a.arg_type()).collect();
        let key = (func.to_string(), sig.clone());
        if !self.cache.contains_key(&key) {
            let compiled = self.compile(func, &sig)?;
            self.compilations += 1;
            self.cache.insert(key.clone(), compiled);
        }
        match self.cache.get(&key).expect("just inserted") {
            Compiled::Cpu(f) => f.call(args),
            #[cfg(feature = "cuda")]
            Compiled::Gpu(b, loaded) => {
                let gpu = self.gpu.as_ref().expect("GPU specialisations need a GPU");
                gpu.run(b, loaded, args).map(|(r, _)| r).map_err(Diagnostic::bare)
            }
        }
    }

    fn compile(&mut self, func: &str, sig: &[ArgType]) -> DResult<Compiled> {
        #[cfg(feature = "cuda")]
        if let Some(gpu) = &self.gpu {
            let b = self.compiler.compile_gpu(&self.file, func, sig, &self.opts)?;
            let loaded = gpu.load(&b).map_err(Diagnostic::bare)?;
            return Ok(Compiled::Gpu(Box::new(b), loaded));
        }
        if self.device == Device::Gpu {
            return Err(Diagnostic::bare("no usable GPU (device gpu was requested)"));
        }
        Ok(Compiled::Cpu(crate::cpu::CpuFunction::compile(
            &self.compiler,
            &self.file,
            func,
            sig,
            &self.opts,
        )?))
    }
}
