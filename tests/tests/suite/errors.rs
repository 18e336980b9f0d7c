//! Rejected programs: each file in `tests/errors/` states the first line of the
//! expected diagnostic in a `# ERROR: ` comment (`FILE:LINE:COL: error: message`,
//! FILE being the file name), and optionally the signature in `# SIGNATURE: `.

use appy_ir::diag::SourceFile;
use appy_ir::types::ArgType;
use appy_tests::root;

#[test]
fn rejected_programs() {
    let dir = root().join("tests/errors");
    let mut n = 0;
    let mut failures = vec![];
    let mut entries: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.extension().and_then(|e| e.to_str()) != Some("py") {
            continue;
        }
        n += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let src = SourceFile::new(name.clone(), text.clone());
        let want = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("# ERROR: "))
            .expect("# ERROR: line")
            .trim()
            .to_string();
        let sig: Option<Vec<ArgType>> = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("# SIGNATURE: "))
            .map(|s| s.split(';').map(|p| ArgType::parse(p).unwrap()).collect());
        let compiler = appy_gpu::Compiler::new();
        let func = appy_frontend::jit_functions(&src)
            .first()
            .map(|f| f.0.clone())
            .unwrap_or_else(|| "f".into());
        let result = compiler.parse(&src, &func).and_then(|p| {
            let sig = sig.clone().unwrap_or_else(|| {
                p.function
                    .params
                    .iter()
                    .map(|_| ArgType::Scalar {
                        dtype: appy_ir::types::DType::I64,
                        weak: true,
                    })
                    .collect()
            });
            compiler.lower(&src, &p, &sig, &appy_gpu::Options::default()).map(|_| ())
        });
        match result {
            Ok(()) => failures.push(format!("{name}: accepted, expected `{want}`")),
            Err(d) => {
                let got = d.render();
                let first = got.lines().next().unwrap_or("").to_string();
                if first != want {
                    failures.push(format!("{name}:\n  expected: {want}\n  got:      {first}\n{got}"));
                }
            }
        }
    }
    assert!(n > 0, "no error tests found");
    assert!(
        failures.is_empty(),
        "{} of {n} error tests failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
