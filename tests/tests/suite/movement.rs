//! Data movement (seed 002 §5): the runtime moves only the boxes of array elements each
//! kernel launch accesses. The analysis runs on the compiled bundle, so it is tested here
//! without a GPU; the GPU run with counted bytes is in BENCHMARKS.md.

use appy_ir::diag::SourceFile;
use appy_ir::types::{ArgType, DType};
use appy_runtime::regions::{IndexBox, LaunchArg, plan};
use appy_tests::root;

fn bundle(func: &str, sig: &[ArgType]) -> appy_ir::bundle::Bundle {
    let src = SourceFile::read(&root().join("examples/data_movement.py")).unwrap();
    appy_compiler::Compiler::new()
        .compile_gpu(&src, func, sig, &appy_compiler::Options::default())
        .unwrap_or_else(|d| panic!("{}", d.render()))
}

fn arr(rank: usize) -> ArgType {
    ArgType::Array { dtype: DType::F64, rank }
}
const INT: ArgType = ArgType::Scalar {
    dtype: DType::I64,
    weak: true,
};

#[test]
fn one_row_of_a_matrix_moves_one_row() {
    let b = bundle("scale_row", &[arr(2), INT, INT]);
    let p = plan(
        &b.program,
        &[LaunchArg::Array(vec![4096, 4096]), LaunchArg::Int(17), LaunchArg::Int(4096)],
    );
    assert_eq!(p.len(), 1, "one launch");
    let row = IndexBox {
        lo: vec![17, 0],
        hi: vec![18, 4096],
    };
    assert_eq!(p[0].1.reads.get(&0), Some(&row));
    assert_eq!(p[0].1.writes.get(&0), Some(&row));
    assert_eq!(row.len() * 8, 32768, "one row of float64: 32 KiB, not 128 MiB");
    assert_eq!(row.runs(&[4096, 4096]), vec![(17 * 4096, 4096)], "one contiguous copy");
}

#[test]
fn consecutive_regions_and_stencil_boxes() {
    let b = bundle("two_regions", &[arr(1), arr(1), INT]);
    let p = plan(
        &b.program,
        &[LaunchArg::Array(vec![1000]), LaunchArg::Array(vec![1000]), LaunchArg::Int(1000)],
    );
    assert_eq!(p.len(), 2);
    let all = IndexBox {
        lo: vec![0],
        hi: vec![1000],
    };
    assert_eq!(p[0].1.reads.get(&0), Some(&all));
    assert_eq!(p[0].1.writes.get(&1), Some(&all));
    assert_eq!(
        p[1].1.reads.get(&1),
        Some(&all),
        "the second region reads what the first wrote (already on the device)"
    );

    let b = bundle("interior", &[arr(2), arr(2), INT, INT]);
    let p = plan(
        &b.program,
        &[
            LaunchArg::Array(vec![50, 60]),
            LaunchArg::Array(vec![50, 60]),
            LaunchArg::Int(50),
            LaunchArg::Int(60),
        ],
    );
    assert_eq!(p.len(), 1);
    assert_eq!(
        p[0].1.reads.get(&0),
        Some(&IndexBox {
            lo: vec![0, 0],
            hi: vec![50, 60]
        })
    );
    assert_eq!(
        p[0].1.writes.get(&1),
        Some(&IndexBox {
            lo: vec![1, 1],
            hi: vec![49, 59]
        })
    );
    assert!(!p[0].1.reads.contains_key(&1), "b is only written");
}

#[test]
fn strided_view_moves_only_its_elements() {
    // A view of every other element of a 2n-element base array is gathered into n
    // contiguous elements; a kernel over the view moves those n elements, not the base.
    use appy_runtime::HostArray;
    let base = ndarray::Array1::from_iter((0..2000).map(|i| i as f64));
    let view = base.slice(ndarray::s![..;2]);
    let gathered = HostArray::from_view(&view);
    assert_eq!(gathered.len(), 1000);
    assert_eq!(gathered.get_f64(3), 6.0);
    let b = bundle("two_regions", &[arr(1), arr(1), INT]);
    let p = plan(
        &b.program,
        &[LaunchArg::Array(vec![1000]), LaunchArg::Array(vec![1000]), LaunchArg::Int(1000)],
    );
    let moved: usize = p[0].1.reads.get(&0).map(|b| b.len()).unwrap_or(0) * 8;
    assert_eq!(moved, 8000, "the view's 1000 float64 elements, not the base's 2000");
}
