//! The host's BLAS library, for the CPU back end's matrix products.
//!
//! Compiled code calls CBLAS's `?gemm`/`?gemv` with 64-bit integers (ILP64) through
//! function pointers the runtime writes into the module's `appy_blas_<routine>`
//! globals (`appy-cpu-blas`). The library is found once per process:
//! `APPY_LIBBLAS`, else a path the embedding program prefers ([`prefer`]: the Python
//! package names NumPy's bundled OpenBLAS), else NumPy's bundled OpenBLAS where a
//! pip-installed NumPy usually lives, else Debian's `libopenblas64.so.0`. NumPy's
//! `scipy_openblas64` has worker threads that need a free core: with the OpenMP
//! runtime's idle workers spinning after each parallel loop, NPBench's `syr2k` (small
//! products between parallel loops) took 32 ms instead of 0.18 ms on two cores. Calls
//! of code that uses it therefore run with OpenMP's spin time at zero
//! ([`Blas::needs_idle_cores`]). Two
//! kinds of library are recognised, both ILP64:
//!
//! - an OpenBLAS built with 64-bit integers and plain CBLAS names (Debian's
//!   `libopenblas64`; `openblas_get_config()` says `USE64BITINT`);
//! - NumPy's `scipy_openblas64`, whose names carry a prefix and a suffix
//!   (`scipy_cblas_dgemm64_`).
//!
//! A library of 32-bit integers is not used (its routines would truncate sizes): matrix
//! products then stay loop nests. The library is opened with `RTLD_LOCAL` and its
//! routines taken by address, so another BLAS in the process cannot be bound by mistake.
//! Its thread count follows the CPU back end's (`APPY_NUM_THREADS`, else one per core),
//! set before each call of code that uses it ([`set_threads`]).

use appy_ir::blas::{ROUTINES, global_name};
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

unsafe extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

const RTLD_NOW: c_int = 2;

/// A loaded BLAS library: its path and the addresses of the routines compiled code
/// calls (those of [`appy_ir::blas::ROUTINES`]).
pub struct Blas {
    /// The library file.
    pub path: PathBuf,
    routines: Vec<(&'static str, usize)>,
    /// `openblas_set_num_threads`, when the library has it.
    set_threads: Option<usize>,
    /// Whether the library's worker threads need the cores the OpenMP runtime's idle
    /// workers spin on (NumPy's `scipy_openblas64`): calls of code that uses both run
    /// with OpenMP's spin time at zero.
    pub needs_idle_cores: bool,
}

impl Blas {
    /// The address of routine `name` (`dgemm`, `sgemv`, ...).
    pub fn address(&self, name: &str) -> Option<usize> {
        self.routines.iter().find(|(n, _)| *n == name).map(|(_, a)| *a)
    }
}

static PREFERRED: OnceLock<PathBuf> = OnceLock::new();

/// Names a library to use when `APPY_LIBBLAS` is not set (before the first CPU
/// compilation; later calls have no effect). The Python package names NumPy's bundled
/// OpenBLAS.
pub fn prefer(path: &Path) {
    let _ = PREFERRED.set(path.to_path_buf());
}

/// NumPy's bundled OpenBLAS (`numpy.libs/libscipy_openblas64_*.so`, a newer build than
/// Debian's) in the usual places a NumPy installed with pip lives: the active virtual or
/// conda environment, the user's site-packages, pyenv's versions, `/usr/local`.
fn numpy_openblas() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut prefixes: Vec<PathBuf> = vec![];
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(v) = std::env::var_os(var) {
            prefixes.push(PathBuf::from(v).join("lib"));
        }
    }
    if let Some(h) = &home {
        prefixes.push(h.join(".local/lib"));
        let pyenv = std::env::var_os("PYENV_ROOT")
            .map(PathBuf::from)
            .unwrap_or_else(|| h.join(".pyenv"));
        if let Ok(versions) = std::fs::read_dir(pyenv.join("versions")) {
            let mut vs: Vec<PathBuf> = versions.flatten().map(|e| e.path().join("lib")).collect();
            vs.sort();
            prefixes.extend(vs);
        }
    }
    prefixes.push(PathBuf::from("/usr/local/lib"));
    for lib in prefixes {
        let Ok(entries) = std::fs::read_dir(&lib) else { continue };
        let mut pythons: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("python3")))
            .collect();
        pythons.sort();
        for py in pythons {
            for site in ["site-packages", "dist-packages"] {
                let Ok(files) = std::fs::read_dir(py.join(site).join("numpy.libs")) else {
                    continue;
                };
                let mut found: Vec<PathBuf> = files
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("libscipy_openblas64_") && n.contains(".so"))
                    })
                    .collect();
                found.sort();
                if let Some(f) = found.into_iter().next() {
                    return Some(f);
                }
            }
        }
    }
    None
}

/// Debian's ILP64 OpenBLAS, where the alternatives system puts it.
const CANDIDATES: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/libopenblas64.so.0",
    "/usr/lib/aarch64-linux-gnu/libopenblas64.so.0",
    "/usr/lib64/libopenblas64.so.0",
];

/// The BLAS library, found and loaded once per process (`None`: none usable).
pub fn blas() -> Option<&'static Blas> {
    static BLAS: OnceLock<Option<Blas>> = OnceLock::new();
    BLAS.get_or_init(|| {
        let path = match appy_ir::config::library(appy_ir::config::LIBBLAS) {
            Some(p) => p,
            None => PREFERRED
                .get()
                .cloned()
                .or_else(numpy_openblas)
                .or_else(|| CANDIDATES.iter().map(PathBuf::from).find(|p| p.exists())),
        }?;
        match load(&path) {
            Ok(b) => {
                tracing::debug!("BLAS: {}", path.display());
                Some(b)
            }
            Err(e) => {
                tracing::warn!("BLAS library {} not used: {e}; matrix products run as loop nests", path.display());
                None
            }
        }
    })
    .as_ref()
}

fn sym(h: *mut c_void, name: &str) -> Option<usize> {
    let c = CString::new(name).ok()?;
    let p = unsafe { dlsym(h, c.as_ptr()) };
    (!p.is_null()).then_some(p as usize)
}

fn load(path: &Path) -> Result<Blas, String> {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| "bad path".to_string())?;
    let h = unsafe { dlopen(c.as_ptr(), RTLD_NOW) };
    if h.is_null() {
        return Err("cannot be opened".into());
    }
    // The naming scheme (CBLAS, then LAPACK's Fortran names), and 64-bit integers.
    let scipy = sym(h, "scipy_cblas_dgemm64_").is_some();
    let (prefix, suffix, lapack, set_threads) = if scipy {
        ("scipy_cblas_", "64_", ("scipy_", "_64_"), "scipy_openblas_set_num_threads64_")
    } else if sym(h, "cblas_dgemm").is_some() {
        let config = sym(h, "openblas_get_config").ok_or("not an OpenBLAS (cannot tell its integer width)")?;
        // SAFETY: OpenBLAS's `char *openblas_get_config(void)` returns a static string.
        let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn() -> *const c_char>(config) };
        let text = unsafe { CStr::from_ptr(f()) }.to_string_lossy().into_owned();
        if !text.contains("USE64BITINT") {
            return Err(format!(
                "its integers are 32-bit ({text}); appy needs an ILP64 build such as libopenblas64"
            ));
        }
        ("cblas_", "", ("", "_"), "openblas_set_num_threads")
    } else {
        return Err("no CBLAS routines".into());
    };
    let mut routines = vec![];
    for r in ROUTINES {
        let addr = match r {
            // The runtime's factorisation, over LAPACK's.
            "dpotrf" | "spotrf" => {
                let name = format!("{}{r}{}", lapack.0, lapack.1);
                let f = sym(h, &name).ok_or_else(|| format!("no `{name}`"))?;
                let (cell, helper) = if r == "dpotrf" {
                    (&DPOTRF, potrf_f64 as *const () as usize)
                } else {
                    (&SPOTRF, potrf_f32 as *const () as usize)
                };
                let _ = cell.set(f);
                helper
            }
            _ => {
                let name = format!("{prefix}{r}{suffix}");
                sym(h, &name).ok_or_else(|| format!("no `{name}`"))?
            }
        };
        routines.push((r, addr));
    }
    Ok(Blas {
        path: path.to_path_buf(),
        routines,
        set_threads: sym(h, set_threads),
        needs_idle_cores: scipy,
    })
}

/// The thread count last given to the library (0: none yet).
static THREADS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// Runs the library's routines on `n` threads (those of the CPU back end's parallel
/// regions; `None`: `APPY_NUM_THREADS`, else one per core), before a call of code that
/// uses it. Only a change reaches the library.
pub fn set_threads(n: Option<i32>) {
    static CORES: OnceLock<i64> = OnceLock::new();
    let Some(f) = blas().and_then(|b| b.set_threads) else { return };
    let n = match n {
        Some(n) => i64::from(n.max(1)),
        None => *CORES.get_or_init(|| {
            appy_ir::config::num_threads()
                .map(i64::from)
                .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get() as i64))
                .unwrap_or(1)
                .max(1)
        }),
    };
    if THREADS.swap(n, std::sync::atomic::Ordering::Relaxed) != n {
        // SAFETY: `void openblas_set_num_threads(int)` (`blasint` for the scipy build,
        // 64-bit: an `int` argument is passed in the same register).
        let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(i64)>(f) };
        unsafe { f(n) };
    }
}

/// Writes the routines' addresses into the `appy_blas_*` globals of loaded code;
/// `lookup` gives a global's address (null when the code has none). Returns whether
/// the code calls the library; an error when it does and no library is loaded.
pub fn bind(lookup: &dyn Fn(&str) -> *mut c_void) -> Result<bool, String> {
    let mut uses = false;
    for r in ROUTINES {
        let g = lookup(&global_name(r));
        if g.is_null() {
            continue;
        }
        let addr = blas()
            .and_then(|b| b.address(r))
            .ok_or_else(|| format!("compiled code calls BLAS `{r}` but no BLAS library is loaded"))?;
        // SAFETY: the global is the module's `memref<1xi64>` (an 8-byte slot).
        unsafe { std::ptr::write_volatile(g as *mut u64, addr as u64) };
        uses = true;
    }
    Ok(uses)
}

/// LAPACK's `dpotrf` / `spotrf` (Fortran interface, 64-bit integers) of the loaded
/// library.
static DPOTRF: OnceLock<usize> = OnceLock::new();
static SPOTRF: OnceLock<usize> = OnceLock::new();

/// LAPACK's `?potrf(uplo, n, a, lda, info)`.
type Potrf = unsafe extern "C" fn(*const u8, *const i64, *mut u8, *const i64, *mut i64, usize);

/// The Cholesky factorisation compiled code calls (`appy_blas_?potrf`, see
/// [`appy_ir::blas::ROUTINES`]): the lower triangle of the row-major `a[:n, :n]` (row
/// length `lda`, `rows` rows) is copied, factorised by LAPACK (`'U'` on the
/// column-major view, which is the row-major lower triangle), and written back only
/// when LAPACK succeeded (`info` 0); the upper triangle is never touched. `-1` when `a`
/// has fewer than `n` rows or columns (the loops then run and report it as they do).
///
/// # Safety
///
/// `a` must point to `rows` rows of `lda` elements of type `T`.
unsafe fn potrf<T: Copy + Default>(f: Option<&usize>, a: *mut T, n: i64, lda: i64, rows: i64) -> i64 {
    let Some(&f) = f else { return -1 };
    if n <= 0 {
        return 0;
    }
    if n > rows || n > lda {
        return -1;
    }
    let (n_, ld) = (n as usize, lda as usize);
    let Some(len) = n_.checked_mul(n_) else { return -1 };
    let mut buf = vec![T::default(); len];
    for i in 0..n_ {
        // SAFETY: row i < rows of the caller's array, columns 0..=i < n <= lda.
        let row = unsafe { std::slice::from_raw_parts(a.add(i * ld), i + 1) };
        buf[i * n_..i * n_ + i + 1].copy_from_slice(row);
    }
    let mut info = 0i64;
    // SAFETY: LAPACK's signature; the buffer holds n * n elements.
    let f = unsafe { std::mem::transmute::<usize, Potrf>(f) };
    unsafe { f(b"U".as_ptr(), &n, buf.as_mut_ptr() as *mut u8, &n, &mut info, 1) };
    if info == 0 {
        for i in 0..n_ {
            // SAFETY: as above.
            let row = unsafe { std::slice::from_raw_parts_mut(a.add(i * ld), i + 1) };
            row.copy_from_slice(&buf[i * n_..i * n_ + i + 1]);
        }
    }
    info
}

unsafe extern "C" fn potrf_f64(a: *mut f64, n: i64, lda: i64, rows: i64) -> i64 {
    // SAFETY: compiled code passes its array's address and sizes.
    unsafe { potrf(DPOTRF.get(), a, n, lda, rows) }
}

unsafe extern "C" fn potrf_f32(a: *mut f32, n: i64, lda: i64, rows: i64) -> i64 {
    // SAFETY: as above.
    unsafe { potrf(SPOTRF.get(), a, n, lda, rows) }
}
