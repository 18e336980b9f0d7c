//! The `appy` command: a run writes the final arguments and return values as `.npy`;
//! bad command lines and bad files are clean errors with a non-zero exit; `compile
//! --tune` and `bench`.

use appy_ir::types::DType;
use appy_runtime::HostArray;
use std::path::{Path, PathBuf};
use std::process::Command;

fn appy() -> Command {
    Command::new(env!("CARGO_BIN_EXE_appy"))
}

fn appy_opt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_appy-opt"))
}

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// A scratch directory of one test, removed when the test ends, pass or fail.
fn tmp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("appy-cli-{name}-")).tempdir().unwrap()
}

fn write(dir: &Path, name: &str, a: &HostArray) -> String {
    let p = dir.join(name);
    a.write_npy(&p).unwrap();
    format!("@{}", p.display())
}

#[test]
fn run_writes_arguments_and_return_value() {
    let scratch = tmp("run");
    let d = scratch.path();
    let n = 1001;
    let a: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
    let arr = HostArray::from_f64(DType::F64, vec![n], &a);
    let out = d.join("out");
    let st = appy()
        .args([
            "run",
            examples().join("shared_sum.py").to_str().unwrap(),
            "--func",
            "shared_sum",
            "--device",
            "cpu",
        ])
        .args([
            "--arg",
            &format!("A={}", write(d, "a.npy", &arr)),
            "--arg",
            &format!("N={n}"),
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let ret = HostArray::read_npy(&out.join("return.npy")).unwrap();
    let want: f64 = a.iter().map(|x| x * x).sum();
    assert!(
        (ret.get_f64(0) - want).abs() < 1e-9 * want.abs().max(1.0),
        "{} vs {want}",
        ret.get_f64(0)
    );
    let a_out = HostArray::read_npy(&out.join("A.npy")).unwrap();
    assert_eq!(a_out, arr);
}

#[test]
fn command_line_errors_are_clean() {
    let scratch = tmp("errors");
    let d = scratch.path();
    let file = examples().join("vector_add.py");
    let f = file.to_str().unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["run".into(), f.into(), "--func".into(), "nope".into()],
            "no function named `nope`",
        ),
        (
            vec![
                "run".into(),
                f.into(),
                "--func".into(),
                "vector_add".into(),
                "--arg".into(),
                "Q=1".into(),
            ],
            "has no parameter `Q`",
        ),
        (
            vec![
                "run".into(),
                f.into(),
                "--func".into(),
                "vector_add".into(),
                "--arg".into(),
                "N=1".into(),
            ],
            "missing --arg",
        ),
        (
            vec![
                "run".into(),
                f.into(),
                "--func".into(),
                "vector_add".into(),
                "--arg".into(),
                "N=abc".into(),
            ],
            "is not a number",
        ),
        (
            vec!["run".into(), "/nonexistent.py".into(), "--func".into(), "f".into()],
            "cannot read",
        ),
        // An integer too large for int64 used to become a float, reported as
        // "range() arguments must be integers, not float".
        (
            vec![
                "run".into(),
                f.into(),
                "--func".into(),
                "vector_add".into(),
                "--arg".into(),
                "N=99999999999999999999".into(),
            ],
            "--arg N: `99999999999999999999` does not fit in a 64-bit integer",
        ),
    ];
    for (args, want) in cases {
        let o = appy().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err.contains(want), "{args:?}: expected `{want}` in:\n{err}");
        assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
    }
    // A bad .npy file.
    let bad = d.join("bad.npy");
    std::fs::write(&bad, b"\x93NUMPY garbage").unwrap();
    let o = appy()
        .args([
            "run",
            f,
            "--func",
            "vector_add",
            "--device",
            "cpu",
            "--arg",
            &format!("A=@{}", bad.display()),
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bad.npy"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A header whose element count overflows (2^62 x 4) used to be accepted as an
    // empty array, and the kernel read garbage.
    let huge = d.join("huge.npy");
    let mut h = "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n".to_string();
    while !(h.len() + 10).is_multiple_of(64) {
        h.insert(h.len() - 1, ' ');
    }
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(h.len() as u16).to_le_bytes());
    bytes.extend_from_slice(h.as_bytes());
    std::fs::write(&huge, &bytes).unwrap();
    let o = appy()
        .args(["run", f, "--func", "vector_add", "--device", "cpu"])
        .args(["--arg", &format!("A=@{}", huge.display())])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("huge.npy: an array of shape (4611686018427387904, 4) of float64 is too large"),
        "{err}"
    );
    // A compile error is located.
    let src = d.join("k.py");
    std::fs::write(
        &src,
        "import appy\n\n@appy.jit\ndef k(a, N):\n    #pragma parallel for\n    for i in range(N):\n        a[i] = undefined_name\n",
    )
    .unwrap();
    let arr = HostArray::from_f64(DType::F64, vec![4], &[1.0, 2.0, 3.0, 4.0]);
    let o = appy()
        .args(["run", src.to_str().unwrap(), "--func", "k", "--device", "cpu"])
        .args(["--arg", &format!("a={}", write(d, "a.npy", &arr)), "--arg", "N=4"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("k.py:7:16: error: undefined name `undefined_name`"), "{err}");
}

#[test]
fn tuned_bundles_and_bench() {
    let scratch = tmp("tune");
    let d = scratch.path();
    let out = d.join("va.json");
    let st = appy()
        .args([
            "compile",
            examples().join("vector_add.py").to_str().unwrap(),
            "--func",
            "vector_add",
            "--signature",
            "f32[:],f32[:],f32[:],int",
            "--tune",
            "-o",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let b = appy_ir::bundle::Bundle::from_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let mut mvls: Vec<i64> = (0..b.candidates())
        .filter(|k| !b.candidate(*k).vector_code)
        .map(|k| b.candidate(k).mvl)
        .collect();
    mvls.sort_unstable();
    assert_eq!(mvls, appy_ir::TUNE_MVLS.to_vec());
    assert!((0..b.candidates()).all(|k| !b.candidate(k).ptx.is_empty()));
    // Seed 002's code generation is one more candidate, last, at the first vector
    // length: a thread's four floats with one 16-byte load.
    let last = b.candidate(b.candidates() - 1);
    assert!(last.vector_code && last.mvl == b.mvl, "no vector-code candidate");
    assert!(last.ptx.contains("ld.global.v4") && !b.ptx.contains("ld.global.v4"));
    // `appy bench` on the CPU.
    let a = HostArray::from_f64(DType::F32, vec![100], &vec![1.0; 100]);
    let wa = write(d, "a.npy", &a);
    let st = appy()
        .args(["bench", examples().join("vector_add.py").to_str().unwrap(), "--func", "vector_add"])
        .args([
            "--arg",
            &format!("A={wa}"),
            "--arg",
            &format!("B={wa}"),
            "--arg",
            &format!("C={wa}"),
            "--arg",
            "N=100",
        ])
        .args(["--device", "cpu", "--repeat", "5"])
        .env("APPY_ALWAYS_COMPILE", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&st.stdout);
    assert!(
        st.status.success() && text.contains("median") && text.contains("over 5 calls"),
        "{text} {}",
        String::from_utf8_lossy(&st.stderr)
    );
}

/// Outputs are written all or nothing, never over an input, never two to one file.
#[test]
fn outputs_are_atomic_and_never_overwrite_inputs() {
    let scratch = tmp("outputs");
    let d = scratch.path();
    let f = examples().join("vector_add.py");
    let n = 7;
    let a = HostArray::from_f64(DType::F64, vec![n], &[1.5, 2.0, 3.0, -4.0, 5.0, 6.25, 7.0]);
    let (wa, wb) = (write(d, "a.npy", &a), write(d, "b.npy", &a));
    let c_in = write(d, "C.npy", &HostArray::from_f64(DType::F64, vec![n], &[0.5; 7]));
    let run = |out: &Path, c: &str| {
        appy()
            .args(["run", f.to_str().unwrap(), "--func", "vector_add", "--device", "cpu"])
            .args(["--arg", &format!("A={wa}"), "--arg", &format!("B={wb}"), "--arg", &format!("C={c}")])
            .args(["--arg", &format!("N={n}"), "--out", out.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let listing = |p: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        v.sort();
        v
    };
    // An output that cannot be written (C.npy is a directory): the other outputs keep
    // their previous contents (they used to be replaced, next to a stale C).
    let out = d.join("out");
    std::fs::create_dir_all(out.join("C.npy")).unwrap();
    std::fs::write(out.join("A.npy"), "previous A").unwrap();
    let o = run(&out, &c_in);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("error: cannot write") && err.contains("C.npy"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(out.join("A.npy")).unwrap(), "previous A");
    assert_eq!(listing(&out), ["A.npy", "C.npy"], "no temporary files left");
    std::fs::remove_dir(out.join("C.npy")).unwrap();
    let o = run(&out, &c_in);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(listing(&out), ["A.npy", "B.npy", "C.npy"]);
    let c = HostArray::read_npy(&out.join("C.npy")).unwrap();
    assert_eq!(c.get_f64(3), -8.0);
    // --out over an input: refused, the input unchanged.
    let before = std::fs::read(d.join("C.npy")).unwrap();
    let o = run(d, &c_in);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("is the array of parameter `C`") && err.contains("would be overwritten"),
        "{err}"
    );
    assert_eq!(std::fs::read(d.join("C.npy")).unwrap(), before);
    // `compile -o` over the source.
    let src = d.join("k.py");
    std::fs::copy(&f, &src).unwrap();
    let o = appy()
        .args(["compile", src.to_str().unwrap(), "--func", "vector_add"])
        .args(["--signature", "f64[:],f64[:],f64[:],int", "-o", src.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("is the source and would be overwritten by the bundle"),
        "{err}"
    );
    assert_eq!(std::fs::read(&src).unwrap(), std::fs::read(&f).unwrap());
    // A parameter named like a returned value.
    let clash = d.join("clash.py");
    std::fs::write(
        &clash,
        "import appy\n\n@appy.jit\ndef f(return_0, N):\n    s = 0.0\n    for i in range(N):\n        s += return_0[i]\n    return s, 2.0 * s\n",
    )
    .unwrap();
    let out2 = d.join("out2");
    let o = appy()
        .args(["run", clash.to_str().unwrap(), "--func", "f", "--device", "cpu"])
        .args(["--arg", &format!("return_0={wa}"), "--arg", &format!("N={n}")])
        .args(["--out", out2.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("would hold both the final value of parameter `return_0` and return value 0"),
        "{err}"
    );
    assert!(listing(&out2).is_empty(), "nothing written");
}

/// A fault in compiled code prints an `error:` line (the process still dies of the
/// signal); a cache entry whose code crashed its first call is evicted by the next
/// run, which compiles again and succeeds.
#[test]
fn crashes_are_reported_and_crashing_cache_entries_evicted() {
    let scratch = tmp("crash");
    let d = scratch.path();
    let good = d.join("good.py");
    let bad = d.join("bad.py");
    let body = |index: &str| {
        format!(
            "import appy\n\n@appy.jit\ndef vector_add(A, B, C, N):\n    #pragma parallel for simd\n    for i in range(N):\n        C[{index}] = A[i] + B[i]\n"
        )
    };
    std::fs::write(&good, body("i")).unwrap();
    // Far out of bounds: an unmapped address.
    std::fs::write(&bad, body("i + 1099511627776")).unwrap();
    let a = HostArray::from_f64(DType::F64, vec![5], &[1.0, 2.0, 3.0, 4.0, 5.5]);
    let wa = write(d, "a.npy", &a);
    let run = |src: &Path, cache: &Path| {
        let mut cmd = appy();
        // No core files from the crashes.
        // SAFETY: setrlimit is async-signal-safe.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                let zero = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
                libc::setrlimit(libc::RLIMIT_CORE, &zero);
                Ok(())
            });
        }
        cmd.args(["run", src.to_str().unwrap(), "--func", "vector_add", "--device", "cpu"])
            .args([
                "--arg",
                &format!("A={wa}"),
                "--arg",
                &format!("B={wa}"),
                "--arg",
                &format!("C={wa}"),
            ])
            .args(["--arg", "N=5", "--out", d.join("out").to_str().unwrap()])
            .env("APPY_CACHE_DIR", cache)
            .env("APPY_LOG", "warn")
            .output()
            .unwrap()
    };
    let entry = |cache: &Path| {
        std::fs::read_dir(cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "json"))
            .unwrap()
    };
    let (cache_good, cache_bad) = (d.join("cache-good"), d.join("cache-bad"));
    assert!(run(&good, &cache_good).status.success());
    let o = run(&bad, &cache_bad);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("error: `vector_add` (compiled code) crashed: SIGSEGV"),
        "a fault must print an error line:\n{err}"
    );
    // The good entry's key with the crashing code, correctly sealed: what a buggy
    // build of the compiler could have written.
    let good_doc: serde_json::Value = serde_json::from_slice(&std::fs::read(entry(&cache_good)).unwrap()).unwrap();
    let bad_doc: serde_json::Value = serde_json::from_slice(&std::fs::read(entry(&cache_bad)).unwrap()).unwrap();
    std::fs::write(
        entry(&cache_good),
        appy_runtime::cache::entry_text(good_doc["key"].as_str().unwrap(), &bad_doc["payload"]),
    )
    .unwrap();
    let o = run(&good, &cache_good);
    assert!(!o.status.success(), "the poisoned entry was not used");
    let o = run(&good, &cache_good);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("died during the first call of its code"), "{err}");
    let c = HostArray::read_npy(&d.join("out/C.npy")).unwrap();
    assert_eq!(c.get_f64(4), 11.0);
    // And the entry written again is the good one.
    let again: serde_json::Value = serde_json::from_slice(&std::fs::read(entry(&cache_good)).unwrap()).unwrap();
    assert_eq!(again["payload"], good_doc["payload"]);
}

/// Users' mistakes are errors that say what is wrong, where; not internal compiler
/// errors, not another mistake.
#[test]
fn messages_name_the_users_mistake() {
    let scratch = tmp("messages");
    let d = scratch.path();
    let check = |o: std::process::Output, want: &str| {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "succeeded: {err}");
        assert!(err.contains(want), "expected `{want}` in:\n{err}");
        assert!(!err.contains("internal compiler error"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    };
    // appy-opt: MLIR the user wrote, at its location.
    let bad = d.join("bad.mlir");
    std::fs::write(&bad, "func.func @f() {\n  %0 = arith.addi %x, %x : i32\n  return\n}\n").unwrap();
    check(
        appy_opt().arg(&bad).output().unwrap(),
        &format!(
            "{}:2:19: error: MLIR failed to parse the module: use of undeclared SSA value name",
            bad.display()
        ),
    );
    let ok = d.join("ok.mlir");
    std::fs::write(&ok, "func.func @f(%a: memref<?xf64>) {\n  return\n}\n").unwrap();
    check(
        appy_opt().arg(&ok).arg("--pass-pipeline=no-such-pass").output().unwrap(),
        "error: invalid pass pipeline",
    );
    check(
        appy_opt().arg(&ok).arg("--pass-pipeline=canonicalize{bogus=1}").output().unwrap(),
        "no such option bogus",
    );
    // A malformed --signature is not an arity mismatch.
    let va = examples().join("vector_add.py");
    check(
        appy_opt().arg(&va).args(["--signature", "f32[:],f32[:"]).output().unwrap(),
        "--signature: `f32[:],f32[:`: `[` without a matching `]`",
    );
    check(
        appy()
            .args([
                "compile",
                va.to_str().unwrap(),
                "--func",
                "vector_add",
                "--signature",
                "f32[:]x,f32[:],f32[:],int",
            ])
            .args(["-o", d.join("x.json").to_str().unwrap()])
            .output()
            .unwrap(),
        "--signature: argument 1: `f32[:]x`",
    );
    // Invalid UTF-8: the line and column of the first bad byte.
    let latin1 = d.join("latin1.py");
    let mut bytes = std::fs::read(&va).unwrap();
    let at = bytes.windows(3).position(|w| w == b"for").unwrap();
    bytes.splice(at..at, *b"x = 1  # caf\xe9\n    ");
    std::fs::write(&latin1, &bytes).unwrap();
    let line = 1 + bytes[..at].iter().filter(|b| **b == b'\n').count();
    let col = at - bytes[..at].iter().rposition(|b| *b == b'\n').unwrap() + 12;
    let want = format!("{}:{line}:{col}: error: the file is not valid UTF-8 (byte 0xe9)", latin1.display());
    check(appy_opt().arg(&latin1).output().unwrap(), &want);
    check(
        appy()
            .args(["run", latin1.to_str().unwrap(), "--func", "vector_add", "--arg", "N=1"])
            .output()
            .unwrap(),
        &want,
    );
}

/// `appy-opt x.mlir --emit=LEVEL` lowers the input from the level it is at (it used to
/// print its input unchanged).
#[test]
fn opt_lowers_mlir_input_from_its_level() {
    let scratch = tmp("levels");
    let d = scratch.path();
    let va = examples().join("rowwise.py");
    let emit = |input: &Path, level: &str| {
        let o = appy_opt()
            .arg(input)
            .args(["--func", "row_sum", "--signature", "f64[:,:],f64[:],int,int"])
            .arg(format!("--emit={level}"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{level}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let mut levels = std::collections::HashMap::new();
    for level in ["appy", "loops", "cpu", "gpu", "llvm"] {
        let text = emit(&va, level);
        let p = d.join(format!("{level}.mlir"));
        std::fs::write(&p, &text).unwrap();
        levels.insert(level, (p, text));
    }
    let opt = |input: &Path, args: &[&str]| appy_opt().arg(input).args(args).output().unwrap();
    let text = |o: std::process::Output| {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    // Without --emit, MLIR is printed as it is.
    assert_eq!(text(opt(&levels["loops"].0, &[])), levels["loops"].1);
    // Lowered from its own level, to the same text as from the source.
    for (from, to) in [
        ("appy", "loops"),
        ("appy", "gpu"),
        ("appy", "cpu"),
        ("appy", "llvm"),
        ("loops", "gpu"),
        ("cpu", "llvm"),
        ("gpu", "gpu"),
    ] {
        let got = text(opt(&levels[from].0, &[&format!("--emit={to}")]));
        assert_eq!(got, levels[to].1, "{from} -> {to}");
    }
    // PTX from the gpu level.
    let ptx = text(opt(&levels["gpu"].0, &["--emit=ptx"]));
    assert!(ptx.contains(".entry _appy_row_sum_k0"), "{ptx}");
    // Levels do not go up, and the GPU (loops, gpu) and the CPU (cpu, llvm) are
    // different paths.
    for (from, to) in [
        ("loops", "appy"),
        ("gpu", "loops"),
        ("gpu", "llvm"),
        ("llvm", "gpu"),
        ("loops", "llvm"),
        ("cpu", "gpu"),
        ("llvm", "cpu"),
    ] {
        let o = opt(&levels[from].0, &[&format!("--emit={to}")]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{from} -> {to}");
        assert!(
            err.contains(&format!(
                "error: --emit={to}: the input is at the `{from}` level, which does not lower to `{to}`"
            )),
            "{err}"
        );
    }
}

/// The CPU back end's execution engine leaves no perf jitdump directory behind (every
/// run used to leave `$TMPDIR/.debug/jit/llvm-IR-jit-*`), unless `JITDUMPDIR` asks
/// for one.
#[test]
fn no_jitdump_directories_are_left() {
    let scratch = tmp("jitdump");
    let d = scratch.path();
    let tmpdir = d.join("tmp");
    let _ = std::fs::remove_dir_all(&tmpdir);
    std::fs::create_dir_all(&tmpdir).unwrap();
    let a = HostArray::from_f64(DType::F64, vec![3], &[1.0, 2.0, 3.0]);
    let wa = write(d, "a.npy", &a);
    let run = |jitdumpdir: Option<&Path>| {
        let mut cmd = appy();
        cmd.args(["run", examples().join("vector_add.py").to_str().unwrap(), "--func", "vector_add"])
            .args(["--device", "cpu", "--arg", &format!("A={wa}"), "--arg", &format!("B={wa}")])
            .args(["--arg", &format!("C={wa}"), "--arg", "N=3"])
            .env("TMPDIR", &tmpdir)
            .env("APPY_CACHE_DIR", "")
            .env_remove("JITDUMPDIR");
        if let Some(j) = jitdumpdir {
            cmd.env("JITDUMPDIR", j);
        }
        let o = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{err}");
        err
    };
    let err = run(None);
    assert!(!err.contains("could not"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&tmpdir).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    // Asked for: the dump is where JITDUMPDIR says.
    let keep = d.join("keep");
    std::fs::create_dir_all(&keep).unwrap();
    run(Some(&keep));
    assert!(keep.join(".debug/jit").is_dir());
}

#[test]
fn print_matches_python() {
    // `print(...)` prints in program order with CPython's and NumPy's formatting.
    let root = examples().join("..");
    let file = root.join("tests/cases/printing.py");
    let scratch = tmp("print");
    let dir = scratch.path();
    let a = HostArray::from_f64(DType::F64, vec![5], &[0.5, 1.25, -3.0, 1e-7, 123456789.0]);
    let arg = write(dir, "a.npy", &a);
    let out = appy()
        .env("APPY_CACHE_DIR", "")
        .args(["run", file.to_str().unwrap(), "--func", "report", "--device", "cpu", "--arg"])
        .arg(format!("a={arg}"))
        .args(["--arg", "n=5", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let script = format!(
        "import importlib.util, numpy as np, sys\nsys.path.insert(0, {oracle:?})\nspec = importlib.util.spec_from_file_location('m', {file:?})\nm = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\nm.report(np.array([0.5, 1.25, -3.0, 1e-7, 123456789.0]), 5)\n",
        oracle = root.join("tests/oracle").to_str().unwrap(),
        file = file.to_str().unwrap()
    );
    let py = Command::new("python3").arg("-c").arg(script).output().unwrap();
    assert!(py.status.success(), "{}", String::from_utf8_lossy(&py.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&py.stdout));
}

/// Matrix products on the CPU: with the host's BLAS (Debian's `libopenblas64`, when
/// installed: the compile trace must show `appy-cpu-blas`), without one
/// (`APPY_LIBBLAS=` : loop nests), and with a BLAS of 32-bit integers, which is not
/// used (loop nests, no wrong sizes): all three agree with a plain triple loop.
#[test]
fn matrix_products_with_and_without_blas() {
    let scratch = tmp("blas");
    let d = scratch.path();
    let (m, n, k) = (37usize, 29usize, 64usize);
    let val = |i: usize, s: f64| ((i as f64) * s).sin();
    let c: Vec<f64> = (0..m * n).map(|i| val(i, 0.37)).collect();
    let a: Vec<f64> = (0..m * k).map(|i| val(i, 0.11)).collect();
    let b: Vec<f64> = (0..k * n).map(|i| val(i, 0.23)).collect();
    let (alpha, beta) = (1.5, 0.5);
    let mut want = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let s: f64 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            want[i * n + j] = alpha * s + beta * c[i * n + j];
        }
    }
    let args = [
        format!("C={}", write(d, "c.npy", &HostArray::from_f64(DType::F64, vec![m, n], &c))),
        format!("A={}", write(d, "a.npy", &HostArray::from_f64(DType::F64, vec![m, k], &a))),
        format!("B={}", write(d, "b.npy", &HostArray::from_f64(DType::F64, vec![k, n], &b))),
    ];
    let debian = Path::new("/usr/lib/x86_64-linux-gnu/libopenblas64.so.0").exists();
    let lp64 = Path::new("/usr/lib/x86_64-linux-gnu/libopenblas.so.0");
    let mut libs: Vec<(Option<&str>, bool)> = vec![(None, debian), (Some(""), false)];
    if lp64.exists() {
        libs.push((lp64.to_str(), false));
    }
    for (lib, blas) in libs {
        let out = d.join(format!("out{}", lib.map(str::len).unwrap_or(0)));
        let mut cmd = appy();
        cmd.args([
            "run",
            examples().join("tensor_matmul.py").to_str().unwrap(),
            "--func",
            "gemm",
            "--device",
            "cpu",
        ])
        .args(["--arg", &format!("alpha={alpha}"), "--arg", &format!("beta={beta}")])
        .args(args.iter().flat_map(|a| ["--arg", a.as_str()]))
        .args(["--arg", &format!("M={m}"), "--arg", &format!("N={n}"), "--arg", &format!("K={k}")])
        .args(["--out", out.to_str().unwrap()])
        .env("APPY_CACHE_DIR", "")
        .env("APPY_LOG", "debug");
        match lib {
            Some(l) => cmd.env("APPY_LIBBLAS", l),
            None => cmd.env_remove("APPY_LIBBLAS"),
        };
        let st = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&st.stderr);
        assert!(st.status.success(), "{lib:?}: {err}");
        assert_eq!(err.contains("appy-cpu-blas"), blas, "{lib:?}: BLAS used = {blas} expected:\n{err}");
        let got = HostArray::read_npy(&out.join("C.npy")).unwrap();
        for (i, w) in want.iter().enumerate() {
            assert!(
                (got.get_f64(i) - w).abs() < 1e-12 * 64.0,
                "{lib:?}: C[{i}] = {} vs {w}",
                got.get_f64(i)
            );
        }
    }
}

/// `appy run` binds parameters' default values, as Python does: only a parameter with
/// no default and no `--arg` is an error, and a default the command line cannot pass
/// (not a number) asks for `--arg`.
#[test]
fn run_binds_default_parameter_values() {
    let scratch = tmp("defaults");
    let d = scratch.path();
    let src = d.join("k.py");
    std::fs::write(
        &src,
        "import numpy as np\nimport appy\n\n@appy.jit\ndef scale(a, n, alpha=2.5, shift=-1, flag=True, name=None):\n    #pragma parallel for\n    for i in range(n):\n        if flag:\n            a[i] = alpha * a[i] + shift\n",
    )
    .unwrap();
    let arr = HostArray::from_f64(DType::F64, vec![3], &[1.0, 2.0, 3.0]);
    let run = |extra: &[&str]| {
        let out = d.join("out");
        let _ = std::fs::remove_dir_all(&out);
        let mut c = appy();
        c.args(["run", src.to_str().unwrap(), "--func", "scale", "--device", "cpu"])
            .args(["--arg", &format!("a={}", write(d, "a.npy", &arr)), "--arg", "name=0"])
            .args(extra)
            .args(["--out", out.to_str().unwrap()]);
        let o = c.output().unwrap();
        (o, out)
    };
    let (o, out) = run(&["--arg", "n=3"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = HostArray::read_npy(&out.join("a.npy")).unwrap();
    assert_eq!((0..3).map(|i| got.get_f64(i)).collect::<Vec<_>>(), [1.5, 4.0, 6.5]);
    // An explicit --arg wins over the default.
    let (o, out) = run(&["--arg", "n=3", "--arg", "alpha=1.0", "--arg", "shift=0"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = HostArray::read_npy(&out.join("a.npy")).unwrap();
    assert_eq!((0..3).map(|i| got.get_f64(i)).collect::<Vec<_>>(), [1.0, 2.0, 3.0]);
    // No default, no --arg: named.
    let (o, _) = run(&[]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("missing --arg for parameter(s): n"), "{e}");
    // A default the command line cannot pass.
    let mut c = appy();
    c.args(["run", src.to_str().unwrap(), "--func", "scale", "--device", "cpu"]).args([
        "--arg",
        &format!("a={}", write(d, "a.npy", &arr)),
        "--arg",
        "n=3",
    ]);
    let o = c.output().unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("parameter `name` has the default value `None`") && e.contains("--arg name="),
        "{e}"
    );
}

/// `appy-opt -o /dev/null` and `-o -` (standard output) work: devices and pipes are
/// written directly, regular files atomically.
#[test]
fn opt_writes_to_devices_and_stdout() {
    let src = examples().join("vector_add.py");
    let o = appy_opt()
        .args([src.to_str().unwrap(), "--func", "vector_add", "--emit=appy", "-o", "/dev/null"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty());
    let o = appy_opt()
        .args([src.to_str().unwrap(), "--func", "vector_add", "--emit=appy", "-o", "-"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("func.func @vector_add"));
}

/// A GPU math function without libdevice (`APPY_LIBDEVICE=none`, what a machine without
/// NVIDIA's pip package or a toolkit gets) is the program's located error that says
/// what to install, not an internal compiler error; with libdevice it compiles.
#[test]
fn gpu_math_without_libdevice_says_what_to_install() {
    let scratch = tmp("libdevice");
    let d = scratch.path();
    let src = d.join("k.py");
    std::fs::write(
        &src,
        "import numpy as np\nimport appy\n\n\n@appy.jit\ndef f(a, b, n):\n    #pragma parallel for\n    for i in range(n):\n        b[i] = np.exp(a[i])\n",
    )
    .unwrap();
    let out = appy()
        .env("APPY_LIBDEVICE", "none")
        .env("APPY_CACHE_DIR", "")
        .args(["compile", src.to_str().unwrap(), "--func", "f", "--signature", "f64[:],f64[:],int"])
        .args(["-o", d.join("k.json").to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "compiled without libdevice:\n{err}");
    assert!(
        err.contains("k.py:9:16: error: the GPU math function `exp` needs NVIDIA's libdevice"),
        "{err}"
    );
    assert!(
        err.contains("pip install nvidia-cuda-nvcc-cu12") && !err.contains("internal compiler error"),
        "{err}"
    );
    // A name that is not a file is reported as such.
    let out = appy()
        .env("APPY_LIBDEVICE", d.join("nope.bc"))
        .env("APPY_CACHE_DIR", "")
        .args(["compile", src.to_str().unwrap(), "--func", "f", "--signature", "f64[:],f64[:],int"])
        .args(["-o", d.join("k.json").to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("nope.bc`, which is not a file"), "{err}");
}
