//! Tests of the analysis ([`super`]): variable types and loop plans.

use super::*;
use crate::sema::Reduction;
use crate::sema::plan::AutoSimd;
use crate::sema::simd::NotVectorizable;
use appy_ir::types::{DType, parse_signature};

/// Analyses `def k(<params>): <body>` for the signature `sig`.
fn analyze_src(params: &str, sig: &str, body: &str) -> (SourceFile, Analysis) {
    let text = format!("import math\nimport numpy as np\nimport appy\nfrom appy import prange\n\n\n@appy.jit\ndef k({params}):\n{body}");
    let file = SourceFile::new("t.py", &text);
    let program = crate::parse_function(&file, "k").unwrap_or_else(|e| panic!("{}", e.render()));
    let f = crate::sema::desugar::desugar(&file, &program).unwrap().function;
    let args = parse_signature(sig).unwrap();
    let a = analyze(&file, &f, &args, &Imports::new(&program.imports));
    (file, a)
}

fn function_var(a: &Analysis, name: &str) -> Option<STy> {
    a.slot_type(FUNCTION_SCOPE, name)
}

const F32: STy = STy::strong(DType::F32);
const F64: STy = STy::strong(DType::F64);

#[test]
fn int_accumulator_of_float32_elements_is_float32() {
    let (_, a) = analyze_src(
        "a, N",
        "f32[:],int",
        "    s = 0\n    for i in range(N):\n        s += a[i]\n    return s\n",
    );
    assert_eq!(function_var(&a, "s"), Some(F32));
}

#[test]
fn python_float_with_float32_stays_float32() {
    // NEP 50: a Python float does not widen a float32.
    let (_, a) = analyze_src(
        "a, N",
        "f32[:],int",
        "    s = 0.0\n    for i in range(N):\n        s += a[i]\n    return s\n",
    );
    assert_eq!(function_var(&a, "s"), Some(F32));
}

#[test]
fn widened_in_a_nested_loop_after_its_first_use() {
    // `t` reads `s` before the nested loop widens it: both are float64 from the start.
    let body =
        "    s = 0\n    t = s + 1\n    for i in range(N):\n        for j in range(N):\n            s += a[i, j] * 0.5\n    return s + t\n";
    let (_, a) = analyze_src("a, N", "f64[:,:],int", body);
    assert_eq!(function_var(&a, "s"), Some(F64));
    assert_eq!(function_var(&a, "t"), Some(F64));
}

#[test]
fn unwidened_variables_keep_their_type() {
    let body = "    n = N + 1\n    flag = N > 2\n    x = 1.5\n    for i in range(n):\n        a[i] = x\n";
    let (_, a) = analyze_src("a, N", "f64[:],int", body);
    assert_eq!(function_var(&a, "n"), Some(STy::INT));
    assert_eq!(function_var(&a, "flag"), Some(STy::BOOL));
    assert_eq!(function_var(&a, "x"), Some(STy::FLOAT));
}

#[test]
fn reassigned_parameter_joins_its_argument_type() {
    let (_, a) = analyze_src("a, x", "f32[:],int", "    x = x * a[0]\n    return x\n");
    assert_eq!(function_var(&a, "x"), Some(F32));
}

#[test]
fn call_results_follow_the_catalogue() {
    let body = "    m = np.sum(a)\n    n = len(a)\n    c = np.isnan(b[0])\n    r = math.floor(b[0])\n    e = np.exp(a[0])\n    h = abs(a[0])\n    q = np.mean(a)\n    w = np.float32(n)\n";
    let (_, a) = analyze_src("a, b", "i32[:],f64[:]", body);
    // np.sum of int32 is a NumPy int64 (strong: with a float32 it gives float64).
    assert_eq!(function_var(&a, "m"), Some(STy::strong(DType::I64)));
    assert_eq!(function_var(&a, "n"), Some(STy::INT));
    assert_eq!(function_var(&a, "c"), Some(STy::strong(DType::Bool)));
    assert_eq!(function_var(&a, "r"), Some(STy::INT));
    assert_eq!(function_var(&a, "e"), Some(F64));
    assert_eq!(function_var(&a, "h"), Some(STy::strong(DType::I32)));
    assert_eq!(function_var(&a, "q"), Some(F64));
    assert_eq!(function_var(&a, "w"), Some(F32));
}

#[test]
fn privates_of_two_loops_are_two_variables() {
    let body = "    #pragma parallel for\n    for i in range(N):\n        t = a[i]\n        a[i] = t * t\n    #pragma parallel for\n    for i in range(N):\n        t = b[i]\n        b[i] = t + 1\n";
    let (_, a) = analyze_src("a, b, N", "f32[:],f64[:],int", body);
    assert_eq!(a.slot_type(loop_scope(0), "t"), Some(F32));
    assert_eq!(a.slot_type(loop_scope(1), "t"), Some(F64));
    assert_eq!(function_var(&a, "t"), None);
}

#[test]
fn reduction_updates_count_for_the_variable_outside() {
    let body = "    s = 0\n    #pragma parallel for shared(s)\n    for i in range(N):\n        s += a[i]\n    return s\n";
    let (_, a) = analyze_src("a, N", "f32[:],int", body);
    assert_eq!(function_var(&a, "s"), Some(F32));
    assert_eq!(a.plans[0].reductions, vec![("s".to_string(), Reduction::Sum)]);
}

#[test]
fn what_it_cannot_type_is_unknown_not_an_error() {
    let (_, a) = analyze_src("a, N", "f64[:],int", "    x = undefined_name\n    x += 1\n    y = 2\n");
    assert_eq!(function_var(&a, "x"), None);
    assert_eq!(function_var(&a, "y"), Some(STy::INT));
}

#[test]
fn prange_detects_a_sum_reduction() {
    let (_, a) = analyze_src(
        "x, N",
        "f64[:],int",
        "    s = 0.0\n    for i in prange(N):\n        s += x[i]\n    return s\n",
    );
    let p = &a.plans[0];
    assert!(p.prange);
    assert_eq!(p.kind, LoopKind::Parallel { simd: false });
    assert_eq!(p.reductions, vec![("s".to_string(), Reduction::Sum)]);
    assert_eq!(p.auto_simd, AutoSimd::Declared);
    assert!(p.error.is_none());
}

#[test]
fn prange_marks_reductions_into_one_element_atomic() {
    // Desugaring marks them (`sema::prange`); the plan lowers the loop's own body.
    let text = "import appy\nfrom appy import prange\n\n\n@appy.jit\ndef k(x, h, N):\n    for i in prange(N):\n        h[0] += x[i]\n";
    let file = SourceFile::new("t.py", text);
    let program = crate::parse_function(&file, "k").unwrap();
    let f = crate::sema::desugar::desugar(&file, &program).unwrap().function;
    let StmtKind::For { body, .. } = &f.body[0].kind else {
        panic!("a loop")
    };
    assert!(matches!(body[0].pragma.as_ref().map(|p| &p.kind), Some(PragmaKind::Atomic)));
    let a = analyze(
        &file,
        &f,
        &parse_signature("f64[:],f64[:],int").unwrap(),
        &Imports::new(&program.imports),
    );
    assert!(a.plans[0].body.is_none());
}

#[test]
fn auto_simd_reasons() {
    let body = "    for i in range(M):\n        a[i, 0] = 0.0\n    #pragma parallel for\n    for i in range(M):\n        for j in range(N):\n            b[i, j] = a[i, j] * 2.0\n        for j in range(1, N):\n            a[i, j] = a[i, j - 1]\n        for j in range(N):\n            b[i, :N] = a[i, :N] * 2.0\n";
    let (file, a) = analyze_src("a, b, M, N", "f64[:,:],f64[:,:],int,int", body);
    let reasons: Vec<&AutoSimd> = a.plans.iter().map(|p| &p.auto_simd).collect();
    assert_eq!(reasons[0], &AutoSimd::NotInParallel);
    assert_eq!(reasons[1], &AutoSimd::Declared);
    assert_eq!(reasons[2], &AutoSimd::Applied);
    assert_eq!(a.plans[2].kind, LoopKind::Simd);
    assert_eq!(reasons[3], &AutoSimd::NotVectorizable(NotVectorizable::Dependence("a".into())));
    assert_eq!(a.plans[3].kind, LoopKind::Sequential);
    // The inner loop holding a tensor statement stays sequential, and says where.
    let AutoSimd::NeedsScalarLoop(sp) = reasons[4] else {
        panic!("{:?}", reasons[4])
    };
    assert_eq!(&file.text()[sp.start..sp.end], "b[i, :N] = a[i, :N] * 2.0");
    assert_eq!(a.plans[4].kind, LoopKind::Sequential);
}

#[test]
fn auto_simd_inside_a_simd_loop_and_of_outer_loops() {
    let body = "    #pragma parallel for\n    for i in range(M):\n        for j in range(N):\n            for k in range(N):\n                b[i, j] += a[j, k]\n";
    let (_, a) = analyze_src("a, b, M, N", "f64[:,:],f64[:,:],int,int", body);
    assert!(matches!(
        a.plans[1].auto_simd,
        AutoSimd::NotVectorizable(NotVectorizable::Statement(_))
    ));
    let body = "    #pragma parallel for\n    for i in range(M):\n        #pragma simd\n        for j in range(N):\n            for k in range(N):\n                b[i, j] = a[j, k]\n";
    let (_, a) = analyze_src("a, b, M, N", "f64[:,:],f64[:,:],int,int", body);
    assert_eq!(a.plans[2].auto_simd, AutoSimd::InsideSimd);
}

#[test]
fn simd_loop_accumulates_element_reductions_in_scalars() {
    let body = "    #pragma parallel for\n    for i in range(M):\n        #pragma simd\n        for j in range(N):\n            y[i] += A[i, j] * x[j]\n";
    let (_, a) = analyze_src("A, x, y, M, N", "f32[:,:],f32[:],f32[:],int,int", body);
    let p = &a.plans[1];
    assert_eq!(p.element_reductions.len(), 1);
    let r = &p.element_reductions[0];
    assert_eq!(r.op, Reduction::Sum);
    assert_eq!(p.reductions, vec![(r.name.clone(), Reduction::Sum)]);
    // The accumulator is a float32 variable of the parallel loop's body.
    assert_eq!(a.slot_type(loop_scope(0), &r.name), Some(F32));
}

#[test]
fn data_sharing_errors_come_with_the_plan() {
    let body = "    s = 0.0\n    #pragma parallel for\n    for i in range(N):\n        s += a[i]\n    return s\n";
    let (_, a) = analyze_src("a, N", "f64[:],int", body);
    let e = a.plans[0].error.as_ref().expect("an error").render();
    assert!(
        e.contains("scalar `s` is defined outside this parallel loop and assigned inside it"),
        "{e}"
    );
    assert!(e.contains("add `shared(s)` to the pragma"), "{e}");
    let body = "    #pragma parallel for shared(s)\n    for i in range(N):\n        s = a[i]\n";
    let (_, a) = analyze_src("a, N", "f64[:],int", body);
    let e = a.plans[0].error.as_ref().expect("an error").render();
    assert!(e.contains("shared variable `s` must be initialised before the loop"), "{e}");
}

#[test]
fn shared_scalar_assigned_plainly_is_a_cell() {
    let body = "    found = -1\n    #pragma parallel for shared(found)\n    for i in range(N):\n        if a[i] > 0:\n            found = i\n    return found\n";
    let (_, a) = analyze_src("a, N", "f64[:],int", body);
    assert_eq!(a.plans[0].cells, vec!["found".to_string()]);
    assert!(a.plans[0].reductions.is_empty());
    assert_eq!(function_var(&a, "found"), Some(STy::INT));
}

#[test]
fn int_powers_follow_pythons_rule() {
    // A negative constant exponent gives a float, a non-negative one an int; a loop
    // variable of `range(n)` is never negative; `**=` follows the same rule.
    let body = "    x = 10 ** -2\n    y = 2 ** 3\n    w = 2 ** -(1 + 1)\n    u = 4\n    u **= -1\n    for j in range(N):\n        a[j] = 2 ** j\n    for j in range(1, N):\n        v = 2 ** (j % 3)\n        a[j] = v\n";
    let (_, a) = analyze_src("a, N", "f64[:],int", body);
    assert_eq!(function_var(&a, "x"), Some(STy::FLOAT));
    assert_eq!(function_var(&a, "y"), Some(STy::INT));
    assert_eq!(function_var(&a, "w"), Some(STy::FLOAT));
    assert_eq!(function_var(&a, "u"), Some(STy::FLOAT));
    assert!(a.nonneg.contains("j"));
    // A start that may be negative, a negative step, or another binding: no claim.
    let (_, a) = analyze_src(
        "a, N, k",
        "f64[:],int,int",
        "    for j in range(k, N):\n        a[0] = 1.0\n    for m in range(N, 0, -1):\n        a[0] = 1.0\n    for n in range(N):\n        a[0] = 1.0\n    n = -1\n",
    );
    assert!(a.nonneg.is_empty(), "{:?}", a.nonneg);
}

#[test]
fn plans_are_found_by_their_loops() {
    // Two loops with the same variable: each plan is found by its loop's span, in any
    // order, and each has its own iname.
    let (_, a) = analyze_src(
        "a, N",
        "f64[:],int",
        "    #pragma parallel for\n    for i in range(N):\n        a[i] = 1.0\n    for i in range(N):\n        a[i] += 2.0\n",
    );
    assert_eq!(a.plans.len(), 2);
    let (second, first) = (a.plans[1].span, a.plans[0].span);
    let (k, p) = a.plan_of(second).expect("the second loop's plan");
    assert_eq!((k, p.kind), (1, LoopKind::Sequential));
    let (k, p) = a.plan_of(first).expect("the first loop's plan");
    assert_eq!((k, p.kind), (0, LoopKind::Parallel { simd: false }));
    assert_ne!(a.plans[0].iname, a.plans[1].iname);
    // A span that is no loop's has no plan.
    assert!(a.plan_of(appy_ir::diag::Span { start: 0, end: 1 }).is_none());
}
