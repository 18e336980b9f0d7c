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

/// Red-black relaxation: each iteration writes its own row at one colour's columns and
/// reads its neighbours' rows at the other colour's (`j ≡ 1 + (i + color) mod 2`).
const RED_BLACK: &str = "    color = 1
    #pragma parallel for
    for i in range(1, N - 1):
        for j in range(1 + (i + color) % 2, N - 1, 2):
            out[i, j] = 0.25 * (out[i-1, j] + out[i+1, j] + out[i, j-1] + out[i, j+1])
";

#[test]
fn red_black_relaxation_is_independent() {
    assert_eq!(warnings(RED_BLACK), Vec::<String>::new());
    // The same with a colour that is a parameter, and with `i % 2` as the start.
    assert_eq!(
        warnings(&RED_BLACK.replace("    color = 1\n", "").replace("color", "M")),
        Vec::<String>::new()
    );
    assert_eq!(
        warnings(&RED_BLACK.replace("1 + (i + color) % 2", "(i + 1) % 2")),
        Vec::<String>::new()
    );
}

#[test]
fn inner_steps_and_offsets_that_never_meet_are_accepted() {
    let p = "    #pragma parallel for\n    for i in range(1, N):\n";
    for body in [
        // Odd columns only: the read `j + 1` is even.
        "        for j in range(1, M, 2):\n            out[i, j] = out[i-1, j+1]\n",
        // A start that is even in every iteration.
        "        for j in range(2*i, M, 2):\n            out[i, j] = out[i-1, j+1]\n",
        // Parity follows `i`: row `i - 1` is read at the other parity.
        "        for j in range(i % 2, M, 2):\n            out[i, j] = out[i-1, j]\n",
        "        for j in range(i % 4, M, 2):\n            out[i, j] = out[i+1, j] + out[i-3, j+2]\n",
        // Even and odd elements.
        "        out[2*i] = out[2*i+1] + 1.0\n",
        "        a[3*i] = a[3*i+1] + a[3*i-2]\n",
        // `j` is `i` (one value): row `i - 1` is read at column `i`, written at `i - 1`.
        "        for j in range(i, i + 1):\n            out[i, j] = out[i-1, j]\n",
        // Three columns, read three to the right.
        "        for c in range(3):\n            out[i, c] = out[i-1, c+3]\n",
        // A loop that never runs.
        "        for j in range(5, 5):\n            out[i, j] = out[i-1, j]\n",
    ] {
        assert_eq!(warnings(&format!("{p}{body}")), Vec::<String>::new(), "{body}");
    }
}

#[test]
fn inner_variables_whose_values_are_unknown_make_no_claim() {
    let p = "    #pragma parallel for\n    for i in range(1, N):\n";
    for body in [
        // The parity of the start is data.
        "        for j in range(idx[i], M, 2):\n            out[i, j] = out[i-1, j]\n",
        // A step that is not a constant, an iterable that is not a range.
        "        for j in range(0, M, i + 1):\n            out[i, j] = out[i-1, j]\n",
        "        for j in idx:\n            out[i, j] = out[i-1, j]\n",
        // A window whose width the compiler does not know.
        "        for j in range(max(0, i - 1), min(M, i + 2)):\n            out[i, j] = out[i-1, j+5]\n",
        // `j` after its loop, and `j` reassigned in it.
        "        for j in range(M):\n            b[j] = 0.0\n        out[i, j] = out[i-1, j]\n",
        "        for j in range(M):\n            j = idx[j]\n            out[i, j] = out[i-1, j]\n",
    ] {
        assert_eq!(warnings(&format!("{p}{body}")), Vec::<String>::new(), "{body}");
    }
}

#[test]
fn inner_steps_and_offsets_that_meet_are_errors() {
    let p = "    #pragma parallel for\n    for i in range(1, N):\n";
    // Red-black with a diagonal read: `j + 1` in row `i - 1` has this row's colour.
    let e = error(&RED_BLACK.replace("out[i-1, j] +", "out[i-1, j+1] +"));
    assert!(
        e.contains(
            "iteration `i` writes `out[i, j]`, and iteration `i + 1` reads `out[i-1, j+1]`, the same element when `j` is 1 less in iteration `i + 1`"
        ),
        "{e}"
    );
    // The same columns in every row.
    let e = error(&format!(
        "{p}        for j in range(1, M, 2):\n            out[i, j] = out[i-1, j]\n"
    ));
    assert!(
        e.contains("iteration `i` writes `out[i, j]`, and iteration `i + 1` reads `out[i-1, j]`, the same element\n"),
        "{e}"
    );
    // Parity follows `i`: rows two apart have the same colour.
    let e = error(&format!(
        "{p}        for j in range(i % 2, M, 2):\n            out[i, j] = out[i-2, j]\n"
    ));
    assert!(
        e.contains("iteration `i` writes `out[i, j]`, and iteration `i + 2` reads `out[i-2, j]`, the same element\n"),
        "{e}"
    );
    // A diagonal read over every column.
    let e = error(&format!("{p}        for j in range(M):\n            out[i, j] = out[i-1, j+1]\n"));
    assert!(e.contains("the same element when `j` is 1 less in iteration `i + 1`"), "{e}");
    // Three columns, read two to the right: column 2 of row `i` is written as column 0 is read.
    let e = error(&format!("{p}        for c in range(3):\n            out[i, c] = out[i-1, c+2]\n"));
    assert!(e.contains("the same element when `c` is 2 less in iteration `i + 1`"), "{e}");
    // `j` is `i`, read one row and one column back.
    let e = error(&format!(
        "{p}        for j in range(i, i + 1):\n            out[i, j] = out[i-1, j-1]\n"
    ));
    assert!(
        e.contains("iteration `i` writes `out[i, j]`, and iteration `i + 1` reads `out[i-1, j-1]`, the same element when `j` is 1 more in iteration `i + 1`"),
        "{e}"
    );
    // `2*i + 2` in iteration `i` is `2*i` in iteration `i + 1`.
    let e = error(&format!("{p}        a[2*i] = a[2*i + 2] * 0.5\n"));
    assert!(
        e.contains("iteration `i` reads `a[2*i + 2]`, and iteration `i + 1` writes `a[2*i]`, the same element\n"),
        "{e}"
    );
    // A flat index: `i + j` meets `i + 1 + j - 1`; and a write that meets itself.
    let e = error(&format!(
        "{p}        for j in range(M):\n            a[i + j] = a[i + j - 1] + 1.0\n"
    ));
    assert!(
        e.contains("iteration `i` writes `a[i + j]`, and iteration `i + 1` reads `a[i + j - 1]`, the same element\n"),
        "{e}"
    );
    let e = error(&format!("{p}        for j in range(M):\n            a[i + j] = b[j]\n"));
    assert!(
        e.contains("iteration `i` writes `a[i + j]`, and iteration `i + 1` writes `a[i + j]`, the same element when `j` is 1 less in iteration `i + 1`"),
        "{e}"
    );
    // Two inner variables, one of them bounded.
    let e = error(&format!(
        "{p}        for j in range(M):\n            for k in range(3):\n                b[i, j, k] = b[i-1, j+1, k-2]\n"
    ));
    assert!(
        e.contains("the same element when `j` is 1 less and `k` is 2 more in iteration `i + 1`"),
        "{e}"
    );
    // A negative step from a start of unknown but fixed parity.
    let e = error(&format!(
        "{p}        for j in range(M - 1, 0, -2):\n            out[i, j] = out[i+1, j]\n"
    ));
    assert!(
        e.contains("iteration `i` reads `out[i+1, j]`, and iteration `i + 1` writes `out[i, j]`, the same element\n"),
        "{e}"
    );
    // Under an `if`, a warning that names the shift too.
    let w = warnings(&format!(
        "{p}        if i > 2:\n            for j in range(M):\n                out[i, j] = out[i+1, j-1]\n"
    ));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("warning: possible loop-carried dependence on `out` in a parallel loop: iteration `i` reads `out[i+1, j-1]`, and iteration `i + 1` writes `out[i, j]`, the same element when `j` is 1 less in iteration `i + 1`"),
        "{w:?}"
    );
}

#[test]
fn a_parallel_loop_of_a_constant_length_has_no_longer_distance() {
    let p = "    #pragma parallel for\n    for i in range(3):\n";
    assert_eq!(warnings(&format!("{p}        a[i] = a[i - 3]\n")), Vec::<String>::new());
    let e = error(&format!("{p}        a[i] = a[i - 2]\n"));
    assert!(
        e.contains("iteration `i` writes `a[i]`, and iteration `i + 2` reads `a[i - 2]`"),
        "{e}"
    );
}

#[test]
fn integer_solutions() {
    // 2x + 4y = 6: x = 3 - 2t, y = t (up to the basis chosen).
    let (x, k) = solve(&[(vec![2, 4], 6)], 2).unwrap();
    assert_eq!(2 * x[0] + 4 * x[1], 6);
    assert_eq!(k.len(), 1);
    assert_eq!(2 * k[0][0] + 4 * k[0][1], 0);
    assert_eq!(gcd(k[0][0], k[0][1]), 1);
    // 2x + 4y = 5 has none (gcd); x + 2y = 1 and y = 1 give x = -1.
    assert!(solve(&[(vec![2, 4], 5)], 2).is_none());
    assert_eq!(solve(&[(vec![1, 2], 1), (vec![0, 1], 1)], 2).unwrap(), (vec![-1, 1], vec![]));
    // Inconsistent rows, and a row of zeros.
    assert!(solve(&[(vec![1, 1], 1), (vec![2, 2], 3)], 2).is_none());
    assert!(solve(&[(vec![0, 0], 1)], 2).is_none());
    assert_eq!(smallest_nonzero(0, 0), None);
    assert_eq!(smallest_nonzero(-3, 0), Some(-3));
    assert_eq!(smallest_nonzero(0, 2), Some(2));
    assert_eq!(smallest_nonzero(7, 5), Some(2));
    assert_eq!(smallest_nonzero(-1, 4), Some(-1));
    assert_eq!(smallest_nonzero(2, 4), Some(2));
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
