//! What a first call on the GPU costs before the device does anything: compiling the
//! first candidate, the other autotuning candidates in the background, and loading
//! the whole tuned bundle from the persistent cache in a later process.
//!
//!     cargo run --release -p appy-runtime --example first_call -- FILE FUNC SIGNATURE
//!
//! prints `compiler_new=MS first=MS rest=MS (N candidates) tuned_serial=MS cache_hit=MS` (milliseconds,
//! each the median of 5; `benchmarks/npbench/first_call.py` runs it over NPBench).

use appy_compiler::{Compiler, Options};
use appy_ir::diag::SourceFile;
use appy_runtime::background::{First, compile_gpu_first};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 4 {
        eprintln!("usage: first_call FILE FUNC SIGNATURE");
        std::process::exit(2);
    }
    let text = std::fs::read_to_string(&a[1]).expect("read the source");
    let file = SourceFile::new(a[1].clone(), text);
    let sig = appy_ir::types::parse_signature(&a[3]).expect("a signature");
    let opts = Options::default();
    let t = Instant::now();
    let compiler = Compiler::new();
    let new_ms = t.elapsed().as_secs_f64() * 1e3;
    let (mut first, mut rest, mut serial, mut hit) = (vec![], vec![], vec![], vec![]);
    let mut n = 0;
    for _ in 0..5 {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let t0 = Instant::now();
        let First::Deferred(d) = compile_gpu_first(&compiler, &file, &a[2], &sig, &opts, Some(dir.path())).expect("compiles") else {
            panic!("an empty cache")
        };
        first.push(t0.elapsed().as_secs_f64() * 1e3);
        let t1 = Instant::now();
        let b = d.rest.recv().expect("a reply").expect("the candidates compile");
        rest.push(t1.elapsed().as_secs_f64() * 1e3);
        n = b.candidates();
        let t2 = Instant::now();
        match compile_gpu_first(&compiler, &file, &a[2], &sig, &opts, Some(dir.path())).expect("loads") {
            First::Tuned(_) => hit.push(t2.elapsed().as_secs_f64() * 1e3),
            First::Deferred(_) => panic!("the tuned bundle should be cached"),
        }
        let t3 = Instant::now();
        compiler
            .compile_gpu_tuned(&file, &a[2], &sig, &opts, &appy_ir::TUNE_MVLS)
            .expect("compiles");
        serial.push(t3.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "compiler_new={new_ms:.1} first={:.1} rest={:.1} ({n} candidates) tuned_serial={:.1} cache_hit={:.2}",
        median(first),
        median(rest),
        median(serial),
        median(hit)
    );
}
