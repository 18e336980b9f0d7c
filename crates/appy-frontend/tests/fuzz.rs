//! Property tests: no input makes the frontend panic.

use appy_frontend::{dump, jit_functions, parse_function};
use appy_ir::diag::SourceFile;
use proptest::prelude::*;

const SEED: &str = r#"import numpy as np
import appy

@appy.jit(auto_simd=True)
def f(A, B, s, M, N):
    """Doc."""
    #pragma parallel for simd shared(s)
    for i in range(M - 1):
        B[i] = 0.0
        #pragma simd
        for j in range(A[i], A[1+i]):
            if j % 2 == 0 and not (j > 3):
                B[i] += A[j] * 2 ** -1
            elif j < -1: pass
            else:
                s[0] = B[i, :N, None] if j else (1, 2)
    #pragma 1:M-1=>parallel :N=>reduction(sum:s),le(4)
    B[1:M-1, ::2] = 0.2 * (A[1:M-1] +
        A[:M-2]) ; x = 'str\'' \
        + "s"
    return B, s
"#;

const TOKENS: &[&str] = &[
    "for",
    "i",
    "in",
    "range",
    "(",
    ")",
    ":",
    "\n",
    "    ",
    "\t",
    "#pragma ",
    "# c",
    "parallel for",
    "simd",
    "=>",
    "'",
    "\"",
    "\"\"\"",
    "'''",
    "\\",
    "\\\n",
    "[",
    "]",
    ",",
    "=",
    "+",
    "+=",
    "**",
    "-",
    "*",
    "@",
    "@appy.jit\n",
    "def f(a):\n",
    "def",
    "if",
    "else",
    "elif",
    "return",
    "1",
    "0x",
    "_",
    ".",
    "None",
    "é",
    "\r\n",
    ";",
    "{",
    "}",
    "lambda",
    ":=",
    "not",
    "and",
    "<",
    "<=",
    "1.5e",
    "j",
    "f'",
    "\u{feff}",
    " ",
    "\x0c",
    "shared(",
    "reduce(sum:",
    "while",
    "class",
    "yield",
    "...",
    "*",
    "le(",
    "0",
    "9999999999999999999999",
];

fn exercise(text: &str) {
    let file = SourceFile::new("fuzz.py", text);
    for (name, _) in jit_functions(&file) {
        match parse_function(&file, &name) {
            Ok(p) => {
                let _ = dump(&p);
            }
            Err(e) => {
                let _ = e.render();
            }
        }
    }
    if let Err(e) = parse_function(&file, "f") {
        let _ = e.render();
    }
}

fn token_soup() -> impl Strategy<Value = String> {
    (any::<bool>(), prop::collection::vec(prop::sample::select(TOKENS), 0..60)).prop_map(|(header, toks)| {
        let mut s = if header {
            "@appy.jit\ndef f(a, N):\n    ".to_string()
        } else {
            String::new()
        };
        s.extend(toks.iter().copied());
        s
    })
}

#[derive(Clone, Debug)]
enum Edit {
    Insert(usize, &'static str),
    Delete(usize, usize),
    Replace(usize, char),
}

fn mutated_seed() -> impl Strategy<Value = String> {
    let edit = prop_oneof![
        (any::<usize>(), prop::sample::select(TOKENS)).prop_map(|(p, t)| Edit::Insert(p, t)),
        (any::<usize>(), 1usize..8).prop_map(|(p, n)| Edit::Delete(p, n)),
        (any::<usize>(), any::<char>()).prop_map(|(p, c)| Edit::Replace(p, c)),
    ];
    prop::collection::vec(edit, 1..6).prop_map(|edits| {
        let mut s: Vec<char> = SEED.chars().collect();
        for e in edits {
            match e {
                Edit::Insert(p, t) => {
                    let p = p % (s.len() + 1);
                    s.splice(p..p, t.chars());
                }
                Edit::Delete(p, n) if !s.is_empty() => {
                    let p = p % s.len();
                    let end = (p + n).min(s.len());
                    s.drain(p..end);
                }
                Edit::Replace(p, c) if !s.is_empty() => {
                    let p = p % s.len();
                    s[p] = c;
                }
                _ => {}
            }
        }
        s.into_iter().collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        exercise(&text);
        exercise(&format!("@appy.jit\ndef f(a):\n    {text}\n"));
    }

    #[test]
    fn token_soup_never_panics(text in token_soup()) {
        exercise(&text);
    }

    #[test]
    fn mutated_kernels_never_panic(text in mutated_seed()) {
        exercise(&text);
    }
}

#[test]
fn seed_parses() {
    let file = SourceFile::new("seed.py", SEED);
    if let Err(e) = parse_function(&file, "f") {
        panic!("{}", e.render());
    }
}
