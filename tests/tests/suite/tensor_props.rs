//! Property tests of the tensor model (seed 001 §4): proptest generates tensor
//! statements in sliced index notation (element-wise, broadcast, reductions, stencils,
//! a statement that needs a temporary) with random pragmas, random shapes (1, primes,
//! sizes that are not multiples of the vector length) and random values; the CPU back
//! end must agree with CPython + NumPy running the same source. `PROPTEST_CASES` sets
//! the number of programs (24 by default).

use appy_ir::diag::SourceFile;
use appy_ir::types::DType;
use appy_runtime::HostValue;
use appy_tests::{Rng, compare, oracle};
use proptest::prelude::*;

/// An element-wise expression over the tensors `X` and `Y` (placeholders) and `c`.
fn expr(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        3 => Just("X".to_string()),
        2 => Just("Y".to_string()),
        1 => Just("c".to_string()),
        1 => (-30i32..30).prop_map(|v| format!("{:.2}", v as f64 / 10.0)),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    let sub = expr(depth - 1);
    prop_oneof![
        2 => leaf,
        2 => (sub.clone(), sub.clone(), prop_oneof![Just("+"), Just("-"), Just("*")]).prop_map(|(l, r, o)| format!("({l} {o} {r})")),
        1 => (sub.clone(), sub.clone()).prop_map(|(l, r)| format!("({l} / (1.5 + abs({r})))")),
        1 => (sub.clone(), sub.clone(), prop_oneof![Just("np.maximum"), Just("np.minimum")]).prop_map(|(l, r, f)| format!("{f}({l}, {r})")),
        1 => sub.clone().prop_map(|e| format!("np.exp(np.minimum({e}, 3.0))")),
        1 => sub.clone().prop_map(|e| format!("np.sqrt(abs({e}))")),
        1 => sub.clone().prop_map(|e| format!("np.tanh({e})")),
        1 => (sub.clone(), sub.clone(), sub).prop_map(|(c, t, e)| format!("np.where({c} > 0.0, {t}, {e})")),
    ]
    .boxed()
}

#[derive(Debug, Clone)]
enum Stmt {
    /// `C[:M, :N] = e(A, B)` with one of several pragmas.
    Elementwise { pragma: usize, body: String },
    /// `C[i, :N] = e(A[i], B[i])` inside a parallel loop.
    InLoop { body: String },
    /// `C[:M, :N] = e(a[:M, None], b[None, :N])`.
    Broadcast { body: String },
    /// `y[:M] = np.<op>(e, axis=1)`, `y[:N] = np.<op>(e, axis=0)` or a scalar total.
    Reduction { op: &'static str, axis: usize, body: String },
    /// A 5-point stencil, and a shift that needs a temporary.
    Stencil { w: [i32; 5], shift: bool },
    /// `y[:M] = mv(A, x) * c + y[:M]`, normalised rows `C = A / sum(A, axis=1)[:, None]`.
    Contraction { normalise: bool },
}

fn stmt() -> impl Strategy<Value = Stmt> {
    prop_oneof![
        (0usize..4, expr(3)).prop_map(|(pragma, body)| Stmt::Elementwise { pragma, body }),
        expr(2).prop_map(|body| Stmt::InLoop { body }),
        expr(2).prop_map(|body| Stmt::Broadcast { body }),
        (prop_oneof![Just("sum"), Just("max"), Just("min")], 0usize..3, expr(2)).prop_map(|(op, axis, body)| Stmt::Reduction {
            op,
            axis,
            body
        }),
        (prop::array::uniform5(-4i32..5), any::<bool>()).prop_map(|(w, shift)| Stmt::Stencil { w, shift }),
        any::<bool>().prop_map(|normalise| Stmt::Contraction { normalise }),
    ]
}

/// The source, and whether the function returns a value.
fn source(s: &Stmt) -> String {
    let head = "import numpy as np\nimport appy\nfrom appy import mv\n\n\n@appy.jit\ndef k(A, B, C, y, c, M, N):\n";
    let two = |e: &str| e.replace('X', "A[:M, :N]").replace('Y', "B[:M, :N]");
    // Every statement reads at least one tensor.
    let fix = |e: &String| {
        if e.contains('X') || e.contains('Y') {
            e.clone()
        } else {
            format!("(X + {e})")
        }
    };
    let s = &match s {
        Stmt::Elementwise { pragma, body } => Stmt::Elementwise {
            pragma: *pragma,
            body: fix(body),
        },
        Stmt::InLoop { body } => Stmt::InLoop { body: fix(body) },
        Stmt::Broadcast { body } => Stmt::Broadcast { body: fix(body) },
        Stmt::Reduction { op, axis, body } => Stmt::Reduction {
            op,
            axis: *axis,
            body: fix(body),
        },
        other => other.clone(),
    };
    let body = match s {
        Stmt::Elementwise { pragma, body } => {
            let p = [":M=>parallel :N=>simd", ":N=>parallel :M=>simd", "", ":M=>parallel :N=>parallel"][*pragma];
            let p = if p.is_empty() {
                String::new()
            } else {
                format!("    #pragma {p}\n")
            };
            format!("{p}    C[:M, :N] = {}\n", two(body))
        }
        Stmt::InLoop { body } => format!(
            "    #pragma parallel for\n    for i in range(M):\n        C[i, :N] = {}\n",
            body.replace('X', "A[i, :N]").replace('Y', "B[i, :N]")
        ),
        Stmt::Broadcast { body } => format!(
            "    #pragma :M=>parallel :N=>simd\n    C[:M, :N] = {}\n",
            body.replace('X', "A[:M, 0, None]").replace('Y', "B[0, None, :N]")
        ),
        Stmt::Reduction { op, axis, body } => match axis {
            0 => format!(
                "    #pragma :M=>parallel :N=>simd,reduce({op}:y)\n    y[:M] = np.{op}({}, axis=1)\n",
                two(body)
            ),
            1 => format!(
                "    #pragma :N=>parallel :M=>reduce({op}:y)\n    y[:N] = np.{op}({}, axis=0)\n",
                two(body)
            ),
            _ => format!("    s = np.{op}({})\n    return s\n", two(body)),
        },
        Stmt::Stencil { w, shift: false } => format!(
            "    #pragma 1:M-1=>parallel 1:N-1=>simd\n    C[1:M-1, 1:N-1] = {} * A[1:M-1, 1:N-1] + {} * A[:M-2, 1:N-1] + {} * A[2:M, 1:N-1] + {} * A[1:M-1, :N-2] + {} * A[1:M-1, 2:N] + c\n",
            w[0], w[1], w[2], w[3], w[4]
        ),
        Stmt::Stencil { w, shift: true } => format!(
            "    #pragma parallel for\n    for i in range(M):\n        A[i, 1:N] = {} * A[i, :N-1] + {} * A[i, 1:N] + B[i, :N-1]\n",
            w[0], w[1]
        ),
        Stmt::Contraction { normalise: false } => {
            "    #pragma :M=>parallel :N=>simd,reduce(sum:y)\n    y[:M] = mv(A[:M, :N], B[0, :N]) * c + y[:M]\n".into()
        }
        Stmt::Contraction { normalise: true } => {
            "    #pragma :M=>parallel :N=>simd\n    C[:M, :N] = A[:M, :N] / (1.0 + np.sum(abs(A[:M, :N]), axis=1)[:, None])\n".into()
        }
    };
    format!("{head}{body}")
}

fn run_case(s: &Stmt, m: usize, n: usize, f32: bool, seed: u64) -> Result<(), String> {
    let src = source(s);
    let dir = std::env::temp_dir().join(format!("appy-tprop-{}-{seed}-{m}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join("k.py");
    std::fs::write(&path, &src).map_err(|e| e.to_string())?;
    let dt = if f32 { DType::F32 } else { DType::F64 };
    let mut r = Rng::new(seed);
    let int = |v: usize| HostValue::Int(v as i64, DType::I64, true);
    let ylen = m.max(n);
    let args = vec![
        r.array(dt, &[m, n], -2.0, 2.0),
        r.array(dt, &[m, n], -2.0, 2.0),
        r.array(dt, &[m, n], -1.0, 1.0),
        r.array(dt, &[ylen], -1.0, 1.0),
        HostValue::Float(r.uniform(-1.0, 1.0), DType::F64, true),
        int(m),
        int(n),
    ];
    let params: Vec<String> = ["A", "B", "C", "y", "c", "M", "N"].into_iter().map(String::from).collect();
    let (want, want_ret) = oracle(&path, "k", &params, &args)?;
    let file = SourceFile::new(path.display().to_string(), src.clone());
    let compiler = appy_compiler::Compiler::new();
    let mut got = args.clone();
    let opts = appy_compiler::Options {
        mvl: 128,
        ..Default::default()
    };
    let got_ret = appy_tests::run_cpu(&compiler, &file, "k", &mut got, &opts).map_err(|d| format!("{}\n{src}", d.render()))?;
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

fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![Just(1usize), Just(2), Just(3), Just(7), Just(31), Just(127), Just(129), Just(257)]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(24),
        max_shrink_iters: 50,
        ..ProptestConfig::default()
    })]

    #[test]
    fn tensor_statements_agree_with_numpy(s in stmt(), m in dim(), n in dim(), f32 in any::<bool>(), seed in 0u64..1000) {
        // float32 reductions are summed in another order than NumPy's; compare those
        // in float64 only.
        let f32 = f32 && !matches!(s, Stmt::Reduction { op: "sum", .. } | Stmt::Contraction { .. });
        run_case(&s, m, n, f32, seed).map_err(TestCaseError::fail)?;
    }
}
