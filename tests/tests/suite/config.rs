//! Configuration (`appy_ir::config`): every `APPY_*` environment variable is read in
//! the config module and nowhere else, every one the sources name is known to it, and
//! README.md lists each with its default.

use appy_ir::config::VARS;
use appy_tests::root;
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if p.is_dir() {
            if !matches!(name.as_str(), "target" | ".git" | "node_modules" | "__pycache__" | ".dev") && !name.starts_with('.') {
                sources(&p, out);
            }
        } else if name.ends_with(".rs") || name.ends_with(".py") || name.ends_with(".sh") {
            out.push(p);
        }
    }
}

fn all_sources() -> Vec<PathBuf> {
    let mut files = vec![];
    for d in ["crates", "tests", "scripts", "benchmarks", "examples", ".ci"] {
        sources(&root().join(d), &mut files);
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    // Not this file: it spells the patterns it looks for.
    files.retain(|f| !f.ends_with("tests/suite/config.rs"));
    files
}

#[test]
fn only_the_config_module_reads_appy_variables() {
    // Reads: `env::var("APPY_…")`, `var_os("APPY_…")`, `from_env("APPY_…")`,
    // `os.environ.get("APPY_…")`, `os.getenv("APPY_…")`, `os.environ["APPY_…"]` not
    // followed by an assignment.
    let read = regex::Regex::new(
        r#"(env::var(_os)?\(\s*"APPY_|from_env\(\s*"APPY_|environ\.get\(\s*["']APPY_|getenv\(\s*["']APPY_|environ\[\s*["']APPY_[A-Z0-9_]*["']\s*\]\s*([^=\s]|$|==))"#,
    )
    .unwrap();
    let mut offenders = vec![];
    for f in all_sources() {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        let rel = f.strip_prefix(root()).unwrap_or(&f).to_string_lossy().replace('\\', "/");
        for (i, line) in text.lines().enumerate() {
            if !read.is_match(line) {
                continue;
            }
            // The config module itself, the Python package's switch that must work
            // before (or without) its native module, and Python test scripts reading a
            // test variable of the config module (they cannot call it).
            let test_var = appy_ir::config::VARS
                .iter()
                .any(|v| v.scope == appy_ir::config::Scope::Test && line.contains(&format!("\"{}\"", v.name)));
            let allowed = rel == "crates/appy-ir/src/config.rs"
                || (rel == "crates/appy-python/python/appy/_jit.py" && line.contains("APPY_DISABLE_JIT"))
                || (rel.starts_with("tests/") && rel.ends_with(".py") && test_var);
            if !allowed {
                offenders.push(format!("{rel}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "APPY_* variables read outside appy_ir::config:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn every_variable_named_in_the_sources_is_known() {
    // A name in quotes, or set as `APPY_X=` (shell, Python keyword arguments).
    let named = regex::Regex::new(r#"["'](APPY_[A-Z0-9_]+)["']|\b(APPY_[A-Z0-9_]+)="#).unwrap();
    let known: Vec<&str> = VARS.iter().map(|v| v.name).collect();
    let mut unknown = vec![];
    for f in all_sources().into_iter().chain([root().join("README.md")]) {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for c in named.captures_iter(&text) {
            let n = c.get(1).or(c.get(2)).unwrap().as_str();
            if !known.contains(&n) {
                unknown.push(format!("{}: {n}", f.display()));
            }
        }
    }
    unknown.sort();
    unknown.dedup();
    assert!(
        unknown.is_empty(),
        "variables missing from appy_ir::config::VARS:\n{}",
        unknown.join("\n")
    );
}

#[test]
fn readme_lists_every_variable_with_its_default() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for v in VARS {
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", v.name)))
            .unwrap_or_else(|| panic!("README.md has no table row for `{}`", v.name));
        assert!(
            row.contains(v.default),
            "README.md's row for `{}` does not give its default `{}`:\n{row}",
            v.name,
            v.default
        );
    }
}
