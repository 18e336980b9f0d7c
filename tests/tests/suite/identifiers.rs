//! Identifiers are NFKC-normalised as Python reads them (PEP 3131): `ｘ` (fullwidth) and
//! `x` are one variable, `ﬁ` is `fi`; diagnostics still point at the text as written.

use appy_ir::diag::SourceFile;
use appy_ir::types::{ArgType, DType};
use appy_runtime::HostValue;
use appy_tests::{Rng, compare, oracle};

const SRC: &str = "import numpy as np\nimport appy\n\n\n@appy.jit\ndef ｋ(ａ, out, N):\n    #pragma parallel for\n    for ｉ in range(N):\n        ｘ = a[i] * 2.0\n        ﬁ = x + 1.0\n        out[ｉ] = fi + np.ｓｑｒｔ(abs(ｘ))\n";

#[test]
fn nfkc_equivalent_names_are_one_variable() {
    let path = std::env::temp_dir().join(format!("appy-nfkc-{}.py", std::process::id()));
    std::fs::write(&path, SRC).unwrap();
    for n in [1usize, 13, 1000] {
        let mut r = Rng::new(n as u64);
        let args = vec![
            r.array(DType::F64, &[n], -1.0, 1.0),
            r.array(DType::F64, &[n], -1.0, 1.0),
            HostValue::Int(n as i64, DType::I64, true),
        ];
        let params = vec!["a".to_string(), "out".to_string(), "N".to_string()];
        // Python itself calls the function `k` (the name asked for is normalised too).
        let (want, _) = oracle(&path, "k", &params, &args).unwrap();
        let src = SourceFile::new(path.to_str().unwrap(), SRC);
        let compiler = appy_compiler::Compiler::new();
        let mut got = args.clone();
        appy_runtime::cpu::run(&compiler, &src, "k", &mut got, &Default::default()).unwrap_or_else(|d| panic!("{}", d.render()));
        compare("out", &got[1], &want[1]).unwrap();
        assert_ne!(got[1], args[1], "the kernel must write out");
    }
    let _ = std::fs::remove_file(&path);
}

#[test]
fn diagnostics_point_at_the_name_as_written() {
    // `ｙ` is `y`, which is never assigned: the error's column counts the fullwidth
    // characters as written (columns are characters), and the caret sits under them.
    let text = "import appy\n\n\n@appy.jit\ndef k(a, N):\n    for i in range(N):\n        a[i] = ｘ + ｙｙ\n";
    let src = SourceFile::new("u.py", text);
    let compiler = appy_compiler::Compiler::new();
    let sig = [ArgType::parse("f64[:]").unwrap(), ArgType::parse("int").unwrap()];
    let err = compiler
        .compile_cpu(&src, "k", &sig, &Default::default(), &[])
        .unwrap_err()
        .render();
    assert!(err.starts_with("u.py:7:16: error:"), "{err}");
    assert!(err.contains("`x`") || err.contains("`ｘ`"), "{err}");
    assert!(err.contains("a[i] = ｘ + ｙｙ"), "{err}");
}
