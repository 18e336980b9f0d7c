//! Differential testing: proptest generates small APPy programs (element-wise loops,
//! reductions, stencils, row-wise vector loops, negative steps) and random shapes and
//! values; appy's CPU back end must agree with CPython + NumPy running the same source.
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
    Elementwise { simd: bool, body: String },
    Reduction { op: &'static str, body: String },
    Stencil { w: [i32; 3] },
    RowWise { op: &'static str, body: String },
    Reverse { body: String },
}

fn program() -> impl Strategy<Value = Shape> {
    prop_oneof![
        (any::<bool>(), expr(3)).prop_map(|(simd, body)| Shape::Elementwise { simd, body }),
        (prop_oneof![Just("+"), Just("max"), Just("min")], expr(2)).prop_map(|(op, body)| Shape::Reduction { op, body }),
        prop::array::uniform3(-5i32..5).prop_map(|w| Shape::Stencil { w }),
        (prop_oneof![Just("+"), Just("max")], expr(2)).prop_map(|(op, body)| Shape::RowWise { op, body }),
        expr(2).prop_map(|body| Shape::Reverse { body }),
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
        Shape::Reverse { body } => (
            format!(
                "{head}def k(a, b, out, c, N):\n    #pragma parallel for\n    for i in range(N - 1, -1, -2):\n        out[i] = {body}\n"
            ),
            false,
        ),
    }
}

fn run_case(shape: &Shape, n: usize, f32: bool, seed: u64) -> Result<(), String> {
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
