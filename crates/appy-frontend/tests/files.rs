//! Whole files: the APPy paper's kernels, realistic modules with other Python code,
//! imports, decorator aliases, and the AST dump.

mod util;

use appy_frontend::ast::*;
use appy_frontend::{dump, jit_functions, parse_function};
use appy_ir::diag::SourceFile;
use util::stmts_sx;

const PAPER: &str = r#"import numpy as np
import appy

@appy.jit
def spmv(A_row, A_col, A_val, x, y, N):
    #pragma parallel for
    for i in range(N - 1):
        y[i] = 0.0
        #pragma simd
        for j in range(A_row[i], A_row[1+i]):
            col = A_col[j]
            y[i] += A_val[j] * x[col]

@appy.jit(auto_simd=True)
def softmax(a, b, M, N):
    #pragma parallel for
    for i in range(M):
        m = max(a[i, :N])
        s = sum(np.exp(a[i, :N] - m))
        b[i, :N] = np.exp(a[i, :N] - m) / s

@appy.jit
def vector_sum(A, s, N):
    #pragma parallel for simd
    for i in range(N):
        #pragma atomic
        s[0] += A[i]

@appy.jit(auto_simd=True)
def jacobi_2d_one_iteration(A, B, M, N):
    #pragma 1:M-1=>parallel 1:N-1=>parallel
    B[1:M-1, 1:N-1] = 0.2 * (A[1:M-1, 1:N-1] + A[1:M-1, :N-2] +
        A[1:M-1, 2:N] + A[2:M, 1:N-1] + A[0:M-2, 1:N-1])
    #pragma :M=>parallel :N=>reduction(sum:y)
    y[:M] = mv(alpha * A[:M, :N], x[:N])
"#;

fn parse(file: &SourceFile, name: &str) -> Program {
    parse_function(file, name).unwrap_or_else(|e| panic!("{}", e.render()))
}

#[test]
fn paper_kernels() {
    let file = SourceFile::new("paper.py", PAPER);
    let names: Vec<String> = jit_functions(&file).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["spmv", "softmax", "vector_sum", "jacobi_2d_one_iteration"]);

    let p = parse(&file, "spmv");
    assert_eq!(p.imports.len(), 2);
    assert_eq!(
        p.imports[0],
        Import::Module {
            module: "numpy".into(),
            alias: "np".into(),
            span: Span::new(0, 18)
        }
    );
    assert!(p.function.options.is_empty());
    assert_eq!(p.function.params.len(), 6);
    assert_eq!(
        stmts_sx(&p.function.body),
        "for i in (call range (- N 1)) #parallel for
  y[i] = 0.0
  for j in (call range A_row[i] A_row[(+ 1 i)]) #simd
    col = A_col[j]
    y[i] += (* A_val[j] x[col])
"
    );
    assert_eq!(file.line_col(p.function.body[0].span.start), (7, 5));
    assert_eq!(file.line_col(p.function.body[0].pragma.as_ref().unwrap().span.start), (6, 5));

    let p = parse(&file, "softmax");
    assert_eq!(p.function.options.len(), 1);
    assert_eq!(p.function.options[0].0.name, "auto_simd");
    assert_eq!(
        stmts_sx(&p.function.body),
        "for i in (call range M) #parallel for
  m = (call max a[i, :N])
  s = (call sum (call np.exp (- a[i, :N] m)))
  b[i, :N] = (/ (call np.exp (- a[i, :N] m)) s)
"
    );

    let p = parse(&file, "vector_sum");
    assert_eq!(
        p.function.body[0].pragma.as_ref().unwrap().kind,
        PragmaKind::ParallelFor {
            simd: true,
            shared: vec![],
            transforms: vec![]
        }
    );
    let StmtKind::For { body, .. } = &p.function.body[0].kind else {
        panic!()
    };
    assert_eq!(body[0].pragma.as_ref().unwrap().kind, PragmaKind::Atomic);

    let p = parse(&file, "jacobi_2d_one_iteration");
    assert_eq!(p.function.body.len(), 2);
    let PragmaKind::Tensor(dims) = &p.function.body[0].pragma.as_ref().unwrap().kind else {
        panic!()
    };
    assert_eq!(dims.iter().map(|d| d.text.as_str()).collect::<Vec<_>>(), ["1:M-1", "1:N-1"]);
    let PragmaKind::Tensor(dims) = &p.function.body[1].pragma.as_ref().unwrap().kind else {
        panic!()
    };
    assert_eq!(
        dims[1].props,
        [TensorProp::Reduce {
            op: "sum".into(),
            var: Ident {
                name: "y".into(),
                span: dims_var_span(&file)
            }
        }]
    );
    let StmtKind::Assign { value, .. } = &p.function.body[0].kind else {
        panic!()
    };
    assert_eq!(file.line_col(value.span.end), (33, 57));
}

fn dims_var_span(file: &SourceFile) -> Span {
    let start = file.text().find("sum:y").unwrap() + 4;
    Span::new(start, start + 1)
}

const REALISTIC: &str = r#"#!/usr/bin/env python3
"""Benchmark: GEMV with APPy vs NumPy.

def not_a_function(): this is inside a docstring
@appy.jit
"""
import argparse
import os, sys
import time as t
import numpy as np
import appy as ap
from appy import jit as j, prange
from numba import prange as nprange
from numpy import (exp,
                   sqrt)  # multi-line import
from . import sibling
import appy.language as al
import this is not valid python

try:
    import torch
except ImportError:
    torch = None


def gemv_numpy(A, x):
    """Reference implementation."""
    return A @ x


class Runner:
    """Holds the benchmark state."""

    def __init__(self, n: int = 1024, *args, **kwargs):
        self.n = n
        self.fns = {k: lambda v: v ** 2 for k in range(3)}

    @staticmethod
    @ap.jit
    def not_module_level(a):
        pass

    async def run(self):
        with open(os.devnull) as f:
            print(f"{self.n=}", file=f)
        while True:
            break


@ap.jit(auto_simd=True)
def gemv(A, x, y, M, N):
    """y = A @ x"""
    #pragma parallel for
    for i in prange(M):   # rows in parallel

        acc = 0.0
        # accumulate
        #pragma simd
        for k in range(N):
            acc += A[i, k] * x[k]
        y[i] = acc
    # trailing comment: not part of the function


@j
def scale(x, alpha, N):
	#pragma parallel for
	for i in range(N):
		x[i] *= alpha


@numba.njit(parallel=True)
def numba_version(x):
    return [v for v in x]


@j()
def clamp(x, lo, hi, N):
    for i in range(N):
        if x[i] < lo: x[i] = lo
        elif x[i] > hi:
            x[i] = hi
        else: pass


@decorator_with_args(lambda f: f)
def other(x): return x


def undecorated_jit_lookalike():
    @appy.jit
    def inner(a):
        pass
    return inner


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="gemv")
    parser.add_argument("--n", type=int, default=1024)
    args = parser.parse_args()
    A = np.random.randn(args.n, args.n)
    x = np.random.randn(args.n)
    y = np.empty(args.n)
    t0 = t.time()
    gemv(A, x, y, args.n, args.n)
    print(f"time: {t.time() - t0:.3f}s", {"ok": np.allclose(y, gemv_numpy(A, x))})
    s = '''
@appy.jit
def fake(a):
    pass
'''
"#;

#[test]
fn realistic_file_with_other_python_code() {
    let file = SourceFile::new("bench.py", REALISTIC);
    let jitted: Vec<(String, (usize, usize))> = jit_functions(&file).into_iter().map(|(n, s)| (n, file.line_col(s.start))).collect();
    assert_eq!(
        jitted,
        [
            ("gemv".to_string(), (51, 5)),
            ("scale".to_string(), (66, 5)),
            ("clamp".to_string(), (78, 5))
        ]
    );

    let p = parse(&file, "gemv");
    assert_eq!(p.function.options[0].0.name, "auto_simd");
    assert_eq!(
        stmts_sx(&p.function.body),
        "\"y = A @ x\"
for i in (call prange M) #parallel for
  acc = 0.0
  for k in (call range N) #simd
    acc += (* A[i, k] x[k])
  y[i] = acc
"
    );
    let text = &file.text()[p.function.span.start..p.function.span.end];
    assert!(text.starts_with("def gemv(A, x, y, M, N):"));
    assert!(text.ends_with("y[i] = acc"), "{text}");

    let modules: Vec<(&str, &str)> = p
        .imports
        .iter()
        .filter_map(|i| match i {
            Import::Module { module, alias, .. } => Some((module.as_str(), alias.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        modules,
        [
            ("argparse", "argparse"),
            ("os", "os"),
            ("sys", "sys"),
            ("time", "t"),
            ("numpy", "np"),
            ("appy", "ap"),
            ("appy.language", "al")
        ]
    );
    let froms: Vec<(&str, Vec<(String, String)>)> = p
        .imports
        .iter()
        .filter_map(|i| match i {
            Import::From { module, names, .. } => Some((module.as_str(), names.clone())),
            _ => None,
        })
        .collect();
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        froms,
        [
            ("appy", vec![pair("jit", "j"), pair("prange", "prange")]),
            ("numba", vec![pair("prange", "nprange")]),
            ("numpy", vec![pair("exp", "exp"), pair("sqrt", "sqrt")]),
            (".", vec![pair("sibling", "sibling")]),
        ]
    );

    let p = parse(&file, "scale");
    assert_eq!(
        stmts_sx(&p.function.body),
        "for i in (call range N) #parallel for\n  x[i] *= alpha\n"
    );

    let p = parse(&file, "clamp");
    assert_eq!(
        stmts_sx(&p.function.body),
        "for i in (call range N)\n  if (cmp x[i] < lo)\n    x[i] = lo\n  else\n    if (cmp x[i] > hi)\n      x[i] = hi\n    else\n      pass\n"
    );

    for name in [
        "numba_version",
        "other",
        "undecorated_jit_lookalike",
        "inner",
        "fake",
        "not_module_level",
    ] {
        assert!(parse_function(&file, name).is_err(), "{name}");
    }
}

#[test]
fn decorator_forms_and_aliases() {
    let file = SourceFile::new(
        "d.py",
        "from appy import jit\nimport appy as A\n\n@jit\ndef a(x): pass\n\n@jit(auto_simd=False)\ndef b(x): pass\n\n@A.jit\ndef c(x): pass\n\n@appy.jit()\ndef d(x): pass\n\n@other.jit\ndef e(x): pass\n\n@cache\n@appy.jit\n# comment between\n@log\ndef f(x): pass\n\n@appy.jit\nasync def g(x): pass\n",
    );
    let names: Vec<String> = jit_functions(&file).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a", "b", "c", "d", "f"]);
    let p = parse(&file, "b");
    assert_eq!(p.function.options[0].1.kind, ExprKind::Bool(false));
}

#[test]
fn the_last_definition_wins() {
    let file = SourceFile::new("d.py", "@appy.jit\ndef f(x):\n    return 1\n\n@appy.jit\ndef f(x):\n    return 2\n");
    let p = parse(&file, "f");
    assert_eq!(stmts_sx(&p.function.body), "return 2\n");
}

#[test]
fn dump_prints_an_indented_tree_with_locations() {
    let file = SourceFile::new(
        "k.py",
        "import numpy as np\nfrom appy import jit as j\n\n@j(auto_simd=True)\ndef k(a, N):\n    #pragma parallel for shared(a)\n    for i in range(N):\n        if a[i] > 0:\n            a[i] = -a[i] ** 2\n        else:\n            a[i:, None] += np.float32(1.5)\n    return a, N\n",
    );
    let got = dump(&parse(&file, "k"));
    let want = "Program k.py
  Import numpy as np @1:1
  ImportFrom appy: jit as j @2:1
  Function k(a, N) @5:1
    option auto_simd @4:4
      Bool True @4:14
    For i @7:5
      pragma parallel for shared(a) @6:5
      iter: Call @7:14
        func: Name range @7:14
        arg: Name N @7:20
      body: @8:9
        If @8:9
          cond: Compare > @8:12
            Subscript @8:12
              value: Name a @8:12
              index: Name i @8:14
            Int 0 @8:19
          then: @9:13
            Assign @9:13
              target: Subscript @9:13
                value: Name a @9:13
                index: Name i @9:15
              value: Unary - @9:20
                Binary ** @9:21
                  Subscript @9:21
                    value: Name a @9:21
                    index: Name i @9:23
                  Int 2 @9:29
          else: @11:13
            AugAssign += @11:13
              target: Subscript @11:13
                value: Name a @11:13
                index: Slice @11:15
                  lower: Name i @11:15
                index: NewAxis @11:19
              value: Call @11:28
                func: Attribute .float32 @11:28
                  Name np @11:28
                arg: Float 1.5 @11:39
    Return @12:5
      Tuple @12:12
        Name a @12:12
        Name N @12:15
";
    assert_eq!(got, want, "got:\n{got}");
}
