//! Checked mode (`--bounds-check`, `APPY_BOUNDS_CHECK=1`) on the CPU back end: an
//! index out of bounds is an error located at its subscript and nothing is written;
//! negative indices count from the end as in Python. Integer `//` and `%` by zero give
//! 0 with one warning, as in NumPy, in every mode. Unchecked code carries no checks.

use appy_ir::types::DType;
use appy_runtime::HostArray;
use std::path::Path;
use std::process::{Command, Output};

const SRC: &str = r#"import numpy as np
import appy


@appy.jit
def shift(a, b, n):
    #pragma parallel for simd
    for i in range(n):
        b[i] = a[i + 1]


@appy.jit
def prev(a, b, n):
    for i in range(n):
        b[i] = a[i - 1]


@appy.jit
def write_past(a, b, n):
    #pragma parallel for
    for i in range(n):
        b[i + 3] = a[i]


@appy.jit
def column(A, b, j):
    #pragma parallel for
    for i in range(A.shape[0]):
        b[i] = A[i, j]


@appy.jit
def row_view(A, b, k):
    r = A[1]
    #pragma parallel for
    for i in range(b.shape[0]):
        b[i] = r[i + k]


@appy.jit
def hist(idx, h):
    #pragma parallel for
    for i in range(idx.shape[0]):
        #pragma atomic
        h[idx[i]] += 1.0


@appy.jit
def divs(a, b, q, r):
    #pragma parallel for
    for i in range(a.shape[0]):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
"#;

/// A scratch directory of one test, removed when the test ends, pass or fail.
fn tmp(name: &str) -> tempfile::TempDir {
    let d = tempfile::Builder::new().prefix(&format!("appy-checked-{name}-")).tempdir().unwrap();
    std::fs::write(d.path().join("k.py"), SRC).unwrap();
    d
}

fn npy(dir: &Path, name: &str, a: &HostArray) -> String {
    let p = dir.join(name);
    a.write_npy(&p).unwrap();
    format!("{}=@{}", name.trim_end_matches(".npy"), p.display())
}

fn f64s(n: usize) -> HostArray {
    let v: Vec<f64> = (0..n).map(|i| 1.5 + i as f64).collect();
    HostArray::from_f64(DType::F64, vec![n], &v)
}

fn run(dir: &Path, func: &str, args: &[String], checked: bool) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_appy"));
    c.current_dir(dir)
        .args(["run", "k.py", "--func", func, "--device", "cpu", "--out", "out"]);
    for a in args {
        c.args(["--arg", a]);
    }
    if checked {
        c.arg("--bounds-check");
    }
    c.env_remove("APPY_BOUNDS_CHECK").env("APPY_CACHE_DIR", "").output().unwrap()
}

fn i64s(a: &HostArray, i: usize) -> i64 {
    i64::from_le_bytes(a.data[i * 8..i * 8 + 8].try_into().unwrap())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn read(dir: &Path, name: &str) -> HostArray {
    HostArray::read_npy(&dir.join("out").join(name)).unwrap()
}

#[test]
fn out_of_bounds_reads_and_writes_are_located_errors() {
    let scratch = tmp("oob");
    let d = scratch.path();
    let n = 1001;
    let args = [npy(d, "a.npy", &f64s(n)), npy(d, "b.npy", &f64s(n)), format!("n={n}")];
    for (func, line, col) in [("shift", 9, 16), ("write_past", 22, 9)] {
        let o = run(d, func, &args, true);
        assert!(!o.status.success(), "{func}: {}", stderr(&o));
        let e = stderr(&o);
        let want = format!(
            "k.py:{line}:{col}: error: index {} is out of bounds for axis 0 with size {n}",
            if func == "shift" { n } else { n + 2 }
        );
        // The first faulting index of a parallel loop depends on scheduling; the
        // location and the size do not.
        assert!(e.contains(&format!("k.py:{line}:{col}: error: index ")), "{func}: {e}");
        assert!(
            e.contains(&format!("out of bounds for axis 0 with size {n}")),
            "{func}: {e} (want like {want})"
        );
        assert!(!d.join("out").exists(), "{func}: outputs were written");
    }
    // The same through the environment variable.
    let o = Command::new(env!("CARGO_BIN_EXE_appy"))
        .current_dir(d)
        .args(["run", "k.py", "--func", "shift", "--device", "cpu"])
        .args(args.iter().flat_map(|a| ["--arg".to_string(), a.clone()]))
        .env("APPY_BOUNDS_CHECK", "1")
        .env("APPY_CACHE_DIR", "")
        .output()
        .unwrap();
    assert!(stderr(&o).contains("k.py:9:16: error: index"), "{}", stderr(&o));
    // In range, checked mode changes nothing.
    let ok = [npy(d, "a.npy", &f64s(n + 1)), npy(d, "b.npy", &f64s(n)), format!("n={n}")];
    let o = run(d, "shift", &ok, true);
    assert!(o.status.success(), "{}", stderr(&o));
    let b = read(d, "b.npy");
    assert!((0..n).all(|i| b.get_f64(i) == 2.5 + i as f64));
}

#[test]
fn negative_indices_count_from_the_end_in_checked_mode() {
    let scratch = tmp("neg");
    let d = scratch.path();
    let n = 7;
    let args = [npy(d, "a.npy", &f64s(n)), npy(d, "b.npy", &f64s(n)), format!("n={n}")];
    let o = run(d, "prev", &args, true);
    assert!(o.status.success(), "{}", stderr(&o));
    let b = read(d, "b.npy");
    // Python: b[0] = a[-1].
    assert_eq!(b.get_f64(0), 1.5 + (n - 1) as f64);
    assert!((1..n).all(|i| b.get_f64(i) == 0.5 + i as f64));
}

#[test]
fn axes_views_and_atomics_are_checked() {
    let scratch = tmp("axes");
    let d = scratch.path();
    let (r, c) = (5, 3);
    let v: Vec<f64> = (0..r * c).map(|i| i as f64).collect();
    let a = HostArray::from_f64(DType::F64, vec![r, c], &v);
    let o = run(d, "column", &[npy(d, "A.npy", &a), npy(d, "b.npy", &f64s(r)), "j=3".into()], true);
    assert!(
        stderr(&o).contains("k.py:29:16: error: index 3 is out of bounds for axis 1 with size 3"),
        "{}",
        stderr(&o)
    );
    let o = run(d, "column", &[npy(d, "A.npy", &a), npy(d, "b.npy", &f64s(r)), "j=-1".into()], true);
    assert!(o.status.success(), "{}", stderr(&o));
    let b = read(d, "b.npy");
    assert!((0..r).all(|i| b.get_f64(i) == (i * c + 2) as f64));
    // A row view: its own length is the bound, not the base array's.
    let o = run(d, "row_view", &[npy(d, "A.npy", &a), npy(d, "b.npy", &f64s(2)), "k=2".into()], true);
    assert!(stderr(&o).contains("out of bounds for axis 0 with size 3"), "{}", stderr(&o));
    // An atomic update.
    let idx = HostArray::from_f64(DType::I64, vec![4], &[0.0, 1.0, 9.0, 1.0]);
    let o = run(d, "hist", &[npy(d, "idx.npy", &idx), npy(d, "h.npy", &f64s(3))], true);
    assert!(
        stderr(&o).contains("k.py:45:9: error: index 9 is out of bounds for axis 0 with size 3"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn integer_division_by_zero_is_zero_with_one_warning() {
    let scratch = tmp("div");
    let d = scratch.path();
    // -2^63 is exact in f64.
    let a = HostArray::from_f64(DType::I64, vec![5], &[7.0, -7.0, 5.0, i64::MIN as f64, 9.0]);
    let b = HostArray::from_f64(DType::I64, vec![5], &[2.0, 2.0, 0.0, -1.0, 0.0]);
    let z = HostArray::from_f64(DType::I64, vec![5], &[3.0; 5]);
    let args = [npy(d, "a.npy", &a), npy(d, "b.npy", &b), npy(d, "q.npy", &z), npy(d, "r.npy", &z)];
    for checked in [false, true] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_appy"));
        c.current_dir(d)
            .args(["run", "k.py", "--func", "divs", "--device", "cpu", "--out", "out", "--repeat", "3"]);
        for x in &args {
            c.args(["--arg", x]);
        }
        if checked {
            c.arg("--bounds-check");
        }
        let o = c.env("APPY_CACHE_DIR", "").output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let e = stderr(&o);
        assert_eq!(e.matches("warning: divide by zero encountered").count(), 1, "{e}");
        assert_eq!(e.matches("warning: overflow encountered in floor_divide").count(), 1, "{e}");
        let q = read(d, "q.npy");
        let r = read(d, "r.npy");
        // NumPy: [3, -4, 0, INT64_MIN, 0] and [1, 1, 0, 0, 0].
        assert_eq!((0..5).map(|i| i64s(&q, i)).collect::<Vec<_>>(), [3, -4, 0, i64::MIN, 0]);
        assert_eq!((0..5).map(|i| i64s(&r, i)).collect::<Vec<_>>(), [1, 1, 0, 0, 0]);
    }
}

#[test]
fn unchecked_code_has_no_checks() {
    let scratch = tmp("ir");
    let d = scratch.path();
    let emit = |checked: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_appy-opt"));
        c.current_dir(d)
            .args(["k.py", "--func", "shift", "--signature", "f64[:],f64[:],int", "--emit=appy"]);
        if checked {
            c.arg("--bounds-check");
        }
        String::from_utf8_lossy(&c.output().unwrap().stdout).to_string()
    };
    let plain = emit(false);
    let checked = emit(true);
    assert!(plain.contains("func.func @shift"), "{plain}");
    assert!(!plain.contains("memref<?xi64>") && !plain.contains("atomic_rmw"), "{plain}");
    assert!(checked.contains("memref<?xi64>") && checked.contains("atomic_rmw"), "{checked}");
}

#[test]
fn negative_dimensions_are_errors() {
    let scratch = tmp("negdim");
    let d = scratch.path();
    std::fs::write(
        d.join("n.py"),
        "import numpy as np\nimport appy\n\n\n@appy.jit\ndef mk(n, m):\n    a = np.empty((n, m))\n    a[:, :] = 1.0\n    return a\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_appy"))
        .current_dir(d)
        .args(["run", "n.py", "--func", "mk", "--device", "cpu", "--arg", "n=3", "--arg", "m=-2"])
        .env("APPY_CACHE_DIR", "")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("n.py:7:18: error: negative dimensions are not allowed (size -2 for axis 1)"),
        "{}",
        stderr(&o)
    );
    let o = Command::new(env!("CARGO_BIN_EXE_appy"))
        .current_dir(d)
        .args([
            "run", "n.py", "--func", "mk", "--device", "cpu", "--arg", "n=3", "--arg", "m=0", "--out", "o",
        ])
        .env("APPY_CACHE_DIR", "")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn negative_exponents_of_numpy_integer_powers_are_errors() {
    // NumPy raises `ValueError: Integers to negative integer powers are not allowed.`;
    // the check is always on (an exponent of unknown sign only).
    let scratch = tmp("negpow");
    let d = scratch.path();
    std::fs::write(
        d.join("p.py"),
        "import appy\n\n\n@appy.jit\ndef p(c, k):\n    for i in range(c.shape[0]):\n        c[i] = c[i] ** k\n",
    )
    .unwrap();
    let c = npy(d, "c.npy", &HostArray::from_f64(DType::I64, vec![4], &[1.0, 2.0, 3.0, 4.0]));
    let go = |k: i64| {
        Command::new(env!("CARGO_BIN_EXE_appy"))
            .current_dir(d)
            .args(["run", "p.py", "--func", "p", "--device", "cpu", "--arg", &c])
            .args(["--arg", &format!("k={k}"), "--out", "out"])
            .env("APPY_CACHE_DIR", "")
            .output()
            .unwrap()
    };
    let o = go(-2);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("p.py:7:16: error: Integers to negative integer powers are not allowed (exponent -2)"),
        "{}",
        stderr(&o)
    );
    let o = go(3);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = read(d, "c.npy");
    assert_eq!((0..4).map(|i| i64s(&r, i)).collect::<Vec<_>>(), vec![1, 8, 27, 64]);
}
