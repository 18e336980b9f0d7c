//! Finding NVIDIA's libdevice (`libdevice.10.bc`), the bitcode of the GPU math functions
//! (`exp`, `log`, `tanh`, ...), without requiring a CUDA toolkit.
//!
//! The search, in order (the first file that exists wins):
//! 1. `APPY_LIBDEVICE`: the file it names (`none` turns libdevice off, to see what a
//!    machine without it gets; a name that is not a file is reported, not skipped);
//! 2. NVIDIA's pip packages in the Python environment, as numba-cuda and
//!    `cuda.pathfinder` find them: `nvidia/cu13/nvvm/libdevice/` (CUDA 13 wheels) and
//!    `nvidia/cuda_nvcc/nvvm/libdevice/` (`nvidia-cuda-nvcc-cu12`), then the copy
//!    Triton ships (`triton/backends/nvidia/lib/`, there wherever PyTorch is), under
//!    each site-packages directory the Python package registers ([`register_site_dirs`]);
//! 3. a CUDA toolkit: `$CUDA_HOME`, `$CUDA_PATH`, `/usr/local/cuda`, the newest
//!    `/usr/local/cuda-*`, and Debian's and Ubuntu's `nvidia-cuda-toolkit` locations;
//! 4. the development copy `scripts/fetch-libdevice.sh` writes (`.dev/libdevice.10.bc`
//!    in the current directory or a parent, or in the source tree appy was built from).
//!
//! appy does not bundle libdevice: it is part of NVIDIA's CUDA toolkit under NVIDIA's
//! license, and NVIDIA publishes it in the pip packages above; a PyTorch installation
//! brings Triton's copy along.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where a libdevice was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `APPY_LIBDEVICE`.
    Env,
    /// A pip package in the Python environment (NVIDIA's, or Triton's copy).
    PipPackage,
    /// A CUDA toolkit.
    Toolkit,
    /// The development copy (`scripts/fetch-libdevice.sh`).
    DevCopy,
}

impl Source {
    /// How `python -m appy doctor` names it.
    pub fn describe(self) -> &'static str {
        match self {
            Source::Env => "APPY_LIBDEVICE",
            Source::PipPackage => "pip package in the Python environment",
            Source::Toolkit => "CUDA toolkit",
            Source::DevCopy => "development copy (scripts/fetch-libdevice.sh)",
        }
    }
}

/// A libdevice that was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The file.
    pub path: PathBuf,
    /// Where it came from.
    pub source: Source,
}

/// Why none was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Missing {
    /// `APPY_LIBDEVICE=none`.
    Disabled,
    /// `APPY_LIBDEVICE` names something that is not a file.
    NotAFile(PathBuf),
    /// Nothing at any of these places.
    NotFound(Vec<PathBuf>),
}

impl Missing {
    /// What went wrong and what to do, for an error message (one line each).
    pub fn explain(&self) -> (String, String) {
        const INSTALL: &str = "install NVIDIA's CUDA compiler package (`pip install nvidia-cuda-nvcc-cu12`; CUDA 13's wheels put it under `nvidia/cu13`) or a CUDA toolkit, or set APPY_LIBDEVICE to a libdevice.10.bc; `python -m appy doctor` shows where appy looked";
        match self {
            Missing::Disabled => (
                "libdevice is turned off (APPY_LIBDEVICE=none)".into(),
                format!("unset APPY_LIBDEVICE; where none is found, {INSTALL}"),
            ),
            Missing::NotAFile(p) => (
                format!("APPY_LIBDEVICE names `{}`, which is not a file", p.display()),
                "set APPY_LIBDEVICE to the path of libdevice.10.bc, or unset it to search".into(),
            ),
            Missing::NotFound(tried) => (
                format!("appy found no libdevice.10.bc (looked in {} places)", tried.len()),
                INSTALL.into(),
            ),
        }
    }
}

/// Everything the search reads, so that it can be tested on made-up directories.
#[derive(Clone, Debug, Default)]
pub struct Search {
    /// `APPY_LIBDEVICE`, when set and not empty.
    pub env: Option<String>,
    /// Python's site-packages directories.
    pub site_dirs: Vec<PathBuf>,
    /// CUDA toolkit roots, in order.
    pub toolkits: Vec<PathBuf>,
    /// Directories to look for `.dev/libdevice.10.bc` in (each and its parents).
    pub dev_dirs: Vec<PathBuf>,
}

/// The pip packages' libdevice directories under a site-packages directory: NVIDIA's
/// CUDA 13 and CUDA 12 compiler wheels, and Triton's copy (which PyTorch installs).
const PIP_DIRS: [&str; 3] = [
    "nvidia/cu13/nvvm/libdevice",
    "nvidia/cuda_nvcc/nvvm/libdevice",
    "triton/backends/nvidia/lib",
];
const FILE: &str = "libdevice.10.bc";

/// Runs the search over `s`.
pub fn search(s: &Search) -> Result<Found, Missing> {
    if let Some(e) = &s.env {
        if e == "none" {
            return Err(Missing::Disabled);
        }
        let p = PathBuf::from(e);
        return if p.is_file() {
            Ok(Found {
                path: p,
                source: Source::Env,
            })
        } else {
            Err(Missing::NotAFile(p))
        };
    }
    let mut tried = vec![];
    let mut probe = |p: PathBuf, source: Source| {
        if p.is_file() {
            let path = p.canonicalize().unwrap_or(p);
            return Some(Found { path, source });
        }
        tried.push(p);
        None
    };
    for d in &s.site_dirs {
        for sub in PIP_DIRS {
            if let Some(f) = probe(d.join(sub).join(FILE), Source::PipPackage) {
                return Ok(f);
            }
        }
    }
    for t in &s.toolkits {
        for sub in ["nvvm/libdevice", "libdevice"] {
            if let Some(f) = probe(t.join(sub).join(FILE), Source::Toolkit) {
                return Ok(f);
            }
        }
    }
    for d in &s.dev_dirs {
        let mut dir = d.clone();
        loop {
            if let Some(f) = probe(dir.join(".dev").join(FILE), Source::DevCopy) {
                return Ok(f);
            }
            if !dir.pop() {
                break;
            }
        }
    }
    Err(Missing::NotFound(tried))
}

static SITE_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Registers Python's site-packages directories (the Python package passes `sys.path`),
/// where NVIDIA's pip packages are looked for.
pub fn register_site_dirs(dirs: Vec<PathBuf>) {
    *SITE_DIRS.lock().unwrap_or_else(|e| e.into_inner()) = dirs;
}

static NO_DEV_COPY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Stops the search from looking for the development copy (`.dev/` of a checkout):
/// an installed package (the Python wheel) finds libdevice only where a user's machine
/// has it, never in the tree it was built from.
pub fn without_dev_copy() {
    NO_DEV_COPY.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The CUDA toolkit roots of this machine, in search order.
fn toolkits() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .collect();
    out.push(PathBuf::from("/usr/local/cuda"));
    // The newest versioned toolkit (`cuda-13.0` after `cuda-12.8`).
    let mut versioned: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir("/usr/local")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let v = name.strip_prefix("cuda-")?;
            let key: Vec<u32> = v.split('.').map(|x| x.parse().ok()).collect::<Option<_>>()?;
            Some((key, e.path()))
        })
        .collect();
    versioned.sort();
    out.extend(versioned.into_iter().rev().map(|(_, p)| p));
    out.push(PathBuf::from("/usr/lib/nvidia-cuda-toolkit"));
    out.push(PathBuf::from("/usr/lib/cuda"));
    out
}

/// The search on this machine: the environment, the registered site-packages, the
/// toolkits, and the development copy.
pub fn find() -> Result<Found, Missing> {
    let mut dev_dirs: Vec<PathBuf> = Vec::new();
    if !NO_DEV_COPY.load(std::sync::atomic::Ordering::Relaxed) {
        dev_dirs.extend(std::env::current_dir());
        dev_dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."));
    }
    search(&Search {
        env: appy_ir::config::libdevice().map(|p| p.to_string_lossy().into_owned()),
        site_dirs: SITE_DIRS.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        toolkits: toolkits(),
        dev_dirs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"BC").unwrap();
    }

    #[test]
    fn search_order() {
        let root = std::env::temp_dir().join(format!("appy-libdevice-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let site = root.join("site-packages");
        let cuda = root.join("cuda-13.0");
        let work = root.join("work/sub");
        std::fs::create_dir_all(&work).unwrap();
        let mut s = Search {
            env: None,
            site_dirs: vec![root.join("empty"), site.clone()],
            toolkits: vec![cuda.clone()],
            dev_dirs: vec![work.clone()],
        };
        let Err(Missing::NotFound(tried)) = search(&s) else {
            panic!("found one in an empty tree")
        };
        assert!(tried.contains(&site.join("nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc")));
        // The development copy in a parent directory.
        touch(&root.join("work/.dev/libdevice.10.bc"));
        assert_eq!(search(&s).unwrap().source, Source::DevCopy);
        // A toolkit comes before it.
        touch(&cuda.join("nvvm/libdevice/libdevice.10.bc"));
        assert_eq!(search(&s).unwrap().source, Source::Toolkit);
        // A pip package before the toolkit; CUDA 13's layout before CUDA 12's.
        touch(&site.join("nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc"));
        assert_eq!(
            search(&s).unwrap().path,
            site.join("nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc")
        );
        touch(&site.join("nvidia/cu13/nvvm/libdevice/libdevice.10.bc"));
        let f = search(&s).unwrap();
        assert_eq!(
            (f.source, f.path.clone()),
            (Source::PipPackage, site.join("nvidia/cu13/nvvm/libdevice/libdevice.10.bc"))
        );
        // Triton's copy after NVIDIA's packages.
        let triton = site.join("triton/backends/nvidia/lib/libdevice.10.bc");
        assert!(tried.contains(&triton));
        // APPY_LIBDEVICE first; `none` turns it off; a wrong name is reported.
        s.env = Some(cuda.join("nvvm/libdevice/libdevice.10.bc").to_string_lossy().into_owned());
        assert_eq!(search(&s).unwrap().source, Source::Env);
        s.env = Some("none".into());
        assert_eq!(search(&s), Err(Missing::Disabled));
        s.env = Some(root.join("nope.bc").to_string_lossy().into_owned());
        assert_eq!(search(&s), Err(Missing::NotAFile(root.join("nope.bc"))));
        assert!(Missing::NotFound(vec![]).explain().1.contains("pip install nvidia-cuda-nvcc-cu12"));
        let _ = std::fs::remove_dir_all(&root);
    }
}
