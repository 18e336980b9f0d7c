//! Tests of the race analysis ([`super`]): the dependence test, the warnings, and the
//! repository's programs.

use super::*;

fn check_src(body: &str) -> DResult<Vec<String>> {
    let text = format!("import numpy as np\nimport appy\n\n\n@appy.jit\ndef k(a, b, out, s, idx, hist, N, M):\n{body}");
    let file = SourceFile::new("r.py", &text);
    let p = crate::parse_function(&file, "k")?;
    let imports = Imports::new(&p.imports);
    check(&file, &p.function.body, &imports).map(|ws| ws.into_iter().map(|w| w.render()).collect())
}

fn error(body: &str) -> String {
    match check_src(body) {
        Err(e) => e.render(),
        Ok(w) => panic!("accepted ({w:?}):\n{body}"),
    }
}

fn warnings(body: &str) -> Vec<String> {
    check_src(body).unwrap_or_else(|e| panic!("{}", e.render()))
}

#[test]
fn affine_subscripts() {
    let e = |s: &str| {
        let f = SourceFile::new("e.py", s);
        let e = crate::parser::parse_expr(&f, Span::new(0, s.len())).unwrap();
        affine(&e)
    };
    assert_eq!(e("2*i - 1 + j").unwrap().terms, BTreeMap::from([("i".into(), 2), ("j".into(), 1)]));
    assert_eq!(e("2*i - 1 + j").unwrap().c, -1);
    assert_eq!(e("-(i - 3) * 4").unwrap().c, 12);
    assert_eq!(e("i + 1 - i").unwrap().terms.len(), 0);
    assert!(e("i * j").is_none());
    assert!(e("i // 2").is_none());
    assert!(e("idx[i]").is_none());
}

#[test]
fn constant_distance_dependences_are_errors() {
    let p = "    #pragma parallel for\n    for i in range(1, N):\n";
    let e = error(&format!("{p}        out[i] = out[i-1] + a[i]\n"));
    assert!(e.starts_with("r.py:9:18: error: loop-carried dependence on `out`"), "{e}");
    assert!(
        e.contains("iteration `i` writes `out[i]`, and iteration `i + 1` reads `out[i-1]`"),
        "{e}"
    );
    assert!(e.contains("`#pragma sequential for`"), "{e}");
    let e = error(&format!("{p}        a[i+1] = a[i] * 2\n"));
    assert!(
        e.contains("iteration `i` writes `a[i+1]`, and iteration `i + 1` reads `a[i]`"),
        "{e}"
    );
    // An anti-dependence (reads before the later iteration writes).
    let e = error(&format!("{p}        a[i] = a[i+1] * 2\n"));
    assert!(
        e.contains("iteration `i` reads `a[i+1]`, and iteration `i + 1` writes `a[i]`"),
        "{e}"
    );
    // 2-D, on the parallel axis, with an inner loop; and an output dependence.
    let e = error(&format!(
        "{p}        for j in range(M):\n            out[i, j] = out[i - 1, j] * 0.5\n"
    ));
    assert!(e.contains("on `out`"), "{e}");
    let e = error(&format!("{p}        out[2*i] = 1.0\n        out[2*i + 2] = 2.0\n"));
    assert!(e.contains("writes `out[2*i + 2]`") || e.contains("writes `out[2*i]`"), "{e}");
    // prange and a sliced row.
    let e = error("    for i in appy.prange(1, N):\n        out[i, :] = out[i - 1, :] + 1.0\n");
    assert!(e.contains("on `out`"), "{e}");
}

#[test]
fn independent_accesses_stay_accepted() {
    let p = "    #pragma parallel for\n    for i in range(1, N):\n";
    for body in [
        "        out[i] = a[i-1] + a[i+1]\n",
        "        out[i] = out[i] * 2.0 + a[i-1]\n",
        // Different rows, a stride the step skips, a non-affine index.
        "        out[0, i] = out[1, i - 1]\n",
        "        out[i, 0] = out[i, 1] + 1.0\n",
        "        for j in range(1, M):\n            out[i, j] = out[i, j - 1] + 1.0\n",
        "        b[i] = a[i*i] + b[i]\n",
        "        t = np.empty(3)\n        t[1] = t[0]\n        out[i] = t[1]\n",
    ] {
        assert_eq!(warnings(&format!("{p}{body}")), Vec::<String>::new(), "{body}");
    }
    let stepped = "    #pragma parallel for\n    for i in range(0, N, 2):\n        a[i+1] = a[i] * 2\n";
    assert_eq!(warnings(stepped), Vec::<String>::new());
    // Sequential loops are not checked.
    assert_eq!(
        warnings("    for i in range(1, N):\n        out[i] = out[i-1] + a[i]\n"),
        Vec::<String>::new()
    );
    assert_eq!(
        warnings("    #pragma sequential for\n    for i in range(1, N):\n        out[i] = out[i-1] + a[i]\n"),
        Vec::<String>::new()
    );
}

#[test]
fn guarded_dependences_are_warnings() {
    let w = warnings("    #pragma parallel for\n    for i in range(N):\n        if i > 0:\n            out[i] = out[i-1] + a[i]\n");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("warning: possible loop-carried dependence on `out`"), "{w:?}");
}

#[test]
fn unsynchronised_updates_are_warnings() {
    let p = "    #pragma parallel for\n    for i in range(N):\n";
    for body in [
        "        hist[idx[i]] += 1\n",
        "        s[0] += a[i]\n",
        "        s[0] = s[0] + a[i]\n",
        "        for j in range(M):\n            hist[j] += a[i]\n",
    ] {
        let w = warnings(&format!("{p}{body}"));
        assert_eq!(w.len(), 1, "{body}: {w:?}");
        assert!(w[0].contains("warning: `"), "{w:?}");
        assert!(w[0].contains("is updated without synchronisation in a parallel loop"), "{w:?}");
        assert!(w[0].contains("#pragma atomic"), "{w:?}");
    }
    for body in [
        "        #pragma atomic\n        hist[idx[i]] += 1\n",
        "        out[i] += a[i]\n",
        "        k = 2 * i\n        out[k] += a[i]\n",
        "        if i == 0:\n            s[0] += a[i]\n",
        "        out[i, idx[i]] += 1.0\n",
    ] {
        assert_eq!(warnings(&format!("{p}{body}")), Vec::<String>::new(), "{body}");
    }
    // prange makes `+=` of such elements atomic by itself, not `s[0] = s[0] + x`.
    assert_eq!(
        warnings("    for i in appy.prange(N):\n        hist[idx[i]] += 1\n"),
        Vec::<String>::new()
    );
    assert_eq!(warnings("    for i in appy.prange(N):\n        s[0] = s[0] + a[i]\n").len(), 1);
}

/// Every APPy program of the repository (examples, test cases, APPy's own programs,
/// the NPBench kernels) passes the race check without an error; its warnings are
/// exactly these (each one a real unsynchronised update; see `docs/ROBUSTNESS.md`).
mod corpus {
    use super::*;
    use std::path::{Path, PathBuf};

    fn py_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<PathBuf> = rd.map(|e| e.unwrap().path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                py_files(&p, out);
            } else if p.extension().is_some_and(|e| e == "py") {
                out.push(p);
            }
        }
    }

    #[test]
    fn repository_programs_have_no_provable_races() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = vec![];
        for d in ["examples", "tests/cases", "tests/appy_repo", "benchmarks"] {
            py_files(&root.join(d), &mut files);
        }
        let (mut functions, mut errors, mut warnings) = (0, vec![], vec![]);
        for path in &files {
            let Ok(text) = std::fs::read_to_string(path) else { continue };
            let rel = path.strip_prefix(&root).unwrap().display().to_string();
            let file = SourceFile::new(&rel, &text);
            for (name, _) in crate::jit_functions(&file) {
                let Ok(p) = crate::parse_function(&file, &name) else { continue };
                let Ok(d) = crate::sema::desugar::desugar(&file, &p) else {
                    continue;
                };
                functions += 1;
                match check(&file, &d.function.body, &Imports::new(&p.imports)) {
                    Err(e) => errors.push(e.render()),
                    Ok(ws) => warnings.extend(ws.iter().map(|w| {
                        let (l, _) = file.line_col(w.span.map_or(0, |s| s.start));
                        format!("{rel}:{l} {name}")
                    })),
                }
            }
        }
        assert!(functions > 100, "only {functions} functions found");
        assert!(errors.is_empty(), "{}", errors.join("\n"));
        let expected: Vec<String> = vec![];
        assert_eq!(warnings, expected);
    }
}
