//! The `# test:` cases written above jitted functions in `tests/cases/*.py` and
//! `examples/*.py` (see `appy_tests::cases`): each runs on random inputs on the CPU
//! back end, and as a GPU bundle on the host device (its host program as on a GPU, each
//! kernel launch run by the kernel's CPU function in three consecutive ranges of its
//! groups, strided accesses moving only the elements they touch), and is compared with
//! CPython + NumPy running the same file.

use appy_ir::diag::SourceFile;
use appy_runtime::HostValue;
use appy_tests::cases::{Spec, compare_ulp, specs_in};
use appy_tests::{Rng, compare, root};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs every case of every file in `dir`; returns the failures.
fn run_dir(dir: &str) -> Vec<String> {
    let mut failures = vec![];
    let mut files: Vec<_> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    files.sort();
    let only = appy_ir::config::test_var("APPY_CASES_ONLY");
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let specs = specs_in(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (func, spec) in specs {
            if only.as_ref().is_some_and(|o| !func.starts_with(o.as_str())) {
                continue;
            }
            for k in 0..spec.cases() {
                if let Err(e) = run_case(&path, &func, &spec, k) {
                    failures.push(format!(
                        "{}::{func} case {k} {:?}: {e}",
                        path.file_name().unwrap().to_string_lossy(),
                        spec.env(k)
                    ));
                }
            }
        }
    }
    failures
}

fn run_case(path: &Path, func: &str, spec: &Spec, k: usize) -> Result<(), String> {
    let mut rng = Rng::new(0x5eed ^ (k as u64) ^ func.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64)));
    let args = spec.args(k, &mut rng)?;
    let params: Vec<String> = spec.params.iter().map(|(n, _)| n.clone()).collect();
    let (want_args, want_ret) = appy_tests::oracle_with(path, func, &params, &args, spec.refld)?;
    let src = SourceFile::read(path).map_err(|e| e.to_string())?;
    let compiler = appy_compiler::Compiler::new();
    let mut got_args = args.clone();
    let opts = appy_compiler::Options {
        mvl: spec.mvl,
        ..Default::default()
    };
    let got_ret = appy_tests::run_cpu(&compiler, &src, func, &mut got_args, &opts).map_err(|d| d.render())?;
    check(spec, &params, &args, (&got_args, &got_ret), (&want_args, &want_ret))?;
    use appy_runtime::host_device::HostKernels;
    appy_runtime::cpu::set_num_threads(Some(appy_tests::test_threads()));
    let sig: Vec<_> = args.iter().map(|a| a.arg_type()).collect();
    let (bundle, kernels) = HostKernels::compile(&compiler, &src, func, &sig, &opts).map_err(|d| d.render())?;
    for (devices, what) in [(1, "on the host device"), (3, "split between three host devices")] {
        let mut host_args = args.clone();
        let host_ret =
            run_on_host_devices(&bundle, &kernels, devices, &mut host_args).map_err(|e| format!("the GPU bundle {what}: {e}"))?;
        check(spec, &params, &args, (&host_args, &host_ret), (&want_args, &want_ret)).map_err(|e| format!("the GPU bundle {what}: {e}"))?;
    }
    Ok(())
}

/// The GPU bundle of `func` run on `devices` host devices: on one, each launch runs in
/// three ranges of its groups; on several, each launch is split between them (each
/// device with its own memory, data moving between them as between GPUs), with
/// unequal shares.
fn run_on_host_devices(
    bundle: &appy_ir::bundle::Bundle,
    kernels: &appy_runtime::host_device::HostKernels,
    devices: usize,
    args: &mut [HostValue],
) -> Result<Vec<HostValue>, String> {
    use appy_runtime::host_device::HostDevice;
    let devs: Vec<HostDevice> = (0..devices).map(|_| HostDevice::new(if devices == 1 { 3 } else { 1 })).collect();
    let pairs: Vec<_> = devs.iter().map(|d| (d, kernels.kernels())).collect();
    let weights: Vec<f64> = (0..devices).map(|d| 1.0 + d as f64).collect();
    // On one device, strided accesses move only what they touch (APPY_STRIDED=1).
    let limits = appy_runtime::exec::Limits {
        strided: devices == 1,
        ..Default::default()
    };
    let (ret, t) =
        appy_runtime::exec::run_split(&pairs, &weights, bundle, args, &Default::default(), &limits).map_err(|e| e.to_string())?;
    SPLIT.0.fetch_add(t.split.0, Ordering::Relaxed);
    SPLIT.1.fetch_add(t.split.1, Ordering::Relaxed);
    PEER_BYTES.fetch_add(t.peer_bytes, Ordering::Relaxed);
    Ok(ret)
}

/// Launches split between host devices, launches that were not, and bytes copied
/// between the devices, over all cases.
static SPLIT: (AtomicUsize, AtomicUsize) = (AtomicUsize::new(0), AtomicUsize::new(0));
static PEER_BYTES: AtomicUsize = AtomicUsize::new(0);

type Values<'a> = (&'a [HostValue], &'a [HostValue]);

/// Compares final arguments and return values `got` with NumPy's `want`.
fn check(spec: &Spec, params: &[String], args: &[HostValue], got: Values<'_>, want: Values<'_>) -> Result<(), String> {
    let ((got_args, got_ret), (want_args, want_ret)) = (got, want);
    let cmp = |what: &str, g: &HostValue, w: &HostValue| -> Result<(), String> {
        if spec.ulp > 0 {
            return compare_ulp(what, g, w, spec.ulp);
        }
        match spec.tol {
            Some((rtol, atol)) => appy_tests::compare_tol(what, g, w, rtol, atol),
            None => compare(what, g, w),
        }
    };
    for ((p, g), w) in params.iter().zip(got_args).zip(want_args) {
        cmp(&format!("argument {p}"), g, w)?;
    }
    if got_ret.len() != want_ret.len() {
        return Err(format!("{} return values, expected {}", got_ret.len(), want_ret.len()));
    }
    for (i, (g, w)) in got_ret.iter().zip(want_ret).enumerate() {
        let (gd, wd) = (g.to_array().dtype, w.to_array().dtype);
        if gd != wd && !spec.refld {
            return Err(format!("return value {i} is {gd:?}, NumPy returns {wd:?}"));
        }
        cmp(&format!("return value {i}"), g, w)?;
    }
    // A case must exercise the function: it changes an argument or returns a value.
    let big = args.iter().any(|a| matches!(a, HostValue::Array(x) if x.len() >= 8));
    if big && want_ret.is_empty() && got_args.iter().zip(args).all(|(g, a)| g == a) {
        return Err("the case does not exercise the function (no argument changed, nothing returned)".into());
    }
    Ok(())
}

#[test]
fn cases() {
    let mut failures = run_dir("tests/cases");
    failures.extend(run_dir("examples"));
    let (split, whole, peer) = (
        SPLIT.0.load(Ordering::Relaxed),
        SPLIT.1.load(Ordering::Relaxed),
        PEER_BYTES.load(Ordering::Relaxed),
    );
    eprintln!(
        "split between host devices: {split} launches split, {whole} not (ranges writing the same elements), {peer} bytes between devices"
    );
    // The split runs must exercise splitting and the copies between devices.
    let all = appy_ir::config::test_var("APPY_CASES_ONLY").is_none();
    assert!(
        !all || !failures.is_empty() || (split > 100 && whole > 0 && peer > 0),
        "the split runs split too little"
    );
    assert!(failures.is_empty(), "{} case(s) failed:\n{}", failures.len(), failures.join("\n"));
}
