//! Long and deep expressions (issue: a 5,000-term `+` chain overflowed the stack).
//! Every test compiles on a thread with a 2 MiB stack, the size of a default Rust
//! thread: a walk of the expression tree that recursed on the caller's stack would
//! overflow it, and the test would die. Flat chains of 5,000 terms compile and agree
//! with CPython + NumPy; nesting past the documented limits is a located error.

use appy_ir::diag::SourceFile;
use appy_ir::stack::MAX_EXPR_DEPTH;
use appy_ir::types::{ArgType, DType};
use appy_runtime::HostValue;
use appy_tests::{Rng, compare, oracle};

const HEAD: &str = "import numpy as np\nimport appy\n\n\n@appy.jit\n";

/// Runs `f` on a thread with a 2 MiB stack.
fn on_small_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .expect("the compiler must not overflow a 2 MiB stack")
}

/// Compiles and runs `k(a, out, N)` of `text` on the CPU (on a small stack) and under
/// the oracle, with `N` elements; compares `out`.
fn run_and_compare(name: &str, text: String, n: usize) {
    let path = std::env::temp_dir().join(format!("appy-deep-{}-{name}.py", std::process::id()));
    std::fs::write(&path, &text).unwrap();
    let mut r = Rng::new(n as u64);
    let args = vec![
        r.array(DType::F64, &[n], -1.0, 1.0),
        r.array(DType::F64, &[n], -1.0, 1.0),
        HostValue::Int(n as i64, DType::I64, true),
    ];
    let params = vec!["a".to_string(), "out".to_string(), "N".to_string()];
    let (want, _) = oracle(&path, "k", &params, &args).unwrap();
    let src = SourceFile::new(path.to_str().unwrap(), &text);
    let got = on_small_stack(move || {
        let compiler = appy_compiler::Compiler::new();
        let mut got = args;
        appy_runtime::cpu::run(&compiler, &src, "k", &mut got, &Default::default()).unwrap_or_else(|d| panic!("{}", d.render()));
        got
    });
    compare(&format!("{name}: out"), &got[1], &want[1]).unwrap();
    let _ = std::fs::remove_file(&path);
}

/// The rendered error of compiling `body` (the function `k(a, out, N)`), on a small stack.
fn error_of(body: String) -> String {
    let text = format!("{HEAD}def k(a, out, N):\n{body}");
    on_small_stack(move || {
        let src = SourceFile::new("deep.py", &text);
        let compiler = appy_compiler::Compiler::new();
        let sig = [
            ArgType::parse("f64[:]").unwrap(),
            ArgType::parse("f64[:]").unwrap(),
            ArgType::parse("int").unwrap(),
        ];
        match compiler.compile_cpu(&src, "k", &sig, &Default::default(), &[]) {
            Ok(_) => String::new(),
            Err(d) => d.render(),
        }
    })
}

/// `+` and `-` terms `c * a[(i + k) % N]`, left to right.
fn terms(n: usize) -> String {
    let mut s = String::from("a[i]");
    for k in 1..n {
        let op = if k % 3 == 0 { "-" } else { "+" };
        s.push_str(&format!(" {op} {}.{} * a[(i + {}) % N]", k % 7, k % 10, k % 13));
    }
    s
}

#[test]
fn flat_sum_of_5000_terms_compiles_and_agrees() {
    let text = format!(
        "{HEAD}def k(a, out, N):\n    #pragma parallel for\n    for i in range(N):\n        out[i] = {}\n",
        terms(5000)
    );
    run_and_compare("sum", text, 37);
}

#[test]
fn flat_chains_of_5000_operators_of_every_kind_compile_and_agree() {
    // `and`, comparison and `*` chains, and a subscript index that is itself a long chain.
    let and_chain: Vec<String> = (0..5000).map(|k| format!("a[i] > -{}.5", 1 + k % 5)).collect();
    let cmp_chain: Vec<String> = (0..5000).map(|k| format!("{}", -(k as i64) - 10)).collect();
    let mul_chain = vec!["1.0001"; 5000].join(" * ");
    let idx_chain = vec!["1"; 5000].join(" + ");
    let text = format!(
        "{HEAD}def k(a, out, N):\n    for i in range(N):\n        if {} and 5.0 > {}:\n            out[i] = a[i] * {mul_chain} + a[({idx_chain} + i) % N]\n",
        and_chain.join(" and "),
        cmp_chain.join(" > ")
    );
    run_and_compare("chains", text, 11);
}

#[test]
fn chains_at_the_limit_compile_and_one_more_is_a_located_error() {
    // `a[i]` is 2 levels deep (the subscript over `a` and `i`): `n` terms are `n + 1`.
    let at = vec!["a[i]"; MAX_EXPR_DEPTH - 1].join(" + ");
    assert_eq!(error_of(format!("    for i in range(N):\n        out[i] = {at}\n")), "");
    let past = vec!["a[i]"; MAX_EXPR_DEPTH].join(" + ");
    let e = error_of(format!("    for i in range(N):\n        out[i] = {past}\n"));
    assert!(e.starts_with("deep.py:8:"), "{e}");
    assert!(e.contains("error: expression is too deep"), "{e}");
    assert!(e.contains("help: split it into several statements"), "{e}");
}

#[test]
fn pathological_nesting_is_a_located_error() {
    let n = 5000;
    let cases = [
        ("parentheses", format!("{}a[i]{}", "(".repeat(n), ")".repeat(n))),
        ("calls", format!("{}a[i]{}", "abs(".repeat(n), ")".repeat(n))),
        ("not", format!("{}a[i] > 0", "not ".repeat(n))),
        ("unary minus", format!("{}a[i]", "-".repeat(n))),
        ("power", vec!["a[i]"; n].join(" ** ")),
        ("subscripts", format!("a{}", "[i]".repeat(n))),
        ("calls of calls", format!("abs{}", "(a[i])".repeat(n))),
        ("attributes", format!("a{}", ".T".repeat(n))),
        ("conditional", format!("{}0.0", "a[i] if a[i] > 0 else ".repeat(n))),
    ];
    for (what, e) in cases {
        let err = error_of(format!("    for i in range(N):\n        out[i] = {e}\n"));
        assert!(err.starts_with("deep.py:8:"), "{what}: {err}");
        assert!(err.contains(": error: "), "{what}: {err}");
    }
}
