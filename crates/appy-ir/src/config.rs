//! appy's configuration: every `APPY_*` environment variable, read here and nowhere
//! else (a test checks that no other source file reads one, and that README.md lists
//! each of [`VARS`] with its default).
//!
//! A flag ([`flag`]) is on when the variable is set to anything but the empty string or
//! `0`. Values are read when asked for; the callers that read one on a hot path keep
//! the value (e.g. `APPY_VERIFY_EACH`, once per process).

use std::path::PathBuf;

/// Who reads a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The compiler, the runtime, the commands and the Python package.
    User,
    /// Only the test suite (`cargo test`) and its long runs.
    Test,
}

/// A documented environment variable.
#[derive(Clone, Copy, Debug)]
pub struct Var {
    /// Its name.
    pub name: &'static str,
    /// The default, in words, as README.md shows it.
    pub default: &'static str,
    /// What it does.
    pub doc: &'static str,
    /// Who reads it.
    pub scope: Scope,
}

/// `APPY_CACHE_DIR`: the persistent cache directory.
pub const CACHE_DIR: &str = "APPY_CACHE_DIR";
/// `APPY_ALWAYS_COMPILE`: ignore compiled cache entries.
pub const ALWAYS_COMPILE: &str = "APPY_ALWAYS_COMPILE";
/// `APPY_AUTOTUNE`: autotune GPU specialisations.
pub const AUTOTUNE: &str = "APPY_AUTOTUNE";
/// `APPY_COMPILE_THREADS`: background compilers of autotuning candidates.
pub const COMPILE_THREADS: &str = "APPY_COMPILE_THREADS";
/// `APPY_PRINT_AUTOTUNING`: print the autotuner's timings and choices.
pub const PRINT_AUTOTUNING: &str = "APPY_PRINT_AUTOTUNING";
/// `APPY_DEVICE_BUDGET`: device memory a call may use, in bytes.
pub const DEVICE_BUDGET: &str = "APPY_DEVICE_BUDGET";
/// `APPY_DEVICES`: the GPUs launches are split between.
pub const DEVICES: &str = "APPY_DEVICES";
/// `APPY_SYNC_LAUNCHES`: synchronise after every kernel launch.
pub const SYNC_LAUNCHES: &str = "APPY_SYNC_LAUNCHES";
/// `APPY_VERIFY_EACH`: verify the IR after every Rust pass in release builds.
pub const VERIFY_EACH: &str = "APPY_VERIFY_EACH";
/// `APPY_LIBDEVICE`: the libdevice bitcode file.
pub const LIBDEVICE: &str = "APPY_LIBDEVICE";
/// `APPY_DEVICE`: the Python package's default device.
pub const DEVICE: &str = "APPY_DEVICE";
/// `APPY_LOG`: the log filter.
pub const LOG: &str = "APPY_LOG";
/// `APPY_DISABLE_JIT`: the Python package returns functions unchanged.
pub const DISABLE_JIT: &str = "APPY_DISABLE_JIT";
/// `APPY_NUM_THREADS`: the CPU back end's thread count.
pub const NUM_THREADS: &str = "APPY_NUM_THREADS";
/// `APPY_LIBOMP`: the OpenMP runtime the CPU back end loads.
pub const LIBOMP: &str = "APPY_LIBOMP";
/// `APPY_LIBMVEC`: the vector math library the CPU back end loads.
pub const LIBMVEC: &str = "APPY_LIBMVEC";
/// `APPY_LIBBLAS`: the BLAS library (ILP64 CBLAS) the CPU back end calls for matrix
/// products.
pub const LIBBLAS: &str = "APPY_LIBBLAS";
/// `APPY_CC`: the C compiler driver that links cached native code.
pub const CC: &str = "APPY_CC";

/// `APPY_BOUNDS_CHECK`: compile with bounds checks (checked mode).
pub const BOUNDS_CHECK: &str = "APPY_BOUNDS_CHECK";

/// `APPY_GPU_VECTOR`: seed 002's code generation on the GPU.
pub const GPU_VECTOR: &str = "APPY_GPU_VECTOR";

/// `APPY_STRIDED`: strided transfers of host arrays (off unless `1`).
pub const STRIDED: &str = "APPY_STRIDED";

/// Every variable appy reads, with its default (README.md lists them all).
pub const VARS: &[Var] = &[
    Var {
        name: CACHE_DIR,
        default: "`$XDG_CACHE_HOME/appy`, else `~/.cache/appy`",
        doc: "the persistent compile and autotuning cache; empty disables it. It must be yours (or root's) and writable by no one else, as must the directories above it (sticky ones such as `/tmp` excepted): otherwise caching is off, with one warning saying why (docs/ROBUSTNESS.md, \"Who can put code into a process\")",
        scope: Scope::User,
    },
    Var {
        name: ALWAYS_COMPILE,
        default: "off",
        doc: "ignore compiled entries of the cache (autotuning decisions are still used)",
        scope: Scope::User,
    },
    Var {
        name: AUTOTUNE,
        default: "on",
        doc: "`0` turns autotuning of GPU specialisations off. On, the Python package's first call of a specialisation runs the default vector length (1024) while the other candidates compile in the background, and its second call tunes (waiting for them if need be); `first` compiles and tunes every candidate before the first call runs",
        scope: Scope::User,
    },
    Var {
        name: COMPILE_THREADS,
        default: "one fewer than the cores, from 1 to 8",
        doc: "threads that compile autotuning candidates in the background",
        scope: Scope::User,
    },
    Var {
        name: DEVICES,
        default: "1",
        doc: "the GPUs calls split every kernel launch between (`appy exec`, and the Python package's calls on host arrays): a count (the first N devices), `all`, or GPU numbers (`0,1`; `0,0` runs two ranges on GPU 0, which tests the split on one GPU); each GPU runs a contiguous range of the launch's groups on its own copy of the data, which moves between GPUs directly (docs/MAPPING.md)",
        scope: Scope::User,
    },
    Var {
        name: PRINT_AUTOTUNING,
        default: "off",
        doc: "print every autotuning candidate's time and the choice",
        scope: Scope::User,
    },
    Var {
        name: DEVICE_BUDGET,
        default: "90 % of the free device memory",
        doc: "bytes of device memory a GPU call may use; launches whose data does not fit run in tiles",
        scope: Scope::User,
    },
    Var {
        name: SYNC_LAUNCHES,
        default: "off",
        doc: "synchronise after every kernel launch (a fault is then reported at its launch)",
        scope: Scope::User,
    },
    Var {
        name: VERIFY_EACH,
        default: "on in debug builds, off in release builds",
        doc: "verify the IR with MLIR after every Rust pass",
        scope: Scope::User,
    },
    Var {
        name: LIBDEVICE,
        default: "NVIDIA's pip packages (`nvidia/cu13`, `nvidia/cuda_nvcc`) and Triton's copy in the Python environment, then a CUDA toolkit's, then `.dev/libdevice.10.bc` in the current directory or a parent",
        doc: "NVIDIA's libdevice bitcode, linked for GPU math functions (`none`: turned off)",
        scope: Scope::User,
    },
    Var {
        name: DEVICE,
        default: "`auto`",
        doc: "the default device of the Python package and of `appy::default_device()` (`cpu`, `gpu` or `auto`)",
        scope: Scope::User,
    },
    Var {
        name: LOG,
        default: "`error` for the commands, `warn` for the Python package",
        doc: "the log filter (`tracing` directives, e.g. `debug`, `appy_passes=debug`); `debug` times every pass",
        scope: Scope::User,
    },
    Var {
        name: DISABLE_JIT,
        default: "off",
        doc: "the Python package returns `@appy.jit` functions unchanged (plain Python); read by `python/appy/_jit.py`, before the native module loads",
        scope: Scope::User,
    },
    Var {
        name: BOUNDS_CHECK,
        default: "off",
        doc: "checked mode: every array subscript is checked (an out-of-bounds index is an error naming the subscript; negative indices count from the end as in Python); the same as `appy run --bounds-check` and `@appy.jit(boundscheck=True)`",
        scope: Scope::User,
    },
    Var {
        name: GPU_VECTOR,
        default: "off",
        doc: "`1`: GPU kernels give each thread consecutive lanes, unroll and jam them, and access consecutive elements with 16-byte vector loads and stores (seed 002's code generation; docs/KERNEL_IR.md); off, each thread's lanes are a block apart",
        scope: Scope::User,
    },
    Var {
        name: STRIDED,
        default: "off",
        doc: "`1`: a launch reading or writing host (NumPy) arrays with constant strides (`a[2*i]`) moves only the elements it touches, packed (seed 002 §5.3; docs/KERNEL_IR.md; measured slower per call than moving the spanned box, BENCHMARKS.md); off, the box of indices it spans",
        scope: Scope::User,
    },
    Var {
        name: NUM_THREADS,
        default: "`OMP_NUM_THREADS`, else one per core",
        doc: "threads of the CPU back end's parallel loops",
        scope: Scope::User,
    },
    Var {
        name: LIBOMP,
        default: "the wheel's own copy, else LLVM 22's `libomp.so`, else Debian's `libomp.so.5`",
        doc: "the OpenMP runtime of the CPU back end; empty or missing: parallel loops run on one thread",
        scope: Scope::User,
    },
    Var {
        name: LIBMVEC,
        default: "glibc's `libmvec.so.1`",
        doc: "the vector math library of the CPU back end; empty or missing: math in vector loops is scalar calls",
        scope: Scope::User,
    },
    Var {
        name: LIBBLAS,
        default: "NumPy's bundled OpenBLAS (`numpy.libs`, from the Python package or a pip-installed NumPy), else Debian's `libopenblas64.so.0`",
        doc: "the BLAS library (OpenBLAS with 64-bit integers) the CPU back end calls for matrix products (`@`, `np.dot`, `mv` in tensor statements); empty or missing: products are loop nests",
        scope: Scope::User,
    },
    Var {
        name: CC,
        default: "`cc`",
        doc: "the C compiler driver that links the CPU back end's cached native code into a shared object",
        scope: Scope::User,
    },
    Var {
        name: "APPY_BLESS",
        default: "off",
        doc: "tests: rewrite the expected diagnostics of `tests/errors`",
        scope: Scope::Test,
    },
    Var {
        name: "APPY_CASES_ONLY",
        default: "all cases",
        doc: "tests: run only the `# test:` cases of functions whose name starts with this text",
        scope: Scope::Test,
    },
    Var {
        name: "APPY_BIN",
        default: "`target/debug/appy`",
        doc: "tests: the `appy` command `tests/appy_repo/test_appy_repo.py` runs",
        scope: Scope::Test,
    },
    Var {
        name: "APPY_TEST_DEVICE",
        default: "`cpu`",
        doc: "tests: the device `tests/appy_repo/test_appy_repo.py` runs APPy's programs on",
        scope: Scope::Test,
    },
    Var {
        name: "APPY_PYTHON",
        default: "`python3`",
        doc: "tests: the Python interpreter of the NumPy oracle",
        scope: Scope::Test,
    },
    Var {
        name: "APPY_FUZZ_CASES",
        default: "200",
        doc: "tests: programs the fuzzer generates",
        scope: Scope::Test,
    },
    Var {
        name: "APPY_WHOLEPROG_CASES",
        default: "300",
        doc: "tests: programs of the whole-program fuzzer's CI slice (`crates/appy-python/tests/test_wholeprog.py`)",
        scope: Scope::Test,
    },
    Var {
        name: "APPY_WHOLEPROG_KEEP_RUNDIR",
        default: "off",
        doc: "tests: the whole-program fuzzer keeps its temporary run directory",
        scope: Scope::Test,
    },
    Var {
        name: "APPY_FUZZ_SEED",
        default: "0",
        doc: "tests: the fuzzer's first seed",
        scope: Scope::Test,
    },
    Var {
        name: "APPY_TEST_THREADS",
        default: "2",
        doc: "tests: the CPU back end's thread count in the differential, e2e and property tests",
        scope: Scope::Test,
    },
    Var {
        name: "APPY_OPENMP_CHILD",
        default: "unset",
        doc: "tests: set by the OpenMP thread test for the child process it starts",
        scope: Scope::Test,
    },
    Var {
        name: "APPY_CACHE_CHILD",
        default: "unset",
        doc: "tests: set by the persistent-cache tests for the new process they start (which must find the entries the test stored)",
        scope: Scope::Test,
    },
    Var {
        name: "APPY_FUZZ_FRONTEND_ONLY",
        default: "off",
        doc: "tests: fuzz the frontend only (no MLIR)",
        scope: Scope::Test,
    },
];

/// The value of variable `name` (one of [`VARS`]), if set and valid Unicode.
pub fn get(name: &str) -> Option<String> {
    debug_assert!(VARS.iter().any(|v| v.name == name), "{name} is not in config::VARS");
    std::env::var(name).ok()
}

/// Whether flag `name` is on: set, and neither empty nor `0`.
pub fn flag(name: &str) -> bool {
    get(name).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The cache directory, or `None` when caching is disabled (`APPY_CACHE_DIR` set to
/// the empty string, or no home directory).
pub fn cache_dir() -> Option<PathBuf> {
    debug_assert!(VARS.iter().any(|v| v.name == CACHE_DIR));
    if let Some(d) = std::env::var_os(CACHE_DIR) {
        return if d.is_empty() { None } else { Some(PathBuf::from(d)) };
    }
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return Some(PathBuf::from(x).join("appy"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".cache/appy"))
}

/// `APPY_ALWAYS_COMPILE`.
pub fn always_compile() -> bool {
    flag(ALWAYS_COMPILE)
}

/// `APPY_BOUNDS_CHECK`.
pub fn bounds_check() -> bool {
    flag(BOUNDS_CHECK)
}

/// `APPY_GPU_VECTOR`.
pub fn gpu_vector() -> bool {
    flag(GPU_VECTOR)
}

/// `APPY_STRIDED`.
pub fn strided_transfers() -> bool {
    flag(STRIDED)
}

/// `APPY_AUTOTUNE` (on unless `0`).
pub fn autotune() -> bool {
    get(AUTOTUNE).is_none_or(|v| v != "0")
}

/// `APPY_AUTOTUNE=first`: tune before the first call runs.
pub fn autotune_first_call() -> bool {
    get(AUTOTUNE).is_some_and(|v| v == "first")
}

/// `APPY_COMPILE_THREADS`, when a positive number.
pub fn compile_threads() -> Option<usize> {
    get(COMPILE_THREADS).and_then(|v| v.trim().parse().ok()).filter(|n| *n > 0)
}

/// The GPUs a call splits its launches between (`APPY_DEVICES`, `appy exec --devices`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Devices {
    /// Every GPU.
    All,
    /// The first N GPUs (as many as there are, when fewer).
    Count(usize),
    /// These GPUs, by CUDA ordinal, in this order; an ordinal given twice is one GPU
    /// running two ranges (tests the split on a machine with one GPU).
    List(Vec<usize>),
}

impl Devices {
    /// One GPU: nothing to split.
    pub fn one(&self) -> bool {
        matches!(self, Devices::Count(1)) || matches!(self, Devices::List(l) if l.len() == 1)
    }
}

/// Parses a device set: a count (`2`), `all`, or ordinals (`0,1`, `0,0`).
pub fn parse_devices(text: &str) -> Result<Devices, String> {
    let t = text.trim();
    let bad = || format!("`{t}`: expected a count of GPUs (`2`), `all`, or GPU numbers (`0,1`)");
    if t == "all" {
        return Ok(Devices::All);
    }
    if t.contains(',') {
        let list = t
            .split(',')
            .map(|x| x.trim().parse::<usize>().map_err(|_| bad()))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Devices::List(list));
    }
    match t.parse::<usize>() {
        Ok(n) if n > 0 => Ok(Devices::Count(n)),
        _ => Err(bad()),
    }
}

/// `APPY_DEVICES` (one GPU when unset or empty).
pub fn devices() -> Result<Devices, String> {
    match get(DEVICES).filter(|v| !v.trim().is_empty()) {
        Some(v) => parse_devices(&v).map_err(|e| format!("APPY_DEVICES={e}")),
        None => Ok(Devices::Count(1)),
    }
}

/// `APPY_PRINT_AUTOTUNING`.
pub fn print_autotuning() -> bool {
    flag(PRINT_AUTOTUNING)
}

/// `APPY_DEVICE_BUDGET` in bytes; `None` when unset or not a number.
pub fn device_budget() -> Option<usize> {
    get(DEVICE_BUDGET).and_then(|v| v.trim().parse().ok())
}

/// `APPY_SYNC_LAUNCHES`.
pub fn sync_launches() -> bool {
    flag(SYNC_LAUNCHES)
}

/// `APPY_VERIFY_EACH`.
pub fn verify_each() -> bool {
    flag(VERIFY_EACH)
}

/// `APPY_LIBDEVICE`, when set and not empty.
pub fn libdevice() -> Option<PathBuf> {
    get(LIBDEVICE).filter(|p| !p.is_empty()).map(PathBuf::from)
}

/// `APPY_DEVICE`, as text (`cpu`, `gpu`, `auto`).
pub fn device() -> Option<String> {
    get(DEVICE)
}

/// `APPY_LOG`, the log filter's directives.
pub fn log() -> Option<String> {
    get(LOG)
}

/// `APPY_NUM_THREADS`, when a positive number.
pub fn num_threads() -> Option<i32> {
    get(NUM_THREADS).and_then(|v| v.trim().parse::<i32>().ok()).filter(|n| *n > 0)
}

/// A library path variable (`APPY_LIBOMP`, `APPY_LIBMVEC`, `APPY_LIBBLAS`): `None` when unset,
/// `Some(None)` when set to the empty string (none wanted), else the path.
pub fn library(name: &str) -> Option<Option<PathBuf>> {
    debug_assert!(VARS.iter().any(|v| v.name == name));
    std::env::var_os(name).map(|p| (!p.is_empty()).then(|| PathBuf::from(p)))
}

/// `APPY_CC`, else `cc`.
pub fn cc() -> String {
    get(CC).filter(|c| !c.is_empty()).unwrap_or_else(|| "cc".into())
}

/// A test-harness variable ([`Scope::Test`]).
pub fn test_var(name: &str) -> Option<String> {
    debug_assert!(
        VARS.iter().any(|v| v.name == name && v.scope == Scope::Test),
        "{name} is not a test variable"
    );
    get(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_sets() {
        assert_eq!(parse_devices("2"), Ok(Devices::Count(2)));
        assert_eq!(parse_devices(" all "), Ok(Devices::All));
        assert_eq!(parse_devices("0, 1"), Ok(Devices::List(vec![0, 1])));
        assert_eq!(parse_devices("0,0"), Ok(Devices::List(vec![0, 0])));
        for bad in ["0", "-1", "x", "0,,1", "1.5"] {
            assert!(parse_devices(bad).is_err(), "{bad}");
        }
        assert!(Devices::Count(1).one() && Devices::List(vec![3]).one() && !Devices::List(vec![0, 0]).one());
    }

    #[test]
    fn names_are_unique_and_prefixed() {
        let mut names: Vec<&str> = VARS.iter().map(|v| v.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), VARS.len());
        assert!(names.iter().all(|n| n.starts_with("APPY_")));
    }
}
