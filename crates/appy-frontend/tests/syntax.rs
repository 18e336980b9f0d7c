//! Statements, expressions, precedence, spans and indentation.

mod util;

use appy_frontend::ast::*;
use appy_frontend::parse_function;
use appy_ir::diag::SourceFile;
use util::*;

#[track_caller]
fn check_body(src: &str, expected: &str) {
    assert_eq!(stmts_sx(&body(src)), expected, "for:\n{src}");
}

#[test]
fn assignments() {
    check_body("x = 1", "x = 1\n");
    check_body("a, b = c, 1", "(tuple a b) = (tuple c 1)\n");
    check_body("(a, b) = c", "(tuple a b) = c\n");
}

#[test]
fn chained_and_tuple_assignments() {
    check_body("a = b = 2.5", "a = b = 2.5\n");
    check_body("a, = c", "(tuple a) = c\n");
    check_body("a[i, j], b.x = (1, 2)", "(tuple a[i, j] b.x) = (tuple 1 2)\n");
    check_body("x = a, b,", "x = (tuple a b)\n");
    check_body("x = ()", "x = (tuple )\n");
}

#[test]
fn augmented_assignments() {
    for (op, sym) in [
        ("+=", "+"),
        ("-=", "-"),
        ("*=", "*"),
        ("/=", "/"),
        ("//=", "//"),
        ("%=", "%"),
        ("**=", "**"),
        ("&=", "&"),
        ("|=", "|"),
        ("^=", "^"),
        ("<<=", "<<"),
        (">>=", ">>"),
        ("@=", "@"),
    ] {
        check_body(&format!("a[i] {op} b * 2"), &format!("a[i] {sym}= (* b 2)\n"));
        check_body(&format!("s{op}1"), &format!("s {sym}= 1\n"));
    }
}

#[test]
fn returns_pass_and_expression_statements() {
    check_body("return", "return\n");
    check_body("return a", "return a\n");
    check_body("return a, b", "return (tuple a b)\n");
    check_body("return (a + b)", "return (+ a b)\n");
    check_body("pass", "pass\n");
    check_body("print(a, end='')", "(call print a end=\"\")\n");
    check_body("\"\"\"Doc\nstring.\"\"\"\npass", "\"Doc\\n    string.\"\npass\n");
    check_body("x = 1; y = 2;", "x = 1\ny = 2\n");
    check_body("x = 1 ; pass ; return x", "x = 1\npass\nreturn x\n");
}

#[test]
fn for_and_if_statements() {
    check_body(
        "for i in range(N):\n    a[i] = 0\nreturn",
        "for i in (call range N)\n  a[i] = 0\nreturn\n",
    );
    check_body(
        "if a < b:\n    x = 1\nelif a == b:\n    x = 2\nelif c:\n    x = 3\nelse:\n    x = 4",
        "if (cmp a < b)\n  x = 1\nelse\n  if (cmp a == b)\n    x = 2\n  else\n    if c\n      x = 3\n    else\n      x = 4\n",
    );
    check_body("if a:\n    pass\nx = 1", "if a\n  pass\nx = 1\n");
    check_body(
        "if a:\n    pass\nif b:\n    pass\nelse:\n    pass",
        "if a\n  pass\nif b\n  pass\nelse\n  pass\n",
    );
    check_body("for i in prange(0, N, 2):\n    pass", "for i in (call prange 0 N 2)\n  pass\n");
}

#[test]
fn elif_statement_span_is_its_header() {
    let file = file_with_body("if a:\n    pass\nelif b:\n    pass");
    let p = parse_function(&file, "f").unwrap();
    let StmtKind::If { orelse, .. } = &p.function.body[0].kind else {
        panic!()
    };
    assert_eq!(&file.text()[orelse[0].span.start..orelse[0].span.end], "elif b");
    assert_eq!(&file.text()[p.function.body[0].span.start..p.function.body[0].span.end], "if a");
}

#[test]
fn inline_bodies() {
    check_body("if c: x = 1", "if c\n  x = 1\n");
    check_body("if c: x = 1; y = 2\nelse: pass", "if c\n  x = 1\n  y = 2\nelse\n  pass\n");
    check_body("for i in range(N): a[i] = 0", "for i in (call range N)\n  a[i] = 0\n");
    let file = SourceFile::new("t.py", "import appy\n@appy.jit\ndef f(a): return a + 1\n");
    let p = parse_function(&file, "f").unwrap();
    assert_eq!(stmts_sx(&p.function.body), "return (+ a 1)\n");
}

#[test]
fn precedence() {
    let cases = [
        ("a or b and c", "(or a (and b c))"),
        ("a or b or c", "(or a b c)"),
        ("a and b and not c", "(and a b (not c))"),
        ("not a == b", "(not (cmp a == b))"),
        ("not not a", "(not (not a))"),
        ("a < b <= c != d", "(cmp a < b <= c != d)"),
        ("a > b | c", "(cmp a > (| b c))"),
        ("a >= b == c", "(cmp a >= b == c)"),
        ("a | b ^ c & d", "(| a (^ b (& c d)))"),
        ("a & b << 1", "(& a (<< b 1))"),
        ("a << 1 + 2", "(<< a (+ 1 2))"),
        ("a >> b >> c", "(>> (>> a b) c)"),
        ("a + b * c", "(+ a (* b c))"),
        ("a - b - c", "(- (- a b) c)"),
        ("a * b / c // d % e @ f", "(@ (% (// (/ (* a b) c) d) e) f)"),
        ("-a * b", "(* (neg a) b)"),
        ("-x ** 2", "(neg (** x 2))"),
        ("2 ** -1", "(** 2 (neg 1))"),
        ("a ** b ** c", "(** a (** b c))"),
        ("-a ** -b ** c", "(neg (** a (neg (** b c))))"),
        ("~a + +b", "(+ (inv a) (pos b))"),
        ("- - a", "(neg (neg a))"),
        ("(a + b) * c", "(* (+ a b) c)"),
        ("a if c else b", "(if c a b)"),
        ("a if c else b if d else e", "(if c a (if d b e))"),
        ("a + 1 if c > 0 or d else -b", "(if (or (cmp c > 0) d) (+ a 1) (neg b))"),
        ("f(x)[i].y ** 2", "(** (call f x)[i].y 2)"),
        ("a[i][j]", "a[i][j]"),
        ("a.b.c(d)", "(call a.b.c d)"),
        ("np.exp(a[i, :N] - m) / s", "(/ (call np.exp (- a[i, :N] m)) s)"),
        ("max(a, b, key=c, axis=0)", "(call max a b key=c axis=0)"),
        ("f()", "(call f)"),
        ("f(a,)", "(call f a)"),
        ("(a)", "a"),
        ("(a,)", "(tuple a)"),
        ("((a, b), c)", "(tuple (tuple a b) c)"),
        ("x[1 + 2]", "x[(+ 1 2)]"),
    ];
    for (src, want) in cases {
        assert_eq!(sx(&expr(src)), want, "for {src}");
    }
}

#[test]
fn subscripts_and_slices() {
    let cases = [
        ("a[i]", "a[i]"),
        ("a[i, j]", "a[i, j]"),
        ("a[i,]", "a[i]"),
        ("a[:]", "a[:]"),
        ("a[1:]", "a[1:]"),
        ("a[:N]", "a[:N]"),
        ("a[1:N-1]", "a[1:(- N 1)]"),
        ("a[::2]", "a[::2]"),
        ("a[1::2]", "a[1::2]"),
        ("a[:N:]", "a[:N]"),
        ("a[1:N:k]", "a[1:N:k]"),
        ("a[:, None]", "a[:, None]"),
        ("a[None, :]", "a[None, :]"),
        ("a[i][j:k]", "a[i][j:k]"),
        ("a[-1]", "a[(neg 1)]"),
        ("a[i if c else j]", "a[(if c i j)]"),
    ];
    for (src, want) in cases {
        assert_eq!(sx(&expr(src)), want, "for {src}");
    }
    let e = expr("a[1:2, None]");
    let ExprKind::Subscript { indices, .. } = &e.kind else { panic!() };
    assert!(matches!(indices[0], Index::Slice { .. }));
    assert!(matches!(indices[1], Index::NewAxis(_)));
    // `a[i][j]` is a subscript of a subscript.
    let e = expr("a[i][j]");
    let ExprKind::Subscript { value, .. } = &e.kind else { panic!() };
    assert!(matches!(value.kind, ExprKind::Subscript { .. }));
}

#[test]
fn literals() {
    let ints = [
        ("0", 0),
        ("42", 42),
        ("1_000_000", 1_000_000),
        ("0x1F", 31),
        ("0XfF", 255),
        ("0o17", 15),
        ("0b101", 5),
        ("00", 0),
    ];
    for (src, v) in ints {
        assert_eq!(expr(src).kind, ExprKind::Int(v), "for {src}");
    }
    assert_eq!(expr("9223372036854775807").kind, ExprKind::Int(i64::MAX));
    let floats = [
        ("1.0", 1.0),
        ("1.", 1.0),
        (".5", 0.5),
        ("1e-3", 1e-3),
        ("1E3", 1e3),
        ("1_000.0", 1000.0),
        ("2.5e+2", 250.0),
        ("0.2", 0.2),
    ];
    for (src, v) in floats {
        assert_eq!(expr(src).kind, ExprKind::Float(v), "for {src}");
    }
    assert_eq!(expr("True").kind, ExprKind::Bool(true));
    assert_eq!(expr("False").kind, ExprKind::Bool(false));
    assert_eq!(expr("None").kind, ExprKind::None);
    let strs = [
        ("'inf'", "inf"),
        ("\"-inf\"", "-inf"),
        ("'a\\'b'", "a'b"),
        ("'tab\\there'", "tab\there"),
        ("'x\\\\y'", "x\\y"),
        ("r'\\n'", "\\n"),
        ("'a' \"b\"", "ab"),
        ("'''multi\nline'''", "multi\n    line"),
        ("\"\"\"q\"uote\"\"\"", "q\"uote"),
        ("u'x'", "x"),
        ("'#not a comment'", "#not a comment"),
    ];
    for (src, v) in strs {
        assert_eq!(expr(src).kind, ExprKind::Str(v.to_string()), "for {src}");
    }
    assert_eq!(sx(&expr("float('inf')")), "(call float \"inf\")");
}

#[test]
fn names_may_start_with_keywords() {
    assert_eq!(
        sx(&expr("format + iff + notx + in_ + None_ + returned")),
        "(+ (+ (+ (+ (+ format iff) notx) in_) None_) returned)"
    );
    assert_eq!(sx(&expr("αβ + _x1")), "(+ αβ _x1)");
}

#[test]
fn spans_cover_the_source_text() {
    let src = "y[i] += A_val[j] * x[col]\nz = -(a + b) ** 2 if c else np.float32(3)";
    let file = file_with_body(src);
    let p = parse_function(&file, "f").unwrap();
    let t = file.text();
    let at = |s: Span| &t[s.start..s.end];
    let StmtKind::AugAssign { target, value, .. } = &p.function.body[0].kind else {
        panic!()
    };
    assert_eq!(at(p.function.body[0].span), "y[i] += A_val[j] * x[col]");
    assert_eq!(at(target.span), "y[i]");
    assert_eq!(at(value.span), "A_val[j] * x[col]");
    assert_eq!(file.line_col(value.span.start), (6, 13));
    let StmtKind::Assign { value, .. } = &p.function.body[1].kind else {
        panic!()
    };
    assert_eq!(at(value.span), "-(a + b) ** 2 if c else np.float32(3)");
    let ExprKind::IfExp { then, orelse, cond } = &value.kind else {
        panic!()
    };
    assert_eq!(at(then.span), "-(a + b) ** 2");
    assert_eq!(at(cond.span), "c");
    assert_eq!(at(orelse.span), "np.float32(3)");
    let ExprKind::Unary { operand, .. } = &then.kind else { panic!() };
    assert_eq!(at(operand.span), "(a + b) ** 2");
    let ExprKind::Call { func, .. } = &orelse.kind else { panic!() };
    let ExprKind::Attribute { attr, .. } = &func.kind else { panic!() };
    assert_eq!(at(attr.span), "float32");
    assert_eq!(file.line_col(attr.span.start), (7, 36));
    // Function name, params and span.
    assert_eq!(at(p.function.name.span), "f");
    assert_eq!(
        p.function.params.iter().map(|i| at(i.span)).collect::<Vec<_>>(),
        ["a", "b", "c", "N"]
    );
    assert!(at(p.function.span).starts_with("def f(a, b, c, N):"));
    assert!(at(p.function.span).ends_with("np.float32(3)"));
}

#[test]
fn slice_spans() {
    let file = file_with_body("x = a[1:N, :, ::2]");
    let p = parse_function(&file, "f").unwrap();
    let StmtKind::Assign { value, .. } = &p.function.body[0].kind else {
        panic!()
    };
    let ExprKind::Subscript { indices, .. } = &value.kind else {
        panic!()
    };
    let texts: Vec<&str> = indices
        .iter()
        .map(|i| match i {
            Index::Slice { span, .. } => &file.text()[span.start..span.end],
            _ => panic!(),
        })
        .collect();
    assert_eq!(texts, ["1:N", ":", "::2"]);
}

#[test]
fn nested_blocks_and_multi_level_dedent() {
    let src = "for i in range(N):
    for j in range(N):
        if a[i, j] > 0:
            b[i, j] = 1
        else:
            for k in range(N):
                c[k] += 1
x = 1
for i in range(N):
    if c:
        if d:
            pass
    y = 2
";
    check_body(
        src,
        "for i in (call range N)
  for j in (call range N)
    if (cmp a[i, j] > 0)
      b[i, j] = 1
    else
      for k in (call range N)
        c[k] += 1
x = 1
for i in (call range N)
  if c
    if d
      pass
  y = 2
",
    );
}

#[test]
fn comments_and_blank_lines_inside_blocks() {
    let src = "for i in range(N):

    # a comment

# a comment at column 0
        # a deeper comment
    x = 1  # trailing

    y = 2
# end
z = 3";
    check_body(src, "for i in (call range N)\n  x = 1\n  y = 2\nz = 3\n");
}

#[test]
fn tabs_indentation() {
    let text = "import appy\n@appy.jit\ndef f(a, N):\n\tfor i in range(N):\n\t\ta[i] = 0\n\treturn a\n";
    let p = parse_function(&SourceFile::new("t.py", text), "f").unwrap();
    assert_eq!(stmts_sx(&p.function.body), "for i in (call range N)\n  a[i] = 0\nreturn a\n");
    // Two-space indentation works as well.
    let text = "import appy\n@appy.jit\ndef f(a, N):\n  for i in range(N):\n    a[i] = 0\n  return a\n";
    let p = parse_function(&SourceFile::new("t.py", text), "f").unwrap();
    assert_eq!(stmts_sx(&p.function.body), "for i in (call range N)\n  a[i] = 0\nreturn a\n");
}

#[test]
fn continuation_lines() {
    let src =
        "x = (a +\n     b) * \\\n    c\ny = f(a,\n  # comment inside\n      b=[1][0] if 0 else 2)\nz = a[1,\n2]\nif (a and\nb):\n    pass";
    let stmts = body(src.replace("[1][0] if 0 else 2", "c").as_str());
    assert_eq!(
        stmts_sx(&stmts),
        "x = (* (+ a b) c)\ny = (call f a b=c)\nz = a[1, 2]\nif (and a b)\n  pass\n"
    );
    // Spans of the continued line map to the right physical lines.
    let file = file_with_body("x = (a +\n     b)");
    let p = parse_function(&file, "f").unwrap();
    let StmtKind::Assign { value, .. } = &p.function.body[0].kind else {
        panic!()
    };
    let ExprKind::Binary { rhs, .. } = &value.kind else { panic!() };
    assert_eq!(file.line_col(rhs.span.start), (7, 10));
}

#[test]
fn multi_line_header_and_docstring() {
    let text = "import appy\n\n@appy.jit(\n    auto_simd=True,\n)\ndef f(a,\n      b,\n      N):\n    '''Docstring\n\n  with odd indentation\n'''\n    return a\n";
    let p = parse_function(&SourceFile::new("t.py", text), "f").unwrap();
    assert_eq!(p.function.params.len(), 3);
    assert_eq!(p.function.options.len(), 1);
    assert_eq!(p.function.options[0].0.name, "auto_simd");
    assert_eq!(p.function.options[0].1.kind, ExprKind::Bool(true));
    assert_eq!(
        stmts_sx(&p.function.body),
        "\"Docstring\\n\\n  with odd indentation\\n\"\nreturn a\n"
    );
}

#[test]
fn crlf_line_endings() {
    let text = "import appy\r\n@appy.jit\r\ndef f(a, N):\r\n    for i in range(N):\r\n        a[i] = 0\r\n\r\n    return a\r\n";
    let p = parse_function(&SourceFile::new("t.py", text), "f").unwrap();
    assert_eq!(stmts_sx(&p.function.body), "for i in (call range N)\n  a[i] = 0\nreturn a\n");
}

#[test]
fn pragmas_attach_to_the_next_statement() {
    let src = "#pragma parallel for
for i in range(N):
    # an ordinary comment
    #pragma simd
    for j in range(N):
        #pragma atomic
        s[0] += a[j]
    # pragma sequential for
    for k in range(N):
        pass
";
    let stmts = body(src);
    assert_eq!(
        stmts_sx(&stmts),
        "for i in (call range N) #parallel for\n  for j in (call range N) #simd\n    s[0] += a[j] #atomic\n  for k in (call range N) #sequential for\n    pass\n"
    );
    assert_eq!(
        stmts[0].pragma.as_ref().unwrap().kind,
        PragmaKind::ParallelFor {
            simd: false,
            shared: vec![],
            transforms: vec![]
        }
    );
    // `#pragmatic` and other comments are not pragmas.
    let stmts = body("#pragmatic comment\nx = 1\n#  pragma simd\nfor i in range(N):\n    pass");
    assert!(stmts[0].pragma.is_none());
    assert_eq!(stmts[1].pragma.as_ref().unwrap().kind, PragmaKind::Simd);
}

#[test]
fn pragma_forms() {
    let file = file_with_body("#pragma parallel for shared(a, bb) simd\nfor i in range(N):\n    pass");
    let p = parse_function(&file, "f").unwrap();
    let pragma = p.function.body[0].pragma.as_ref().unwrap();
    let PragmaKind::ParallelFor { simd, shared, .. } = &pragma.kind else {
        panic!()
    };
    assert!(*simd);
    assert_eq!(shared.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(), ["a", "bb"]);
    assert_eq!(&file.text()[shared[1].span.start..shared[1].span.end], "bb");
    assert_eq!(pragma.text, "parallel for shared(a, bb) simd");
    assert_eq!(
        &file.text()[pragma.span.start..pragma.span.end],
        "#pragma parallel for shared(a, bb) simd"
    );

    let kind = |src: &str| body(&format!("#pragma {src}\nx = 1"))[0].pragma.clone().unwrap().kind;
    assert_eq!(
        kind("parallel for simd"),
        PragmaKind::ParallelFor {
            simd: true,
            shared: vec![],
            transforms: vec![]
        }
    );
    assert_eq!(kind("simd"), PragmaKind::Simd);
    assert_eq!(kind("sequential for"), PragmaKind::SequentialFor);
    assert_eq!(kind("atomic"), PragmaKind::Atomic);
    assert_eq!(kind("  atomic  "), PragmaKind::Atomic);
}

#[test]
fn tensor_pragmas() {
    let file = file_with_body("#pragma 1:M-1=>parallel,simd :N=>reduce(max:m) 0:=>le(128) :=>reduction(+: s)\nx = 1");
    let p = parse_function(&file, "f").unwrap();
    let t = file.text();
    let PragmaKind::Tensor(dims) = &p.function.body[0].pragma.as_ref().unwrap().kind else {
        panic!()
    };
    assert_eq!(dims.len(), 4);
    assert_eq!(dims[0].text, "1:M-1");
    assert_eq!(dims[0].props, [TensorProp::Parallel, TensorProp::Simd]);
    assert_eq!(sx(dims[0].lower.as_ref().unwrap()), "1");
    let upper = dims[0].upper.as_ref().unwrap();
    assert_eq!(sx(upper), "(- M 1)");
    assert_eq!(&t[upper.span.start..upper.span.end], "M-1");
    assert_eq!(&t[dims[0].span.start..dims[0].span.end], "1:M-1=>parallel,simd");
    assert_eq!(dims[1].text, ":N");
    assert!(dims[1].lower.is_none());
    let TensorProp::Reduce { op, var } = &dims[1].props[0] else {
        panic!()
    };
    assert_eq!((op.as_str(), var.name.as_str()), ("max", "m"));
    assert_eq!(&t[var.span.start..var.span.end], "m");
    assert_eq!(dims[2].props, [TensorProp::Le(128)]);
    assert!(dims[2].upper.is_none());
    assert!(dims[3].lower.is_none() && dims[3].upper.is_none());
    let TensorProp::Reduce { op, var } = &dims[3].props[0] else {
        panic!()
    };
    assert_eq!((op.as_str(), var.name.as_str()), ("+", "s"));
    // Spaces inside bounds and around commas.
    let stmts = body("#pragma 1 : N - 2 => parallel, simd\nx = 1");
    let PragmaKind::Tensor(dims) = &stmts[0].pragma.as_ref().unwrap().kind else {
        panic!()
    };
    assert_eq!(dims[0].text, "1:N-2");
    assert_eq!(sx(dims[0].upper.as_ref().unwrap()), "(- N 2)");
    assert_eq!(dims[0].props, [TensorProp::Parallel, TensorProp::Simd]);
}

#[test]
fn pragma_on_first_of_several_statements() {
    let stmts = body("#pragma atomic\ns[0] += 1; t = 2");
    assert!(stmts[0].pragma.is_some());
    assert!(stmts[1].pragma.is_none());
}
