//! Test support: random inputs, the CPython + NumPy oracle, comparisons, and a small
//! FileCheck for the lit-style IR tests.
#![warn(missing_docs)]
// `Diagnostic`, the error of everything that can reject a user's program, is large;
// boxing it would complicate every caller for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod cases;
pub mod filecheck;
pub mod progen;

use appy_ir::types::DType;
use appy_runtime::{HostArray, HostValue};
use std::path::{Path, PathBuf};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A small deterministic PRNG (xorshift64*).
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545F4914F6CDD1D)
    }
    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    /// Uniform integer in `[lo, hi)`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % ((hi - lo).max(1) as u64)) as i64
    }
    /// A random array with values in `[lo, hi)`.
    pub fn array(&mut self, dtype: DType, shape: &[usize], lo: f64, hi: f64) -> HostValue {
        let n: usize = shape.iter().product();
        let vals: Vec<f64> = (0..n)
            .map(|_| {
                if dtype.is_float() {
                    self.uniform(lo, hi)
                } else {
                    self.int(lo as i64, hi as i64) as f64
                }
            })
            .collect();
        HostValue::Array(HostArray::from_f64(dtype, shape.to_vec(), &vals))
    }
}

/// The number of threads the CPU back end uses in the tests: `APPY_TEST_THREADS`, else
/// 2, so parallel regions really run concurrently and a data race shows even where a
/// single thread would hide it.
pub fn test_threads() -> usize {
    appy_ir::config::test_var("APPY_TEST_THREADS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
}

/// Compiles `func` for the CPU and runs it on `args` (arrays updated in place) with
/// [`test_threads`] threads; returns the return values.
pub fn run_cpu(
    compiler: &appy_compiler::Compiler,
    file: &appy_ir::diag::SourceFile,
    func: &str,
    args: &mut [HostValue],
    opts: &appy_compiler::Options,
) -> appy_ir::diag::DResult<Vec<HostValue>> {
    appy_runtime::cpu::set_num_threads(Some(test_threads()));
    appy_runtime::cpu::run(compiler, file, func, args, opts)
}

/// Runs `func` of `file` under CPython + NumPy with `args` (named `params`); returns the
/// final arguments and the return values.
pub fn oracle(file: &Path, func: &str, params: &[String], args: &[HostValue]) -> Result<(Vec<HostValue>, Vec<HostValue>), String> {
    oracle_with(file, func, params, args, false)
}

/// [`oracle`], computing float arrays in long double precision when `longdouble` (a
/// reference for the accuracy of math functions; results are rounded back to the
/// arrays' dtypes, float64 for return values).
pub fn oracle_with(
    file: &Path,
    func: &str,
    params: &[String],
    args: &[HostValue],
    longdouble: bool,
) -> Result<(Vec<HostValue>, Vec<HostValue>), String> {
    let scratch = tempfile::Builder::new()
        .prefix(&format!("appy-oracle-{func}-"))
        .tempdir()
        .map_err(|e| e.to_string())?;
    let dir = scratch.path();
    let ind = dir.join("in");
    let outd = dir.join("out");
    std::fs::create_dir_all(&ind).map_err(|e| e.to_string())?;
    let mut meta = vec![];
    for (p, a) in params.iter().zip(args) {
        let v = match a {
            HostValue::Array(arr) => {
                arr.write_npy(&ind.join(format!("{p}.npy")))?;
                serde_json::json!({"npy": format!("{p}.npy")})
            }
            HostValue::Int(i, _, true) => serde_json::json!({"int": i}),
            HostValue::Int(i, d, false) => serde_json::json!({"int": i, "dtype": d.numpy()}),
            HostValue::Float(f, _, _) => serde_json::json!({"float": f}),
            HostValue::Bool(b) => serde_json::json!({"int": *b as i64}),
            HostValue::Device { .. } => return Err("the oracle needs host arrays".into()),
        };
        meta.push(serde_json::json!([p, v]));
    }
    std::fs::write(ind.join("args.json"), serde_json::Value::Array(meta).to_string()).map_err(|e| e.to_string())?;
    let script = root().join("tests/oracle/oracle.py");
    let out = std::process::Command::new(appy_ir::config::test_var("APPY_PYTHON").unwrap_or_else(|| "python3".into()))
        .arg(&script)
        .arg(file)
        .arg(func)
        .arg(&ind)
        .arg(&outd)
        .args(longdouble.then_some("--longdouble"))
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if !out.status.success() {
        return Err(format!("oracle failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let mut finals = vec![];
    for (p, a) in params.iter().zip(args) {
        finals.push(match a {
            HostValue::Array(_) => HostValue::Array(HostArray::read_npy(&outd.join(format!("{p}.npy")))?),
            v => v.clone(),
        });
    }
    let mut rets = vec![];
    if outd.join("return.npy").exists() {
        rets.push(HostValue::Array(HostArray::read_npy(&outd.join("return.npy"))?));
    } else {
        let mut k = 0;
        while outd.join(format!("return_{k}.npy")).exists() {
            rets.push(HostValue::Array(HostArray::read_npy(&outd.join(format!("return_{k}.npy")))?));
            k += 1;
        }
    }
    Ok((finals, rets))
}

/// Compares two values elementwise with tolerances fit for the dtype; returns a
/// description of the first mismatch.
pub fn compare(what: &str, got: &HostValue, want: &HostValue) -> Result<(), String> {
    let single = |v: &HostValue| matches!(v.to_array().dtype, DType::F32 | DType::C64);
    let f32ish = single(got) || single(want);
    let (rtol, atol) = if f32ish { (2e-4, 2e-5) } else { (1e-9, 1e-11) };
    compare_tol(what, got, want, rtol, atol)
}

/// [`compare`] with given tolerances: `|got - want| <= atol + rtol * |want|`. The shapes
/// must agree too.
pub fn compare_tol(what: &str, got: &HostValue, want: &HostValue, rtol: f64, atol: f64) -> Result<(), String> {
    // Complex arrays are compared part by part.
    let parts = |v: &HostValue| {
        let mut v = v.clone();
        v.to_abi();
        v.to_array()
    };
    let g = parts(got);
    let w = parts(want);
    if g.len() != w.len() || (!g.shape.is_empty() && !w.shape.is_empty() && g.shape != w.shape) {
        return Err(format!("{what}: shape {:?}, expected {:?}", g.shape, w.shape));
    }
    let mut worst = 0.0f64;
    for i in 0..g.len() {
        let (a, b) = (g.get_f64(i), w.get_f64(i));
        if a.is_nan() && b.is_nan() || a == b {
            continue;
        }
        let err = (a - b).abs();
        if err.is_nan() || err > atol + rtol * b.abs() {
            return Err(format!("{what}[{i}] = {a}, expected {b} (|diff| = {err:e})"));
        }
        worst = worst.max(err);
    }
    Ok(())
}
