//! The `kernel` level prints and re-parses. For examples that cover the kinds of
//! kernel (stencils, reductions across workers, CSR bounds read from memory, host loops
//! around kernels, tensor statements), `appy-opt --emit=kernel` printed, parsed back
//! and printed again gives the same text, and the GPU level lowered from the re-parsed
//! text (which the level's verifier checks first) is the GPU level lowered from the
//! source.

use appy_tests::root;

fn opt(args: &[&str], stdin: &str) -> String {
    let mut argv = vec!["appy-opt".to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    appy_tools::opt::run(&argv, stdin).unwrap_or_else(|e| panic!("appy-opt {args:?}: {e}"))
}

#[test]
fn kernel_level_round_trips() {
    let cases = [
        ("jacobi_1d.py", "jacobi_1d", "f64[:],f64[:],int,int"),
        ("shared_sum.py", "shared_sum", "f64[:],int"),
        ("spmv.py", "spmv", "i64[:],i32[:],f64[:],f64[:],f64[:],int"),
        ("softmax.py", "softmax", "f32[:,:],f32[:,:],int,int"),
        (
            "gemver.py",
            "gemver",
            "float,float,f64[:,:],f64[:],f64[:],f64[:],f64[:],f64[:],f64[:],f64[:],f64[:],int",
        ),
        ("prefix_rows.py", "prefix_rows", "f64[:,:],int,int"),
        ("host_reads.py", "time_loop", "f64[:,:],f64[:],int"),
        ("vidx_where.py", "block_sums", "f64[:],f64[:],int"),
        ("softmax_tensor.py", "group_by_sum", "f64[:,:],i64[:],f64[:,:],int,int"),
        ("tensor_paper.py", "jacobi_2d_one_iteration", "f32[:,:],f32[:,:],int,int"),
    ];
    for (file, func, sig) in cases {
        let path = root().join("examples").join(file);
        let path = path.to_str().unwrap();
        let common = ["--func", func, "--signature", sig];
        let kernel = opt(&[&[path][..], &common, &["--emit=kernel"]].concat(), "");
        assert!(
            kernel.contains("appy.kernel = "),
            "{func}: no kernel at the kernel level:\n{kernel}"
        );
        // Printed, parsed and printed again: the same text.
        assert_eq!(opt(&["-"], &kernel), kernel, "{func}: the kernel level does not re-print as it was");
        // The GPU level from the re-parsed text is the GPU level from the source.
        let direct = opt(&[&[path][..], &common, &["--emit=gpu"]].concat(), "");
        assert_eq!(
            opt(&["-", "--emit=gpu"], &kernel),
            direct,
            "{func}: lowering from the printed kernel level differs"
        );
    }
}
