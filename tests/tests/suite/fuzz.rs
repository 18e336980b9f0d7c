//! No panics on any input: generated APPy-like programs (see `appy_tests::progen`) go
//! through the whole compiler — parse, lower, MLIR verification, the GPU pipeline to
//! the `gpu` level and the CPU pipeline to LLVM — with random argument types. Every
//! outcome must be a success or a located diagnostic; a panic or an internal compiler
//! error (MLIR rejecting what appy produced) fails the test.
//!
//! `APPY_FUZZ_CASES` sets the number of programs (200 by default); the long runs
//! recorded in docs/ROBUSTNESS.md use `APPY_FUZZ_CASES=1000000`.

use appy_ir::diag::SourceFile;
use appy_ir::types::{ArgType, DType};
use appy_tests::{Rng, progen};

fn signature(r: &mut Rng) -> Vec<ArgType> {
    let dt = |r: &mut Rng| [DType::F32, DType::F64, DType::I32, DType::I64][r.int(0, 4) as usize];
    vec![
        ArgType::Array {
            dtype: dt(r),
            rank: r.int(1, 3) as usize,
        },
        ArgType::Array {
            dtype: dt(r),
            rank: r.int(1, 3) as usize,
        },
        ArgType::Array { dtype: dt(r), rank: 1 },
        if r.int(0, 4) == 0 {
            ArgType::Scalar {
                dtype: DType::F64,
                weak: true,
            }
        } else {
            ArgType::Scalar {
                dtype: DType::I64,
                weak: true,
            }
        },
    ]
}

#[test]
fn compiler_never_panics() {
    let cases: u64 = appy_ir::config::test_var("APPY_FUZZ_CASES")
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let seed0: u64 = appy_ir::config::test_var("APPY_FUZZ_SEED")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // APPY_FUZZ_FRONTEND_ONLY=1: parse and lower only (no MLIR), for very long runs.
    let frontend_only = appy_ir::config::test_var("APPY_FUZZ_FRONTEND_ONLY").is_some();
    let compiler = appy_compiler::Compiler::new();
    let opts = appy_compiler::Options::default();
    let (mut accepted, mut rejected) = (0u64, 0u64);
    for k in 0..cases {
        if k > 0 && k % 100_000 == 0 {
            eprintln!("fuzz: {k} programs so far, {accepted} compiled, {rejected} rejected");
        }
        let mut r = Rng::new(seed0 + k);
        let src = progen::program(&mut r);
        let sig = signature(&mut r);
        let file = SourceFile::new("fuzz.py", src.clone());
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<(), String> {
            let Ok(p) = compiler.parse(&file, "f") else {
                return Err(String::new());
            };
            if frontend_only {
                appy_frontend::lower::lower(&file, &p, &sig, &Default::default()).map_err(|d| d.render())?;
                return Ok(());
            }
            let l = compiler.lower(&file, &p, &sig, &opts).map_err(|d| d.render())?;
            let gpu = compiler
                .run(
                    &file,
                    l.module.clone(),
                    &compiler.pipeline_to(appy_compiler::Level::Gpu, &opts),
                    None,
                )
                .map_err(|d| d.render())?;
            let _ = compiler.ctx.load(&gpu).map_err(|e| format!("internal compiler error: {e}"))?;
            compiler
                .run(&file, l.module, &compiler.pipeline_to(appy_compiler::Level::Llvm, &opts), None)
                .map_err(|d| d.render())?;
            Ok(())
        }));
        match outcome {
            Err(_) => panic!(
                "case {} (APPY_FUZZ_SEED={}): the compiler panicked on:\n{src}\nsignature {sig:?}",
                k,
                seed0 + k
            ),
            Ok(Err(e)) if e.contains("internal compiler error") => {
                panic!(
                    "case {} (APPY_FUZZ_SEED={}): internal compiler error on:\n{src}\nsignature {sig:?}\n{e}",
                    k,
                    seed0 + k
                )
            }
            Ok(Err(_)) => rejected += 1,
            Ok(Ok(())) => accepted += 1,
        }
    }
    eprintln!("fuzz: {cases} programs, {accepted} compiled, {rejected} rejected with a diagnostic");
    assert!(accepted > 0 || cases < 50, "the generator should produce some valid programs");
}
