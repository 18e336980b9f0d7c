//! The CPU back end's parallel loops really run on OpenMP threads: the runtime is found
//! (scripts/setup.sh installs libomp-22-dev), the compiled code forks a parallel
//! region, and with 2 threads the process gains an OpenMP worker thread while with 1
//! it gains none. The thread counts are taken in a child process that runs only this
//! test, so no other test's threads are counted.

use appy_ir::diag::SourceFile;
use appy_ir::types::DType;
use appy_runtime::HostValue;
use appy_tests::Rng;

const SRC: &str = "import numpy as np\nimport appy\n\n@appy.jit\ndef k(a, b, N):\n    s = 0.0\n    #pragma parallel for shared(s)\n    for i in range(N):\n        b[i] = np.exp(a[i])\n        s += b[i]\n    return s\n";

fn threads_of_process() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0)
}

#[test]
fn parallel_loops_run_on_openmp_threads() {
    let host = appy_runtime::cpu::host();
    assert!(
        host.libomp.is_some(),
        "no OpenMP runtime: install libomp-22-dev (scripts/setup.sh) or set APPY_LIBOMP"
    );
    if let Some(n) = appy_ir::config::test_var("APPY_OPENMP_CHILD") {
        // The child: one call with `n` threads; report the threads it added.
        let n: usize = n.parse().unwrap();
        let compiler = appy_compiler::Compiler::new();
        let file = SourceFile::new("k.py", SRC);
        let mut r = Rng::new(1);
        let len = 100_000;
        let mut args = vec![
            r.array(DType::F64, &[len], -1.0, 1.0),
            r.array(DType::F64, &[len], -1.0, 1.0),
            HostValue::Int(len as i64, DType::I64, true),
        ];
        appy_runtime::cpu::set_num_threads(Some(n));
        // The BLAS library (loaded with the host's set-up) has its own threads.
        let _ = appy_runtime::blas::blas();
        let before = threads_of_process();
        let ret = appy_runtime::cpu::run(&compiler, &file, "k", &mut args, &Default::default()).unwrap();
        let after = threads_of_process();
        let HostValue::Array(a) = &args[0] else { unreachable!() };
        let HostValue::Array(b) = &args[1] else { unreachable!() };
        let want: f64 = (0..len).map(|i| a.get_f64(i).exp()).sum();
        let HostValue::Float(got, ..) = ret[0] else { panic!("{ret:?}") };
        assert!((got - want).abs() <= 1e-9 * want.abs(), "{got} vs {want}");
        assert_eq!(b.get_f64(7), a.get_f64(7).exp());
        println!("\nopenmp-workers: {}", after - before);
        return;
    }
    // The parallel loop is an OpenMP region in the compiled code.
    let compiler = appy_compiler::Compiler::new();
    let file = SourceFile::new("k.py", SRC);
    let sig = appy_ir::types::parse_signature("f64[:],f64[:],int").unwrap();
    let opts = host.options(&Default::default());
    let (llvm, _) = compiler.compile_cpu(&file, "k", &sig, &opts, &[]).unwrap();
    let text = llvm.to_generic();
    assert!(text.contains("omp.parallel") && text.contains("omp.wsloop"), "{text}");
    assert!(text.contains("omp.declare_reduction"), "the shared sum is an OpenMP reduction");
    for (n, workers) in [(1, 0), (2, 1)] {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args([
                "openmp::parallel_loops_run_on_openmp_threads",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("APPY_OPENMP_CHILD", n.to_string())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix("openmp-workers: "))
            .expect("child report");
        assert_eq!(
            line.trim().parse::<usize>().unwrap(),
            workers,
            "{n} thread(s): OpenMP workers started"
        );
    }
}
