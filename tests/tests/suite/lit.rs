//! Lit-style IR tests: every file in `tests/lit/` has `RUN:` lines such as
//! `# RUN: appy-opt %s --emit=loops | filecheck %s`; `appy-opt` runs in-process,
//! `|` pipes its output into the next command, and `filecheck %s` checks the output
//! against the file's CHECK directives. Each file is a test of its own, named after it
//! (`lit::gpu_outline_py`): `cargo test -p appy-tests lit::gpu_outline` runs one.

use appy_tests::root;

/// The words of a command, as a shell splits them: whitespace separates words except
/// inside single quotes, which are removed.
fn shell_words(stage: &str) -> Vec<String> {
    let mut words = vec![];
    let mut cur: Option<String> = None;
    let mut quoted = false;
    for c in stage.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                cur.get_or_insert_with(String::new);
            }
            c if c.is_whitespace() && !quoted => words.extend(cur.take()),
            c => cur.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(cur);
    words
}

fn run_line(line: &str, path: &str, text: &str) -> Result<(), String> {
    let mut input = String::new();
    for stage in line.split('|') {
        let mut words: Vec<String> = shell_words(stage)
            .into_iter()
            .filter(|w| w != "2>&1")
            .map(|w| w.replace("%s", path))
            .collect();
        // `not appy-opt ...`: the command must fail; its error message is what the next
        // stage reads (as `2>&1` would give it).
        let expect_failure = words.first().is_some_and(|w| w == "not");
        if expect_failure {
            words.remove(0);
        }
        match words.first().map(String::as_str) {
            Some("appy-opt") => {
                input = match (appy_tools::opt::run(&words, &input), expect_failure) {
                    (Ok(out), false) => out,
                    (Err(e), false) => return Err(format!("`{stage}` failed:\n{e}")),
                    (Ok(_), true) => return Err(format!("`{stage}` succeeded; it must fail")),
                    (Err(e), true) => e,
                };
            }
            Some("filecheck") => {
                let prefix = words.iter().find_map(|w| w.strip_prefix("--check-prefix=")).unwrap_or("CHECK");
                appy_tests::filecheck::check_prefix(text, &input, prefix)?
            }
            other => return Err(format!("unknown command {other:?} in RUN line")),
        }
    }
    Ok(())
}

/// Runs every RUN line of `tests/lit/FILE`.
fn run_file(file: &str) {
    let f = root().join("tests/lit").join(file);
    let text = std::fs::read_to_string(&f).unwrap();
    let path = f.to_str().unwrap();
    let mut failures = vec![];
    let mut n = 0;
    for l in text.lines() {
        let t = l.trim_start().trim_start_matches("//").trim_start_matches('#').trim_start();
        if let Some(cmd) = t.strip_prefix("RUN:") {
            n += 1;
            if let Err(e) = run_line(cmd, path, &text) {
                failures.push(format!("RUN: {cmd}\n{e}"));
            }
        }
    }
    assert!(n > 0, "{file} has no RUN lines");
    assert!(
        failures.is_empty(),
        "{file}: {} of {n} RUN lines failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

// One test per file of tests/lit (written by tests/build.rs).
include!(concat!(env!("OUT_DIR"), "/lit_tests.rs"));
