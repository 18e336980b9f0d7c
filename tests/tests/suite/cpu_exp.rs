//! On the CPU, float64 `exp`, `expm1` and `tanh` are computed inline by
//! `appy-cpu-exp`, so the loops that use them are vectorised: the LLVM module the runtime
//! compiles for the softmax example calls no C library function for them and holds the
//! kernel (its split mask), while float32 calls still go to the C library's float64
//! functions (`appy-cpu-wide-math`). Their accuracy: `exp_family` in
//! `tests/cases/math_functions.py`.

use appy_ir::diag::SourceFile;
use appy_ir::types::{DType, parse_signature};
use appy_runtime::HostValue;
use appy_tests::{Rng, root};

fn llvm_text(file: &SourceFile, func: &str, sig: &str) -> String {
    let host = appy_runtime::cpu::host();
    let compiler = appy_compiler::Compiler::new();
    let sig = parse_signature(sig).unwrap();
    let opts = host.options(&Default::default());
    let (llvm, _) = compiler.compile_cpu(file, func, &sig, &opts, &[]).map_err(|d| d.render()).unwrap();
    llvm.to_generic()
}

#[test]
fn float64_exp_is_computed_inline() {
    let file = SourceFile::read(&root().join("examples/softmax.py")).unwrap();
    let text = llvm_text(&file, "softmax", "f64[:,:],f64[:,:],int,int");
    for name in ["@exp", "llvm.intr.exp", "@_appy_wide_exp"] {
        assert!(!text.contains(name), "float64 softmax: {name} in the LLVM module");
    }
    // The kernel: r split into 26-bit halves (the mask clears 27 low bits).
    assert!(text.contains("-134217728"), "float64 softmax: no appy-cpu-exp kernel");
    // float32: the C library's float64 exp, rounded.
    let text32 = llvm_text(&file, "softmax", "f32[:,:],f32[:,:],int,int");
    assert!(text32.contains("@_appy_wide_exp") && !text32.contains("-134217728"));

    // And it computes a softmax.
    let (m, n) = (3, 777);
    let mut rng = Rng::new(7);
    let a = rng.array(DType::F64, &[m, n], -30.0, 30.0);
    let mut args = vec![
        a.clone(),
        rng.array(DType::F64, &[m, n], 0.0, 0.0),
        HostValue::Int(m as i64, DType::I64, true),
        HostValue::Int(n as i64, DType::I64, true),
    ];
    let compiler = appy_compiler::Compiler::new();
    appy_runtime::cpu::run(&compiler, &file, "softmax", &mut args, &Default::default()).unwrap();
    let (HostValue::Array(a), HostValue::Array(b)) = (&a, &args[1]) else {
        unreachable!()
    };
    for i in 0..m {
        let row: Vec<f64> = (0..n).map(|j| a.get_f64(i * n + j)).collect();
        let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|x| (x - mx).exp()).sum();
        for (j, x) in row.iter().enumerate() {
            let want = (x - mx).exp() / s;
            let got = b.get_f64(i * n + j);
            assert!((got - want).abs() <= 1e-14 * want, "b[{i},{j}] = {got}, expected {want}");
        }
    }
}
