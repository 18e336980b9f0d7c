//! A grammar-aware generator of APPy-like programs for fuzzing: mostly well-formed
//! functions built from APPy's statements, pragmas and expressions (including wrong
//! ones: bad pragmas, undefined names, slices, unsupported calls), optionally mutated
//! at the character level.

use crate::Rng;

const NAMES: [&str; 6] = ["x", "y", "t", "s", "i", "j"];

fn pick<'a>(r: &mut Rng, xs: &[&'a str]) -> &'a str {
    xs[r.int(0, xs.len() as i64) as usize]
}

thread_local! {
    static CLEAN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn clean() -> bool {
    CLEAN.with(|c| c.get())
}

/// A flat left-associative chain of 2 to 3,000 operands joined by one or several of
/// `+ - * / // % and or` (an operand may itself be a small expression).
pub fn long_chain(r: &mut Rng) -> String {
    let n = r.int(2, 3000);
    let ops: Vec<&str> = (0..r.int(1, 4))
        .map(|_| pick(r, &["+", "-", "*", "/", "//", "%", "and", "or"]))
        .collect();
    let mut s = expr(r, 1);
    for _ in 1..n {
        s.push_str(&format!(" {} {}", pick(r, &ops), expr(r, 1)));
    }
    s
}

/// A random expression of nesting depth at most `d`.
pub fn expr(r: &mut Rng, d: u32) -> String {
    if d == 0 || r.int(0, 3) == 0 {
        return match r.int(0, if clean() { 7 } else { 12 }) {
            0 => "a[i]".into(),
            1 => "b[i, j]".into(),
            2 => pick(r, &NAMES).into(),
            3 => "N".into(),
            4 => format!("{}", r.int(-3, 10)),
            5 => format!("{:.2}", r.uniform(-5.0, 5.0)),
            6 => pick(
                r,
                &[
                    "float('inf')",
                    "float('-inf')",
                    "True",
                    "False",
                    "None",
                    "appy.MVL",
                    "a.shape[0]",
                    "b.shape[1]",
                ],
            )
            .into(),
            7 => "a[:N]".into(),
            8 => "b[i, None]".into(),
            9 => "a[-1]".into(),
            10 => "s[0]".into(),
            _ => "undefined_thing".into(),
        };
    }
    let (l, rr) = (expr(r, d - 1), expr(r, d - 1));
    if clean() {
        return match r.int(0, 6) {
            0..=2 => format!("({l} {} {rr})", pick(r, &["+", "-", "*", "/", "//", "%", "<", "<=", "==", "!="])),
            3 => format!(
                "{}({l})",
                pick(
                    r,
                    &["np.exp", "np.sqrt", "np.tanh", "abs", "float", "np.log", "np.float32", "np.floor"]
                )
            ),
            4 => format!("{}({l}, {rr})", pick(r, &["max", "min", "np.maximum", "np.minimum"])),
            _ => format!("({l} if {rr} else {})", expr(r, d - 1)),
        };
    }
    match r.int(0, 11) {
        0..=3 => format!(
            "({l} {} {rr})",
            pick(r, &["+", "-", "*", "/", "//", "%", "**", "&", "|", "<", "<=", "==", "!="])
        ),
        4 => format!(
            "{}({l})",
            pick(
                r,
                &[
                    "np.exp",
                    "np.sqrt",
                    "np.tanh",
                    "abs",
                    "float",
                    "int",
                    "np.log",
                    "np.float32",
                    "np.frob",
                    "len"
                ]
            )
        ),
        5 => format!(
            "{}({l}, {rr})",
            pick(r, &["max", "min", "np.maximum", "np.power", "np.arctan2", "appy.atomic_add"])
        ),
        6 => format!("({l} if {rr} else {})", expr(r, d - 1)),
        7 => format!("({l} and {rr})"),
        8 => format!("-{l}"),
        9 => format!("not {l}"),
        _ => format!("appy.where({l}, {rr}, {})", expr(r, d - 1)),
    }
}

fn target(r: &mut Rng) -> String {
    if clean() {
        return pick(r, &["a[i]", "b[i, j]", "x", "t", "a[j]"]).into();
    }
    match r.int(0, 6) {
        0 => "a[i]".into(),
        1 => "b[i, j]".into(),
        2 => "s[0]".into(),
        3 => "x, y".into(),
        _ => pick(r, &NAMES).into(),
    }
}

fn block(r: &mut Rng, ind: usize, depth: u32, out: &mut String) {
    let n = r.int(1, 4);
    for _ in 0..n {
        stmt(r, ind, depth, out);
    }
}

/// A tensor statement in sliced index notation, with or without a tensor pragma.
fn tensor_stmt(r: &mut Rng, pad: &str, out: &mut String) {
    let p = pick(
        r,
        &[
            "",
            "",
            "#pragma :N=>parallel",
            "#pragma :N=>simd",
            "#pragma :N=>parallel :N=>simd",
            "#pragma 1:N=>simd",
            "#pragma :N=>parallel,reduce(sum:x)",
            "#pragma :M=>parallel",
            "#pragma :N=>simd,le(64)",
            "#pragma :N=>reduce(max:a)",
            "#pragma :N=>",
        ],
    );
    if !p.is_empty() {
        out.push_str(&format!("{pad}{p}\n"));
    }
    let e = pick(
        r,
        &[
            "a[:N]",
            "a[:N] * 2.0",
            "np.exp(a[:N])",
            "a[:N] + x",
            "b[0, :N]",
            "np.maximum(a[:N], 0.5)",
            "a[:N] / x",
        ],
    );
    let t = match r.int(0, 10) {
        0 => format!("a[:N] = {e}"),
        1 => format!("b[i, :N] = {e}"),
        2 => format!("x = np.sum({e})"),
        3 => format!("a[1:N] = a[:N-1] * 0.5 + {e}"),
        4 => "b[:N, :N] = a[:N, None] * a[None, :N]".to_string(),
        5 => "a[:N] += np.max(b[:N, :N], axis=1)".to_string(),
        6 => "x = np.sum(b[:N, :N] @ a[:N])".to_string(),
        7 => format!("b[:N, :N] = b[:N, :N] @ b[:N, :N] + {e}"),
        8 => format!("a[:N] = {e} / np.sum({e})"),
        _ => "a[:N] = transpose(b[:N, :N])[0, :N]".to_string(),
    };
    out.push_str(&format!("{pad}{t}\n"));
}

fn stmt(r: &mut Rng, ind: usize, depth: u32, out: &mut String) {
    let pad = "    ".repeat(ind);
    if r.int(0, 8) == 0 {
        return tensor_stmt(r, &pad, out);
    }
    match r.int(0, if depth == 0 { 5 } else { 9 }) {
        0 | 1 => out.push_str(&format!("{pad}{} = {}\n", target(r), expr(r, 3))),
        2 => out.push_str(&format!(
            "{pad}{} {}= {}\n",
            target(r),
            pick(r, &["+", "-", "*", "/", "//"]),
            expr(r, 2)
        )),
        3 => {
            if r.int(0, 2) == 0 {
                out.push_str(&format!("{pad}#pragma atomic\n"));
            }
            out.push_str(&format!("{pad}{} += {}\n", pick(r, &["s[0]", "a[i]", "x"]), expr(r, 2)));
        }
        4 => out.push_str(&format!(
            "{pad}{}\n",
            pick(
                r,
                &["pass", "return x", "return a", "return x, y", "vi = appy.vidx(i, appy.MVL, N)"]
            )
        )),
        5..=7 => {
            let p = pick(
                r,
                &[
                    "",
                    "",
                    "#pragma parallel for",
                    "#pragma parallel for simd",
                    "#pragma simd",
                    "#pragma sequential for",
                    "#pragma parallel for shared(x)",
                    "#pragma parallel for shared(s, t)",
                    "#pragma parallel fr",
                    "#pragma :N=>parallel",
                    "#pragma atomic",
                    "#pragma simd simd",
                ],
            );
            if !p.is_empty() {
                out.push_str(&format!("{pad}{p}\n"));
            }
            let v = pick(r, &["i", "j", "k", "x"]);
            let bounds = match r.int(0, 6) {
                0 => "N".to_string(),
                1 => "1, N - 1".into(),
                2 => "N - 1, -1, -1".into(),
                3 => "0, N, appy.MVL".into(),
                4 => expr(r, 1),
                _ => "a.shape[0]".into(),
            };
            let it = if r.int(0, 8) == 0 {
                format!("prange({bounds})")
            } else if r.int(0, 10) == 0 {
                "a".into()
            } else {
                format!("range({bounds})")
            };
            out.push_str(&format!("{pad}for {v} in {it}:\n"));
            block(r, ind + 1, depth - 1, out);
        }
        _ => {
            out.push_str(&format!("{pad}if {}:\n", expr(r, 2)));
            block(r, ind + 1, depth - 1, out);
            if r.int(0, 2) == 0 {
                out.push_str(&format!("{pad}else:\n"));
                block(r, ind + 1, depth - 1, out);
            }
        }
    }
}

/// A random program with a jitted function `f(a, b, s, N)`; half of them use only
/// valid constructs (so that the passes behind the frontend get exercised).
pub fn program(r: &mut Rng) -> String {
    let c = r.int(0, 2) == 0;
    CLEAN.with(|x| x.set(c));
    if c {
        let mut out =
            "import numpy as np\nimport appy\n\n\n@appy.jit\ndef f(a, b, s, N):\n    x = 0.0\n    t = 1.0\n    i = 0\n    j = 1\n"
                .to_string();
        clean_block(r, 1, 3, &mut out);
        return out;
    }
    let opts = pick(r, &["", "", "(auto_simd=True)", "(bogus=1)"]);
    let mut out = format!("import numpy as np\nimport appy\nfrom appy import prange\n\n\n@appy.jit{opts}\ndef f(a, b, s, N):\n");
    if r.int(0, 2) == 0 {
        out.push_str("    x = 0.0\n    y = 1\n    t = 0.0\n");
    }
    block(r, 1, 3, &mut out);
    if r.int(0, 40) == 0 {
        // A long flat chain (machine-generated stencils reach thousands of terms).
        out.push_str(&format!("    x = {}\n", long_chain(r)));
    }
    if r.int(0, 4) == 0 {
        // Character-level mutation.
        let mut bytes: Vec<char> = out.chars().collect();
        for _ in 0..r.int(1, 4) {
            let pos = r.int(0, bytes.len() as i64) as usize;
            match r.int(0, 3) {
                0 => {
                    bytes.remove(pos.min(bytes.len() - 1));
                }
                1 => bytes.insert(
                    pos,
                    pick(r, &["(", ")", ":", " ", "\n", "\t", "[", "#", "=", "'", "\\"])
                        .chars()
                        .next()
                        .unwrap_or(' '),
                ),
                _ => bytes.insert(pos, 'x'),
            }
        }
        out = bytes.into_iter().collect();
    }
    out
}

/// Valid statements only: loops with valid pragmas over `i`/`j`, assignments to arrays
/// and to the pre-declared float scalars.
fn clean_block(r: &mut Rng, ind: usize, depth: u32, out: &mut String) {
    let pad = "    ".repeat(ind);
    for _ in 0..r.int(1, 4) {
        match r.int(0, if depth == 0 { 3 } else { 6 }) {
            0 | 1 => out.push_str(&format!("{pad}{} = {}\n", target(r), expr(r, 3))),
            2 => out.push_str(&format!("{pad}{} += {}\n", target(r), expr(r, 2))),
            3 | 4 => {
                let p = pick(
                    r,
                    &[
                        "",
                        "#pragma parallel for",
                        "#pragma parallel for simd",
                        "#pragma simd",
                        "#pragma sequential for",
                        "#pragma parallel for shared(x)",
                    ],
                );
                if !p.is_empty() {
                    out.push_str(&format!("{pad}{p}\n"));
                }
                let v = pick(r, &["i", "j"]);
                let bounds = pick(r, &["N", "1, N - 1", "N - 1, -1, -1", "0, N, 3", "a.shape[0]"]);
                out.push_str(&format!("{pad}for {v} in range({bounds}):\n"));
                clean_block(r, ind + 1, depth - 1, out);
            }
            _ => {
                out.push_str(&format!("{pad}if {}:\n", expr(r, 2)));
                clean_block(r, ind + 1, depth - 1, out);
            }
        }
    }
}
