//! A NumPy-style spelling (whole arrays, open slices) compiles to the same kernels as
//! sliced index notation with explicit extents: the PTX of each pair in
//! `tests/cases/same_kernel.py` is identical once the kernels' names are aligned. The
//! extents differ only in how the host computes them (from the arrays' shapes or the
//! size arguments), and they reach the kernels as parameters either way.

use appy_ir::diag::SourceFile;
use appy_ir::types::parse_signature;
use appy_tests::root;

fn ptx(src: &SourceFile, func: &str, sig: &str) -> String {
    let compiler = appy_compiler::Compiler::new();
    let sig = parse_signature(sig).unwrap();
    let b = compiler
        .compile_gpu(src, func, &sig, &appy_compiler::Options::default())
        .unwrap_or_else(|d| panic!("{}", d.render()));
    assert!(!b.kernels.is_empty(), "{func}: no kernels");
    b.ptx.replace(&format!("_appy_{func}_"), "_appy_K_")
}

#[test]
fn numpy_spellings_compile_to_the_same_kernels() {
    let path = root().join("tests/cases/same_kernel.py");
    let src = SourceFile::read(&path).unwrap();
    let pairs = [
        (
            "scale_whole",
            "f64[:,:],f64[:,:],float",
            "scale_explicit",
            "f64[:,:],f64[:,:],float,int,int",
        ),
        ("update_whole", "f32[:,:],float", "update_explicit", "f32[:,:],float,int,int"),
        ("stencil_open", "f64[:,:],f64[:,:]", "stencil_explicit", "f64[:,:],f64[:,:],int,int"),
        (
            "rows_open",
            "f64[:,:],f64[:],f64[:]",
            "rows_explicit",
            "f64[:,:],f64[:],f64[:],int,int",
        ),
    ];
    for (a, sa, b, sb) in pairs {
        let (pa, pb) = (ptx(&src, a, sa), ptx(&src, b, sb));
        assert!(pa == pb, "{a} and {b} compile to different kernels:\n--- {a}\n{pa}\n--- {b}\n{pb}");
    }
}
