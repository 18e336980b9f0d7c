//! Differential testing: proptest generates small APPy programs (element-wise loops,
//! reductions, stencils, row-wise vector loops, negative steps) and random shapes and
//! values; appy's CPU back end must agree with CPython + NumPy running the same source.
//! Two more families: flat left-associative chains of up to 2,000 terms (compiled on
//! the test thread's own stack), and integer `//` and `%` whose divisor can be zero.
//! `PROPTEST_CASES` sets the number of programs (24 by default, to keep CI short).

use appy_ir::diag::SourceFile;
use appy_ir::types::DType;
use appy_runtime::HostValue;
use appy_tests::{Rng, compare, oracle};
use proptest::prelude::*;

/// An expression over the loop's element `x` (a float) and `i`, as Python source.
fn expr(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        Just("a[i]".to_string()),
        Just("b[i]".to_string()),
        Just("c".to_string()),
        Just("float(i % 7)".to_string()),
        (-30i32..30).prop_map(|v| format!("{:.2}", v as f64 / 10.0)),
        (1i32..5).prop_map(|v| format!("{v}")),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    let sub = expr(depth - 1);
    prop_oneof![
        2 => leaf,
        1 => (sub.clone(), sub.clone(), prop_oneof![Just("+"), Just("-"), Just("*")]).prop_map(|(l, r, o)| format!("({l} {o} {r})")),
        1 => (sub.clone(), sub.clone()).prop_map(|(l, r)| format!("({l} / (1.5 + abs({r})))")),
        1 => (sub.clone(), sub.clone(), prop_oneof![Just("max"), Just("min")]).prop_map(|(l, r, f)| format!("{f}({l}, {r})")),
        1 => sub.clone().prop_map(|e| format!("np.exp(min({e}, 3.0))")),
        1 => sub.clone().prop_map(|e| format!("np.sqrt(abs({e}))")),
        1 => sub.clone().prop_map(|e| format!("np.tanh({e})")),
        1 => (sub.clone(), sub.clone(), sub.clone()).prop_map(|(c, t, e)| format!("({t} if {c} > 0.0 else {e})")),
        1 => (sub.clone(), sub).prop_map(|(l, r)| format!("(({l}) // (2.0 + abs({r})))")),
    ]
    .boxed()
}

#[derive(Debug, Clone)]
enum Shape {
    Elementwise {
        simd: bool,
        body: String,
    },
    Reduction {
        op: &'static str,
        body: String,
    },
    Stencil {
        w: [i32; 3],
    },
    RowWise {
        op: &'static str,
        body: String,
    },
    Reverse {
        body: String,
    },
    /// `out[i] = t0 ± t1 ± ...`, each term `c * a[(i + k) % N]` or `b[i]`.
    LongChain {
        terms: Vec<(bool, i32, usize)>,
    },
    /// Integer `//` and `%` (int64 arrays, divisors that can be zero).
    IntDivMod {
        body: String,
    },
}

/// An integer expression over `a[i]` and `b[i]` whose divisors all involve `b[i]`
/// (values in -4..5, so zero divisors are common). A divisor is never a literal
/// alone: CPython raises ZeroDivisionError for `5 // 0`, where NumPy's int64 gives 0.
fn int_expr(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        Just("a[i]".to_string()),
        Just("b[i]".to_string()),
        (-3i32..4).prop_map(|v| v.to_string())
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    let sub = int_expr(depth - 1);
    prop_oneof![
        1 => leaf,
        1 => (sub.clone(), sub.clone(), prop_oneof![Just("+"), Just("-"), Just("*")]).prop_map(|(l, r, o)| format!("({l} {o} {r})")),
        2 => (sub.clone(), -2i32..3, prop_oneof![Just("//"), Just("%")]).prop_map(|(l, k, o)| format!("({l} {o} (b[i] + {k}))")),
        1 => (sub, prop_oneof![Just("//"), Just("%")]).prop_map(|(l, o)| format!("({l} {o} (b[i] - a[i] % 3))")),
    ]
    .boxed()
}

fn program() -> impl Strategy<Value = Shape> {
    prop_oneof![
        (any::<bool>(), expr(3)).prop_map(|(simd, body)| Shape::Elementwise { simd, body }),
        (prop_oneof![Just("+"), Just("max"), Just("min")], expr(2)).prop_map(|(op, body)| Shape::Reduction { op, body }),
        prop::array::uniform3(-5i32..5).prop_map(|w| Shape::Stencil { w }),
        (prop_oneof![Just("+"), Just("max")], expr(2)).prop_map(|(op, body)| Shape::RowWise { op, body }),
        expr(2).prop_map(|body| Shape::Reverse { body }),
        prop::collection::vec((any::<bool>(), -9i32..10, 0usize..8), 1..2000).prop_map(|terms| Shape::LongChain { terms }),
        int_expr(3).prop_map(|body| Shape::IntDivMod { body }),
    ]
}

fn source(shape: &Shape) -> (String, bool) {
    let head = "import numpy as np\nimport appy\n\n\n@appy.jit\n";
    match shape {
        Shape::Elementwise { simd, body } => (
            format!(
                "{head}def k(a, b, out, c, N):\n    #pragma parallel for{}\n    for i in range(N):\n        out[i] = {body}\n",
                if *simd { " simd" } else { "" }
            ),
            false,
        ),
        Shape::Reduction { op, body } => {
            let (init, upd) = match *op {
                "+" => ("0.0", format!("s += {body}")),
                "max" => ("float('-inf')", format!("s = max(s, {body})")),
                _ => ("float('inf')", format!("s = min(s, {body})")),
            };
            (
                format!(
                    "{head}def k(a, b, out, c, N):\n    s = {init}\n    #pragma parallel for shared(s)\n    for i in range(N):\n        {upd}\n    return s\n"
                ),
                true,
            )
        }
        Shape::Stencil { w } => (
            format!(
                "{head}def k(a, b, out, c, N):\n    #pragma parallel for simd\n    for i in range(1, N - 1):\n        out[i] = {} * a[i - 1] + {} * a[i] + {} * a[i + 1] + c\n",
                w[0], w[1], w[2]
            ),
            false,
        ),
        Shape::RowWise { op, body } => {
            let body = body.replace("a[i]", "m[r, i]").replace("b[i]", "m[r, (i + 1) % N]");
            let (init, upd) = if *op == "+" {
                ("0.0", format!("t += {body}"))
            } else {
                ("float('-inf')", format!("t = max(t, {body})"))
            };
            (
                format!(
                    "{head}def k(m, out, c, R, N):\n    #pragma parallel for\n    for r in range(R):\n        t = {init}\n        #pragma simd\n        for i in range(N):\n            {upd}\n        out[r] = t\n"
                ),
                false,
            )
        }
        Shape::LongChain { terms } => {
            let mut body = String::from("b[i]");
            for (k, (plus, c, off)) in terms.iter().enumerate() {
                let op = if *plus { "+" } else { "-" };
                if k % 5 == 4 {
                    body.push_str(&format!(" {op} b[i]"));
                } else {
                    body.push_str(&format!(" {op} {c}.5 * a[(i + {off}) % N]"));
                }
            }
            (
                format!("{head}def k(a, b, out, c, N):\n    #pragma parallel for\n    for i in range(N):\n        out[i] = {body}\n"),
                false,
            )
        }
        Shape::IntDivMod { body } => (
            format!("{head}def k(a, b, out, N):\n    #pragma parallel for\n    for i in range(N):\n        out[i] = {body}\n"),
            false,
        ),
        Shape::Reverse { body } => (
            format!(
                "{head}def k(a, b, out, c, N):\n    #pragma parallel for\n    for i in range(N - 1, -1, -2):\n        out[i] = {body}\n"
            ),
            false,
        ),
    }
}

fn run_case(shape: &Shape, n: usize, f32: bool, seed: u64) -> Result<(), String> {
    if matches!(shape, Shape::IntDivMod { .. }) {
        return run_int_case(shape, n, seed);
    }
    let (src, _) = source(shape);
    let dir = std::env::temp_dir().join(format!("appy-diff-{}-{seed}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join("k.py");
    std::fs::write(&path, &src).map_err(|e| e.to_string())?;
    let dt = if f32 { DType::F32 } else { DType::F64 };
    let mut r = Rng::new(seed);
    let c = HostValue::Float(r.uniform(-1.0, 1.0), DType::F64, true);
    let (params, args): (Vec<&str>, Vec<HostValue>) = match shape {
        Shape::RowWise { .. } => {
            let rows = n % 13 + 1;
            (
                vec!["m", "out", "c", "R", "N"],
                vec![
                    r.array(dt, &[rows, n], -2.0, 2.0),
                    r.array(dt, &[rows], -1.0, 1.0),
                    c,
                    HostValue::Int(rows as i64, DType::I64, true),
                    HostValue::Int(n as i64, DType::I64, true),
                ],
            )
        }
        _ => (
            vec!["a", "b", "out", "c", "N"],
            vec![
                r.array(dt, &[n], -2.0, 2.0),
                r.array(dt, &[n], -2.0, 2.0),
                r.array(dt, &[n], -1.0, 1.0),
                c,
                HostValue::Int(n as i64, DType::I64, true),
            ],
        ),
    };
    let params: Vec<String> = params.into_iter().map(String::from).collect();
    let (want, want_ret) = oracle(&path, "k", &params, &args)?;
    let file = SourceFile::new(path.display().to_string(), src.clone());
    let compiler = appy_compiler::Compiler::new();
    let mut got = args.clone();
    let got_ret = appy_tests::run_cpu(&compiler, &file, "k", &mut got, &appy_compiler::Options::default())
        .map_err(|d| format!("{}\n{src}", d.render()))?;
    for ((p, g), w) in params.iter().zip(&got).zip(&want) {
        compare(p, g, w).map_err(|e| format!("{e}\n{src}"))?;
    }
    if got_ret.len() != want_ret.len() {
        return Err(format!("{} return values, expected {}\n{src}", got_ret.len(), want_ret.len()));
    }
    for (g, w) in got_ret.iter().zip(&want_ret) {
        compare("return", g, w).map_err(|e| format!("{e}\n{src}"))?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Runs an integer `//`/`%` program through the `appy` command (in its own process,
/// so that a trap could not take the test process down) and checks that the result
/// equals NumPy's: int64 `//` and `%` by zero give 0 (NumPy warns; the oracle silences
/// it), and the minimum integer `// -1` wraps.
fn run_int_case(shape: &Shape, n: usize, seed: u64) -> Result<(), String> {
    let (src, _) = source(shape);
    let dir = std::env::temp_dir().join(format!("appy-diff-int-{}-{seed}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join("k.py");
    std::fs::write(&path, &src).map_err(|e| e.to_string())?;
    let mut r = Rng::new(seed);
    let args = vec![
        r.array(DType::I64, &[n], -20.0, 20.0),
        r.array(DType::I64, &[n], -4.0, 5.0),
        r.array(DType::I64, &[n], -9.0, 9.0),
        HostValue::Int(n as i64, DType::I64, true),
    ];
    let params: Vec<String> = ["a", "b", "out", "N"].into_iter().map(String::from).collect();
    // Where CPython itself fails (a literal divisor folded to zero), there is no oracle.
    let Ok((want, _)) = oracle(&path, "k", &params, &args) else {
        return Ok(());
    };
    let mut cmd = std::process::Command::new(
        appy_ir::config::test_var("APPY_BIN").unwrap_or_else(|| appy_tests::root().join("target/debug/appy").display().to_string()),
    );
    cmd.arg("run")
        .arg(&path)
        .args(["--func", "k", "--device", "cpu", "--out"])
        .arg(dir.join("out"));
    for (p, a) in params.iter().zip(&args) {
        match a {
            HostValue::Array(x) => {
                let f = dir.join(format!("{p}.npy"));
                x.write_npy(&f)?;
                cmd.arg("--arg").arg(format!("{p}=@{}", f.display()));
            }
            _ => {
                cmd.arg("--arg").arg(format!("{p}={n}"));
            }
        }
    }
    cmd.env("APPY_CACHE_DIR", "");
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run appy (build it: cargo build -p appy-tools): {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("panicked") || stderr.contains("internal compiler error") {
        return Err(format!("appy failed badly:\n{stderr}\n{src}"));
    }
    // NumPy's meaning of a zero divisor is 0 (with a warning): appy must give it.
    if !out.status.success() {
        return Err(format!("appy exited with {}:\n{stderr}\n{src}", out.status));
    }
    let got = HostValue::Array(appy_runtime::HostArray::read_npy(&dir.join("out/out.npy"))?);
    compare("out", &got, &want[2]).map_err(|e| format!("{e}\n{src}"))?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(24),
        max_shrink_iters: 50,
        ..ProptestConfig::default()
    })]

    #[test]
    fn programs_agree_with_numpy(shape in program(), n in prop_oneof![Just(0usize), Just(1), Just(2), Just(5), Just(255), Just(257), Just(1000)], f32 in any::<bool>(), seed in 0u64..1000) {
        // float32 reductions are summed in another order than NumPy's sequential loop;
        // compare those in float64 only.
        let f32 = f32 && matches!(shape, Shape::Elementwise { .. } | Shape::Stencil { .. } | Shape::Reverse { .. });
        run_case(&shape, n, f32, seed).map_err(TestCaseError::fail)?;
    }
}
