//! The persistent cache across processes: what one process stores, the next one finds
//! and runs as it was compiled (each test starts a new process of this test binary,
//! `crate::testlog::run_child`, which finds `APPY_CACHE_CHILD` set).

use super::*;
use crate::testlog::{run_child, test_name, warnings};
use appy_ir::types::DType;
use std::path::{Path, PathBuf};

fn private_tmp(name: &str) -> PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    let d = std::env::temp_dir().join(format!("appy-jit-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
    d
}

/// What the new process was started for (`APPY_CACHE_CHILD`), if this is one.
fn child_task() -> Option<String> {
    appy_ir::config::test_var("APPY_CACHE_CHILD")
}

/// Runs `func` of this module in a new process with the cache in `dir` and `task`;
/// fails the test unless it passed.
fn in_new_process(func: &str, dir: &Path, task: &str) {
    let name = test_name(module_path!(), func);
    let out = run_child(&name, &[("APPY_CACHE_DIR", dir.to_str().unwrap()), ("APPY_CACHE_CHILD", task)]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the new process ({task}) failed: {}\n{stdout}\n{stderr}",
        out.status
    );
}

fn array(dtype: DType, rank: usize) -> ArgType {
    ArgType::Array { dtype, rank }
}

// ---------------------------------------------------------------------------------
// CPU: specialisations of one function loaded from the cache as shared objects.

const SYMBOLS_SRC: &str = "import numpy as np
import appy


@appy.jit
def axpb(a, b):
    c = np.empty_like(a)
    for i in appy.prange(a.shape[0]):
        c[i] = a[i] * 3 + b[i]
    return c


@appy.jit
def lin(a, b):
    return a * 3 + b
";

/// Specialisations whose native code exports the same symbols (`axpb`,
/// `_mlir_ciface_axpb`, ...).
const SPECS: [(&str, DType, usize); 6] = [
    ("axpb", DType::F32, 1),
    ("axpb", DType::F64, 1),
    ("axpb", DType::I64, 1),
    ("lin", DType::F64, 2),
    ("lin", DType::F32, 1),
    ("lin", DType::I32, 2),
];

/// Compiles (or loads) spec `k` with the cache in `dir` (`None`: no cache); returns
/// the function (kept, as a process keeps its specialisations) and where its code came
/// from.
fn load_spec(compiler: &Compiler, k: usize, dir: Option<&Path>) -> (crate::cpu::CpuFunction, Origin) {
    let (func, dtype, rank) = SPECS[k];
    let file = SourceFile::new("symbols.py", SYMBOLS_SRC);
    let sig = [array(dtype, rank), array(dtype, rank)];
    let (c, origin) = compile_cpu_cached_with(compiler, &file, func, &sig, &[], &Options::default(), dir).unwrap();
    if let Some(t) = c.trial {
        t.passed();
    }
    (c.value.0, origin)
}

/// Calls `f`, spec `k`, and checks its result against `3 a + b`.
fn check_spec(f: &crate::cpu::CpuFunction, k: usize) {
    let (func, dtype, rank) = SPECS[k];
    let shape = if rank == 1 { vec![37] } else { vec![5, 7] };
    let n: usize = shape.iter().product();
    let float = matches!(dtype, DType::F32 | DType::F64);
    let a: Vec<f64> = (0..n).map(|i| (i % 7) as f64 * if float { 0.5 } else { 1.0 }).collect();
    let b: Vec<f64> = (0..n).map(|i| i as f64 - 9.0).collect();
    let mut args = vec![
        HostValue::Array(crate::HostArray::from_f64(dtype, shape.clone(), &a)),
        HostValue::Array(crate::HostArray::from_f64(dtype, shape.clone(), &b)),
    ];
    let r = f.call(&mut args).unwrap();
    let [HostValue::Array(r)] = &r[..] else {
        panic!("{func} {dtype:?} returned {r:?}")
    };
    assert_eq!((r.dtype, &r.shape), (dtype, &shape), "{func} {dtype:?}[{rank}]");
    let got: Vec<f64> = (0..n).map(|i| r.get_f64(i)).collect();
    let want: Vec<f64> = a.iter().zip(&b).map(|(x, y)| 3.0 * x + y).collect();
    assert_eq!(got, want, "{func} {dtype:?}[{rank}] computed something else");
}

/// A process that loads several specialisations of one function from the cache (in any
/// order, some compiled in the process itself) runs each one's own code: each shared
/// object binds its own symbols (`-Wl,-Bsymbolic`) and lends them to no other
/// (`RTLD_LOCAL`).
#[test]
fn specialisations_loaded_from_the_cache_run_their_own_code() {
    if let Some(task) = child_task() {
        let order = task.strip_prefix("cpu:").expect("a CPU task");
        let dir = crate::cache::dir().expect("the cache directory");
        let compiler = Compiler::new();
        let ((), warned) = warnings(|| {
            let mut loaded = vec![];
            for item in order.split(',') {
                // `k+`: compiled in this process (the execution engine), not loaded.
                let (k, fresh) = match item.strip_suffix('+') {
                    Some(k) => (k.parse().unwrap(), true),
                    None => (item.parse().unwrap(), false),
                };
                let (f, origin) = load_spec(&compiler, k, (!fresh).then_some(dir.as_path()));
                let want = if fresh { Origin::Compiled } else { Origin::CachedObject };
                assert_eq!(origin, want, "spec {k}");
                check_spec(&f, k);
                loaded.push((f, k));
            }
            // Every one again, all loaded at once.
            for (f, k) in loaded.iter().rev() {
                check_spec(f, *k);
            }
        });
        assert!(warned.is_empty(), "warnings: {warned:?}");
        return;
    }
    let dir = private_tmp("symbols");
    let compiler = Compiler::new();
    for k in 0..SPECS.len() {
        let (f, origin) = load_spec(&compiler, k, Some(&dir));
        assert_eq!(origin, Origin::Compiled);
        check_spec(&f, k);
    }
    let objects = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "so"))
        .count();
    assert_eq!(objects, SPECS.len());
    for order in ["0,1,2,3,4,5", "5,4,3,2,1,0", "1,0", "2,0,1", "4,3,5", "1,0+,2", "3+,5,4"] {
        in_new_process(
            "specialisations_loaded_from_the_cache_run_their_own_code",
            &dir,
            &format!("cpu:{order}"),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Native code in the cache is written with mode 0600 (in a 0700 directory) and loaded
/// only while it is this user's and writable by no one else; otherwise LLVM runs again
/// (from the entry's module) and the file is written anew.
#[test]
fn native_code_others_can_write_is_not_loaded() {
    use std::os::unix::fs::PermissionsExt;
    let dir = private_tmp("so-modes");
    let compiler = Compiler::new();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let (f, origin) = load_spec(&compiler, 1, Some(&dir));
    assert_eq!(origin, Origin::Compiled);
    check_spec(&f, 1);
    drop(f);
    let so = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "so"))
        .expect("native code");
    assert_eq!((mode(&dir), mode(&so)), (0o700, 0o600));
    assert_eq!(load_spec(&compiler, 1, Some(&dir)).1, Origin::CachedObject);
    let mut refusals = vec![
        (0o666, "it is writable by others (mode 0666)"),
        (0o620, "it is writable by its group (mode 0620)"),
    ];
    // SAFETY: `geteuid` cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        refusals.push((0o600, "it is owned by uid 12345, not by you (uid 0)"));
    }
    for (m, why) in refusals {
        std::fs::set_permissions(&so, std::fs::Permissions::from_mode(m)).unwrap();
        if m == 0o600 {
            std::os::unix::fs::chown(&so, Some(12345), None).unwrap();
        }
        let ((f, origin), warned) = warnings(|| load_spec(&compiler, 1, Some(&dir)));
        assert_eq!(origin, Origin::CachedModule, "{why}");
        check_spec(&f, 1);
        drop(f);
        assert_eq!(
            warned,
            vec![format!("appy cache: cannot load {} ({why}); compiling it again", so.display())]
        );
        assert_eq!(mode(&so), 0o600, "written anew");
        assert_eq!(load_spec(&compiler, 1, Some(&dir)).1, Origin::CachedObject);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------
// GPU: bundles and autotuning decisions (compiled without a GPU).

#[cfg(feature = "cuda")]
const GPU_SRC: &str = "import numpy as np
import appy


@appy.jit
def consts(a, b, N):
    m = float('-inf')
    #pragma parallel for shared(m)
    for i in range(N):
        m = max(m, a[i])
    #pragma parallel for
    for i in range(N):
        if a[i] != a[i]:
            b[i] = float('nan')
        elif a[i] < 1e-310:
            b[i] = 5e-324 * m
        elif a[i] > 1.7976931348623157e308:
            b[i] = 0.1234567890123
        else:
            b[i] = -2.2250738585072014e-308 + float('inf')
    return m
";

/// A kernel whose IR nests deeper than serde_json's default limit of 128 levels.
#[cfg(feature = "cuda")]
fn deep_src() -> String {
    let mut src = String::from("import appy\n\n\n@appy.jit\ndef deep(a, N):\n    #pragma parallel for\n    for i in range(N):\n");
    for k in 0..24 {
        let kw = if k == 0 { "if" } else { "elif" };
        src.push_str(&format!("        {kw} a[i] < {k}.25:\n            a[i] = {k}.5e-310\n"));
    }
    src
}

/// The GPU specialisations the test stores: source, function, signature, tuned.
#[cfg(feature = "cuda")]
fn gpu_specs() -> Vec<(String, &'static str, Vec<ArgType>, bool)> {
    let n = ArgType::Scalar {
        dtype: DType::I64,
        weak: true,
    };
    let mut v = vec![];
    for (dtype, tune) in [(DType::F64, true), (DType::F32, false), (DType::F32, true)] {
        v.push((GPU_SRC.to_string(), "consts", vec![array(dtype, 1), array(dtype, 1), n], tune));
        v.push((deep_src(), "deep", vec![array(dtype, 1), n], tune));
    }
    v
}

/// Tuning decisions: per shape bucket, the times of the candidates (seconds; what the
/// autotuner measures: any double, some candidates failed) and the fastest.
#[cfg(feature = "cuda")]
fn decisions() -> Vec<(Vec<HostValue>, Vec<f64>, usize)> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..16)
        .map(|k| {
            let args = vec![
                HostValue::Array(crate::HostArray::zeros(DType::F64, vec![1 << k])),
                HostValue::Array(crate::HostArray::zeros(DType::F64, vec![1 << k])),
                HostValue::Int(1 << k, DType::I64, true),
            ];
            let mut times: Vec<f64> = (0..appy_ir::TUNE_MVLS.len()).map(|_| 1e-6 + next() * 3e-3).collect();
            times[k % 8] = f64::INFINITY;
            let best = (0..times.len()).min_by(|a, b| times[*a].total_cmp(&times[*b])).unwrap();
            (args, times, best)
        })
        .collect()
}

/// GPU bundles (with `-inf`, NaN, subnormal and extreme float constants, nested deeper
/// than 128 JSON levels, tuned or not) and autotuning decisions (any times) stored by
/// one process are found by the next, which logs nothing.
#[cfg(feature = "cuda")]
#[test]
fn gpu_bundles_and_tuning_decisions_hit_in_a_new_process() {
    let opts = Options::default();
    let device = "NVIDIA H100 80GB HBM3";
    if let Some(task) = child_task() {
        assert_eq!(task, "gpu");
        let dir = crate::cache::dir().expect("the cache directory");
        let compiler = Compiler::new();
        let ((), warned) = warnings(|| {
            for (src, func, sig, tune) in gpu_specs() {
                let file = SourceFile::new(format!("{func}.py"), &src);
                let c = compile_gpu_cached(&compiler, &file, func, &sig, &opts, tune, Some(&dir)).unwrap();
                assert!(c.from_disk, "`{func}` {sig:?} (tuned: {tune}) was compiled again");
                c.trial.unwrap().passed();
                // The bundle is the one compiling makes, to the bit.
                let mvls: &[i64] = if tune { &appy_ir::TUNE_MVLS } else { &[] };
                let fresh = compiler.compile_gpu_tuned(&file, func, &sig, &opts, mvls).unwrap();
                assert_eq!(c.value.to_json(), fresh.to_json(), "`{func}` {sig:?}");
                if tune {
                    for (args, _, best) in decisions() {
                        let key = crate::tune::key_on(device, &c.value, &args);
                        assert_eq!(crate::tune::recorded(&dir, &key, &c.value), Some(best), "{key}");
                    }
                }
            }
        });
        assert!(warned.is_empty(), "warnings: {warned:?}");
        return;
    }
    let dir = private_tmp("gpu");
    let compiler = Compiler::new();
    for (src, func, sig, tune) in gpu_specs() {
        let file = SourceFile::new(format!("{func}.py"), &src);
        let c = compile_gpu_cached(&compiler, &file, func, &sig, &opts, tune, Some(&dir)).unwrap();
        assert!(!c.from_disk);
        // A bundle file (`appy compile`, `appy exec`) is read back at any depth too.
        let json = c.value.to_json();
        assert_eq!(appy_ir::bundle::Bundle::from_json(&json).map(|b| b.to_json()), Ok(json));
        if tune {
            for (args, times, best) in decisions() {
                let key = crate::tune::key_on(device, &c.value, &args);
                crate::tune::record(&dir, &key, &c.value, &times, best);
            }
        }
    }
    // The constants are in the bundles (as bit patterns: JSON has no infinities or NaNs).
    let consts = compiler
        .compile_gpu_tuned(&SourceFile::new("consts.py", GPU_SRC), "consts", &gpu_specs()[0].2, &opts, &[])
        .unwrap()
        .to_json();
    for c in [f64::NEG_INFINITY, f64::NAN, 5e-324, 0.1234567890123] {
        assert!(consts.contains(&c.to_bits().to_string()), "no constant {c:e} in the bundle");
    }
    in_new_process("gpu_bundles_and_tuning_decisions_hit_in_a_new_process", &dir, "gpu");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The values of a `tune(...)` list in a `transform(...)` clause are candidates beside
/// the vector lengths: compiled at the default vector length, different code, and a
/// decision for one of them is recorded and found again.
#[cfg(feature = "cuda")]
#[test]
fn tune_lists_are_candidates() {
    let src = "import appy\n\n\n@appy.jit\ndef rows(a, out):\n    #pragma parallel for transform(split(j, tune(2, 4, 8), inner=unr))\n    for i in range(a.shape[0]):\n        s = 0.0\n        for j in range(a.shape[1]):\n            s += a[i, j]\n        out[i] = s\n";
    let file = SourceFile::new("rows.py", src);
    let sig = vec![array(DType::F64, 2), array(DType::F64, 1)];
    let b = Compiler::new()
        .compile_gpu_tuned(&file, "rows", &sig, &Options::default(), &appy_ir::TUNE_MVLS)
        .unwrap();
    let n = appy_ir::TUNE_MVLS.len();
    // The vector lengths, the two further `tune` values, and seed 002's code
    // generation when it changes this function's code.
    let vector = usize::from(b.candidate(b.candidates() - 1).vector_code);
    assert_eq!(b.candidates(), n + 2 + vector);
    assert_eq!((b.candidate(n).choice, b.candidate(n + 1).choice), (1, 2));
    assert_eq!((b.candidate(n).mvl, b.candidate(n + 1).mvl), (b.mvl, b.mvl));
    assert!(b.ptx != b.candidate(n).ptx && b.candidate(n).ptx != b.candidate(n + 1).ptx);
    assert_eq!(crate::tune::label(b.candidate(n + 1)), format!("mvl={} tune=2", b.mvl));
    let back = appy_ir::bundle::Bundle::from_json(&b.to_json()).unwrap();
    assert_eq!(back.candidate(n + 1).choice, 2);
    let dir = private_tmp("tune-lists");
    let args = vec![
        HostValue::Array(crate::HostArray::zeros(DType::F64, vec![4, 8])),
        HostValue::Array(crate::HostArray::zeros(DType::F64, vec![4])),
    ];
    let key = crate::tune::key_on("dev", &b, &args);
    let mut times = vec![1e-3; n + 2 + vector];
    times[n + 1] = 5e-4;
    crate::tune::record(&dir, &key, &b, &times, n + 1);
    assert_eq!(crate::tune::recorded(&dir, &key, &b), Some(n + 1));
    // A decision for the vector-code candidate names it apart from the plain code
    // at the same vector length.
    let last = b.candidates() - 1;
    crate::tune::record(&dir, &key, &b, &times, last);
    assert_eq!(crate::tune::recorded(&dir, &key, &b), Some(last));
    let _ = std::fs::remove_dir_all(&dir);
}
