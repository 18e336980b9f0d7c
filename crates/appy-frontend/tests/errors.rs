//! Rejected constructs, malformed pragmas, indentation errors: message and location.

mod util;

use appy_frontend::{jit_functions, parse_function};
use appy_ir::diag::SourceFile;
use util::*;

#[test]
fn unsupported_statements() {
    let cases: &[(&str, &str, usize, usize)] = &[
        (
            "while x < 3:\n    x += 1\nelse:\n    x = 0",
            "`while ... else` is not supported",
            3,
            1,
        ),
        ("x = 1\nwith open(f) as g:\n    pass", "`with` statements are not supported", 2, 1),
        ("try:\n    pass\nexcept E:\n    pass", "exception handling", 1, 1),
        ("raise ValueError()", "`raise` is not supported", 1, 1),
        ("def g(x):\n    return x", "nested function definitions are not supported", 1, 1),
        ("class C:\n    pass", "class definitions are not supported", 1, 1),
        ("global g", "`global`/`nonlocal` declarations", 1, 1),
        ("nonlocal g", "`global`/`nonlocal` declarations", 1, 1),
        ("del x", "`del` is not supported", 1, 1),
        ("import os", "imports inside APPy functions", 1, 1),
        ("from os import path", "imports inside APPy functions", 1, 1),
        ("yield x", "generators (`yield`)", 1, 1),
        ("x = yield", "generators (`yield`)", 1, 5),
        ("async def g():\n    pass", "`async`/`await`", 1, 1),
        ("await g()", "`async`/`await`", 1, 1),
        (
            "for i in range(N):\n    pass\nelse:\n    pass",
            "`for ... else` is not supported",
            3,
            1,
        ),
        ("else:\n    pass", "`else` without a matching `if`", 1, 1),
        ("x = 1\nelif c:\n    pass", "`elif` without a matching `if`", 2, 1),
        ("for i, j in z:\n    pass", "only a single loop variable", 1, 5),
        ("for a[i] in z:\n    pass", "loop variable must be a plain name", 1, 5),
        ("f(x) = 3", "cannot assign to a function call", 1, 1),
        ("1 = x", "cannot assign to a literal", 1, 1),
        ("a + b = x", "cannot assign to an expression", 1, 1),
        ("a, b += 1", "cannot use augmented assignment on a tuple", 1, 1),
    ];
    for &(src, msg, l, c) in cases {
        assert_err(src, msg, l, c);
    }
}

#[test]
fn unsupported_expressions() {
    let cases: &[(&str, &str, usize, usize)] = &[
        ("f = lambda y: y", "`lambda` expressions are not supported", 1, 5),
        ("[a, b] = c", "cannot assign to a list display", 1, 1),
        ("x = [i for i in range(N)]", "list comprehensions are not supported", 1, 5),
        ("x = sum(a[i] for i in range(N))", "generator expressions are not supported", 1, 9),
        ("x = (a[i] for i in range(N))", "generator expressions are not supported", 1, 5),
        ("x = {1: 2}", "dict and set literals", 1, 5),
        ("x = {a, b}", "dict and set literals", 1, 5),
        ("x = f(*args)", "argument unpacking", 1, 7),
        ("x = f(**kw)", "argument unpacking", 1, 7),
        ("x = *a, b", "starred expressions", 1, 5),
        ("if (n := 3) > 0:\n    pass", "assignment expressions (`:=`)", 1, 5),
        ("x = f'{a'", "f-string: expecting '}'", 1, 5),
        ("x = b'abc'", "bytes literals are not supported", 1, 5),
        ("x = a[...]", "Ellipsis", 1, 7),
        ("x = 0x1j", "invalid imaginary literal", 1, 5),
        ("x = a in b", "the `in` operator is not supported", 1, 7),
        ("x = a not in b", "the `not in` operator", 1, 7),
        ("x = a is None", "the `is` operator", 1, 7),
        ("x = a is not None", "the `is not` operator", 1, 7),
        ("x = f(a=1, b)", "positional argument follows keyword argument", 1, 12),
        ("x = 9223372036854775808", "does not fit in 64 bits", 1, 5),
        ("x = 0x1_0000_0000_0000_0000", "does not fit in 64 bits", 1, 5),
        ("x = 007", "leading zeros", 1, 5),
    ];
    for &(src, msg, l, c) in cases {
        assert_err(src, msg, l, c);
    }
}

#[test]
fn keywords_used_as_names() {
    let cases: &[(&str, usize, usize)] = &[
        ("class = 1", 1, 1),
        ("x = a.if", 1, 7),
        ("x = f(lambda=1)", 1, 7),
        ("def = 3", 1, 1),
        ("x = g(a, for)", 1, 10),
        ("x = return", 1, 5),
    ];
    for &(src, l, c) in cases {
        let d = err(src);
        assert!(
            d.message.contains("is a keyword") || d.message.contains("invalid syntax") || d.message.contains("lambda"),
            "for {src:?}: {}",
            d.render()
        );
        assert_eq!(body_loc(&d), (l, c), "for {src:?}: {}", d.render());
    }
    assert_err("class = 1", "`class` is a keyword and cannot be used as a name", 1, 1);
    assert_err("x = a.if", "`if` is a keyword and cannot be used as a name", 1, 7);
}

#[test]
fn generic_syntax_errors() {
    assert_err("x = (1 +", "`(` was never closed", 1, 5);
    assert_err("x = f(a[1, 2)", "unexpected `)`", 1, 13);
    assert_err("x = 1 +  # comment", "unexpected end of line", 1, 8);
    assert_err("x = a +* b", "invalid syntax", 1, 8);
    assert_err("x = a b", "invalid syntax: unexpected `b`", 1, 7);
    assert_err("x = 1 if c", "unexpected end of line", 1, 11);
    assert_err("if x\n    pass", "invalid syntax", 1, 5);
    assert_err("x = 'abc", "invalid syntax", 1, 5);
    let d = err("x = a +");
    assert!(d.notes.iter().any(|n| n.contains("expected an expression")), "{}", d.render());
}

#[test]
fn function_header_errors() {
    let f = |header: &str| {
        let file = SourceFile::new("t.py", format!("import appy\n@appy.jit\n{header}\n    pass\n"));
        parse_function(&file, "f").unwrap_err()
    };
    let cases = [
        ("def f(a, *args):", "`*args` parameters are not supported", 10),
        ("def f(a, **kw):", "`**kw` parameters are not supported", 10),
        ("def f(a)", "invalid syntax", 9),
    ];
    for (header, msg, col) in cases {
        let d = f(header);
        assert!(d.message.contains(msg), "for {header}: {}", d.render());
        assert_eq!(d.location().map(|(_, l, c)| (l, c)), Some((3, col)), "for {header}: {}", d.render());
    }
    let file = SourceFile::new("t.py", "import appy\n@appy.jit(1)\ndef f(a):\n    pass\n");
    let d = parse_function(&file, "f").unwrap_err();
    assert!(d.message.contains("options must be keyword arguments"), "{}", d.render());
}

#[test]
fn indentation_errors() {
    assert_err("x = 1\n  y = 2", "unexpected indent", 2, 3);
    assert_err(
        "for i in range(N):\n        x = 1\n    y = 2",
        "unindent does not match any outer indentation level",
        3,
        5,
    );
    assert_err(
        "if c:\n    x = 1\n  y = 2",
        "unindent does not match any outer indentation level",
        3,
        3,
    );
    assert_err(
        "for i in range(N):\nx = 1",
        "expected an indented block after `for` statement",
        1,
        1,
    );
    assert_err("if c:\n    pass\nelse:", "expected an indented block after `else` statement", 3, 1);
    assert_err("if c: x = 1\n    y = 2", "unexpected indent", 2, 5);
    // The body of the function may not be empty.
    let file = SourceFile::new("t.py", "import appy\n@appy.jit\ndef f(a):\n\n# only a comment\n");
    let d = parse_function(&file, "f").unwrap_err();
    assert!(
        d.message.contains("expected an indented block after function definition"),
        "{}",
        d.render()
    );
    assert_eq!(d.location().map(|(_, l, c)| (l, c)), Some((3, 1)));
    // Tabs and spaces mixed inconsistently.
    let file = SourceFile::new("t.py", "import appy\n@appy.jit\ndef f(a):\n\tx = 1\n        y = 2\n");
    let d = parse_function(&file, "f").unwrap_err();
    assert!(d.message.contains("inconsistent use of tabs and spaces"), "{}", d.render());
    assert_eq!(d.location().map(|(_, l, _)| l), Some(5));
    // Too deep.
    let mut src = String::new();
    for d in 0..120 {
        src.push_str(&format!("{}if c:\n", " ".repeat(d)));
    }
    src.push_str(&format!("{}pass\n", " ".repeat(120)));
    assert!(err(&src).message.contains("too many levels of indentation"));
}

#[test]
fn pragma_errors() {
    let cases: &[(&str, &str, usize, usize)] = &[
        (
            "#pragma parallel fr\nfor i in range(N):\n    pass",
            "unknown pragma `parallel fr`; expected one of: parallel for",
            1,
            1,
        ),
        ("#pragma\nx = 1", "empty pragma; expected one of", 1, 1),
        ("#pragma omp parallel for\nx = 1", "unknown pragma `omp parallel for`", 1, 1),
        (
            "#pragma parallel for private(x)\nx = 1",
            "unknown clause `private` in `#pragma parallel for`",
            1,
            22,
        ),
        ("#pragma parallel for simd foo\nx = 1", "unknown clause `foo`", 1, 27),
        ("#pragma parallel for shared(a,\nx = 1", "unterminated `shared(` clause", 1, 22),
        (
            "#pragma parallel for shared(1)\nx = 1",
            "expected a variable name in `shared(...)`, found `1`",
            1,
            29,
        ),
        ("#pragma parallel for shared\nx = 1", "expected `(` after `shared`", 1, 22),
        ("#pragma simd extra\nx = 1", "unexpected `extra` after `#pragma simd`", 1, 14),
        ("#pragma atomic now\nx = 1", "unexpected `now` after `#pragma atomic`", 1, 16),
        (
            "for i in range(N):\n    x = 1\n    #pragma simd\ny = 1",
            "pragma is not followed by a statement",
            3,
            5,
        ),
        ("x = 1\n#pragma simd", "pragma is not followed by a statement", 2, 1),
        ("#pragma simd\n#pragma atomic\nx = 1", "a statement can have only one pragma", 2, 1),
        (
            "if c:\n    pass\n#pragma simd\nelse:\n    pass",
            "pragma is not followed by a statement",
            3,
            1,
        ),
        ("#pragma :N=>paralel\nx = 1", "unknown tensor property `paralel`", 1, 13),
        ("#pragma :N=>\nx = 1", "expected a property after `=>`", 1, 13),
        ("#pragma N=>parallel\nx = 1", "expected a slice `lo:hi` before `=>`", 1, 9),
        ("#pragma 1:2:3=>parallel\nx = 1", "expected a slice `lo:hi` before `=>`", 1, 9),
        ("#pragma :N=>parallel :M\nx = 1", "expected `=>` in tensor pragma entry `:M`", 1, 22),
        ("#pragma :N=>reduce(avg:s)\nx = 1", "unknown reduction operator `avg`", 1, 20),
        ("#pragma :N=>reduce(sum)\nx = 1", "expected `op:var`", 1, 20),
        ("#pragma :N=>reduce\nx = 1", "expected `reduce(op:var)`", 1, 13),
        ("#pragma :N=>le(x)\nx = 1", "expected an integer in `le(...)`", 1, 16),
        ("#pragma :N=>parallel(2)\nx = 1", "`parallel` takes no arguments", 1, 13),
        ("#pragma :N+=>parallel\nx = 1", "unexpected end of line", 1, 12),
        ("#pragma 1:M-=>parallel\nx = 1", "unexpected end of line", 1, 13),
    ];
    for &(src, msg, l, c) in cases {
        assert_err(src, msg, l, c);
    }
}

#[test]
fn missing_or_undecorated_functions() {
    let file = SourceFile::new(
        "k.py",
        "import appy\n\ndef helper(x):\n    return x\n\n@appy.jit\ndef a(x):\n    pass\n\n@appy.jit()\ndef b(x):\n    pass\n",
    );
    let d = parse_function(&file, "nope").unwrap_err();
    assert!(
        d.message.contains("no function named `nope` decorated with `@appy.jit`"),
        "{}",
        d.render()
    );
    assert!(d.message.ends_with("; jitted functions: a, b"), "{}", d.render());
    assert!(d.render().starts_with("k.py: error: no function named"), "{}", d.render());
    let d = parse_function(&file, "helper").unwrap_err();
    assert!(
        d.message
            .contains("`helper` is not decorated with `@appy.jit` (jitted functions: a, b)"),
        "{}",
        d.render()
    );
    assert_eq!(d.location(), Some(("k.py".to_string(), 3, 5)));
    let file = SourceFile::new("k.py", "x = 1\n");
    let d = parse_function(&file, "f").unwrap_err();
    assert!(d.message.contains("the file has no `@appy.jit` functions"), "{}", d.render());
    assert!(jit_functions(&file).is_empty());
}

#[test]
fn rendered_error_points_at_the_construct() {
    let d = err("for i in range(N):\n    with x:\n        pass");
    let r = d.render();
    assert!(
        r.starts_with("t.py:7:9: error: `with` statements are not supported in APPy functions\n"),
        "{r}"
    );
    assert!(r.contains("    7 |         with x:\n      |         ^^^^\n"), "{r}");
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    for n in [40, 99, 150, 5000] {
        let src = format!("x = {}a{}", "(".repeat(n), ")".repeat(n));
        let file = file_with_body(&src);
        let r = parse_function(&file, "f");
        if n < 100 {
            assert!(r.is_ok(), "{n}: {}", r.unwrap_err().render());
        } else {
            assert!(r.unwrap_err().message.contains("nested too deeply"));
        }
        let src = format!("x = {}a", "-".repeat(n));
        let _ = parse_function(&file_with_body(&src), "f");
        let src = format!("x = {}a", "not ".repeat(n));
        let _ = parse_function(&file_with_body(&src), "f");
        let src = format!("x = a{}", "[b".repeat(n));
        let _ = parse_function(&file_with_body(&src), "f");
        let src = format!("x = {}", vec!["a"; n].join("**"));
        let _ = parse_function(&file_with_body(&src), "f");
        let src = format!("x = {}b", "a if c else ".repeat(n));
        let _ = parse_function(&file_with_body(&src), "f");
    }
}
