//! Rejected programs (snapshot tests): each `tests/errors/NAME.py` must be rejected with
//! exactly the diagnostic in `tests/errors/NAME.stderr` (location, message, source line,
//! caret, notes), or, for a program that is accepted with warnings, print exactly those
//! warnings. The signature used for lowering is given by a `# SIGNATURE: t1;t2`
//! comment (default: every parameter a Python int). Run with `APPY_BLESS=1` to write the
//! `.stderr` files after checking a change by eye.

use appy_ir::diag::SourceFile;
use appy_ir::types::{ArgType, DType};
use appy_tests::root;

fn diagnose(name: &str, text: &str) -> Option<String> {
    let src = SourceFile::new(name, text);
    let sig: Option<Vec<ArgType>> = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("# SIGNATURE: "))
        .map(|s| s.split(';').map(|p| ArgType::parse(p).unwrap()).collect());
    let compiler = appy_compiler::Compiler::new();
    let func = appy_frontend::jit_functions(&src)
        .first()
        .map(|f| f.0.clone())
        .unwrap_or_else(|| "f".into());
    let result = compiler.parse(&src, &func).and_then(|p| {
        let sig = sig.unwrap_or_else(|| {
            p.function
                .params
                .iter()
                .map(|_| ArgType::Scalar {
                    dtype: DType::I64,
                    weak: true,
                })
                .collect()
        });
        compiler
            .compile_cpu(&src, &func, &sig, &appy_compiler::Options::default(), &[])
            .map(|_| ())
    });
    match result {
        Err(d) => Some(d.render()),
        Ok(()) => {
            let w: String = compiler.take_warnings().iter().map(|d| d.render()).collect();
            (!w.is_empty()).then_some(w)
        }
    }
}

#[test]
fn rejected_programs() {
    let dir = root().join("tests/errors");
    let bless = appy_ir::config::test_var("APPY_BLESS").is_some();
    let mut entries: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    let mut n = 0;
    let mut failures = vec![];
    for path in entries.into_iter().filter(|p| p.extension().and_then(|e| e.to_str()) == Some("py")) {
        n += 1;
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let expected_path = path.with_extension("stderr");
        let Some(got) = diagnose(&name, &text) else {
            failures.push(format!(
                "{name}: accepted without a warning, but it should be rejected or warned about"
            ));
            continue;
        };
        assert!(
            !got.contains("internal compiler error"),
            "{name}: an internal compiler error is a bug:\n{got}"
        );
        if bless {
            std::fs::write(&expected_path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if want != got {
            failures.push(format!("{name}:\n--- expected ({})\n{want}--- got\n{got}", expected_path.display()));
        }
    }
    assert!(n >= 20, "only {n} error tests found");
    assert!(
        failures.is_empty(),
        "{} of {n} error snapshots differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `docs/SUBSET.md` is kept in step with the compiler: its function table is the
/// catalogue's (generated), and its table of rejected programs lists exactly the files
/// of `tests/errors`.
#[test]
fn docs_subset_is_current() {
    let path = root().join("docs/SUBSET.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = ("<!-- functions:begin -->\n", "<!-- functions:end -->");
    let b = text.find(begin).expect("docs/SUBSET.md has the functions:begin marker") + begin.len();
    let e = text.find(end).expect("docs/SUBSET.md has the functions:end marker");
    let table = appy_frontend::functions_markdown();
    if appy_ir::config::test_var("APPY_BLESS").is_some() {
        std::fs::write(&path, format!("{}{table}{}", &text[..b], &text[e..])).unwrap();
    } else {
        assert_eq!(
            &text[b..e],
            table,
            "docs/SUBSET.md's function table is out of date: run `APPY_BLESS=1 cargo test -p appy-tests docs`"
        );
    }
    let mut files: Vec<String> = std::fs::read_dir(root().join("tests/errors"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".py"))
        .collect();
    files.sort();
    for f in &files {
        assert!(text.contains(&format!("`{f}`")), "docs/SUBSET.md does not list tests/errors/{f}");
    }
    for line in text.lines().filter(|l| l.starts_with('|') && l.contains(".py` |")) {
        let name = line.rsplit('`').nth(1).unwrap_or("");
        assert!(
            files.iter().any(|f| f == name),
            "docs/SUBSET.md lists `{name}`, which is not in tests/errors"
        );
    }
}
