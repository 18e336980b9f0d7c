//! End-to-end: every example kernel runs on the CPU back end and is compared with
//! CPython + NumPy running the same file, on random inputs whose sizes are not
//! multiples of the vector length.

use appy_ir::diag::SourceFile;
use appy_ir::types::DType::{self, *};
use appy_runtime::{HostArray, HostValue};
use appy_tests::{Rng, compare, oracle, root};

fn int(v: i64) -> HostValue {
    HostValue::Int(v, DType::I64, true)
}
fn float(v: f64) -> HostValue {
    HostValue::Float(v, DType::F64, true)
}

/// Runs `func` from `examples/{file}` on the CPU and under the oracle; compares every
/// array argument and the return values.
fn check(file: &str, func: &str, args: Vec<HostValue>, mvl: i64) {
    let path = root().join("examples").join(file);
    let src = SourceFile::read(&path).unwrap();
    let compiler = appy_compiler::Compiler::new();
    let program = compiler.parse(&src, func).unwrap_or_else(|d| panic!("{}", d.render()));
    let params: Vec<String> = program.function.params.iter().map(|p| p.name.clone()).collect();
    let (want_args, want_ret) = oracle(&path, func, &params, &args).unwrap();
    let mut got_args = args.clone();
    let opts = appy_compiler::Options { mvl, ..Default::default() };
    let got_ret = appy_tests::run_cpu(&compiler, &src, func, &mut got_args, &opts).unwrap_or_else(|d| panic!("{}", d.render()));
    for ((p, g), w) in params.iter().zip(&got_args).zip(&want_args) {
        compare(&format!("{func}: argument {p}"), g, w).unwrap();
    }
    assert_eq!(got_ret.len(), want_ret.len(), "{func}: number of return values");
    for (k, (g, w)) in got_ret.iter().zip(&want_ret).enumerate() {
        compare(&format!("{func}: return value {k}"), g, w).unwrap();
    }
    // The inputs must have been changed or a value returned: a kernel that does
    // nothing must not pass.
    let big = args.iter().any(|a| matches!(a, HostValue::Array(x) if x.len() >= 8));
    assert!(
        !big || !want_ret.is_empty() || want_args.iter().zip(&args).any(|(w, a)| w != a),
        "{func}: test does not exercise the kernel"
    );
}

const SIZES: [usize; 4] = [1, 255, 1000, 4097];

#[test]
fn vector_add() {
    for (k, n) in SIZES.iter().enumerate() {
        let mut r = Rng::new(k as u64);
        let args = vec![
            r.array(F32, &[*n], -1.0, 1.0),
            r.array(F32, &[*n], -1.0, 1.0),
            r.array(F32, &[*n], -1.0, 1.0),
            int(*n as i64),
        ];
        check("vector_add.py", "vector_add", args, 256);
    }
}

#[test]
fn vector_sum_atomic() {
    for (k, n) in SIZES.iter().enumerate() {
        let mut r = Rng::new(10 + k as u64);
        let args = vec![r.array(F64, &[*n], -1.0, 1.0), r.array(F64, &[1], -1.0, 1.0), int(*n as i64)];
        check("vector_sum.py", "vector_sum", args, 256);
    }
}

#[test]
fn shared_reductions() {
    for (k, n) in SIZES.iter().enumerate() {
        let mut r = Rng::new(20 + k as u64);
        check(
            "shared_sum.py",
            "shared_sum",
            vec![r.array(F64, &[*n], -1.0, 1.0), int(*n as i64)],
            256,
        );
        check(
            "shared_sum.py",
            "masked_max",
            vec![r.array(F32, &[*n], 0.0, 1.0), int(*n as i64)],
            128,
        );
    }
}

fn csr(r: &mut Rng, rows: usize, cols: usize, max_nnz: i64) -> (HostValue, HostValue, HostValue) {
    let mut indptr = vec![0f64];
    let mut indices = vec![];
    for _ in 0..rows {
        let nnz = r.int(0, max_nnz + 1);
        for _ in 0..nnz {
            indices.push(r.int(0, cols as i64) as f64);
        }
        indptr.push(indices.len() as f64);
    }
    let nnz = indices.len();
    let vals = r.array(F64, &[nnz], -1.0, 1.0);
    (
        HostValue::Array(HostArray::from_f64(I64, vec![rows + 1], &indptr)),
        HostValue::Array(HostArray::from_f64(I32, vec![nnz], &indices)),
        vals,
    )
}

#[test]
fn spmv_csr() {
    for (k, (rows, max_nnz)) in [(1usize, 3i64), (37, 300), (300, 20)].into_iter().enumerate() {
        let mut r = Rng::new(30 + k as u64);
        let cols = 53;
        let (indptr, indices, vals) = csr(&mut r, rows, cols, max_nnz);
        let args = vec![
            indptr,
            indices,
            vals,
            r.array(F64, &[cols], -1.0, 1.0),
            r.array(F64, &[rows], -1.0, 1.0),
            int(rows as i64 + 1),
        ];
        check("spmv.py", "spmv", args, 256);
    }
}

#[test]
fn rowwise_sum_max_min() {
    for (k, (m, n)) in [(1usize, 1usize), (7, 300), (33, 1000)].into_iter().enumerate() {
        let mut r = Rng::new(40 + k as u64);
        for f in ["row_sum", "row_max", "row_min"] {
            let args = vec![
                r.array(F64, &[m, n], -1.0, 1.0),
                r.array(F64, &[m], -1.0, 1.0),
                int(m as i64),
                int(n as i64),
            ];
            check("rowwise.py", f, args, 256);
        }
        let args = vec![
            r.array(F32, &[m, n], -1.0, 1.0),
            r.array(F32, &[m], -1.0, 1.0),
            int(m as i64),
            int(n as i64),
        ];
        check("rowwise.py", "row_sum", args, 64);
    }
}

#[test]
fn gemver_loops() {
    for (k, n) in [1usize, 130, 300].into_iter().enumerate() {
        let mut r = Rng::new(50 + k as u64);
        let mut args = vec![float(1.5), float(1.2), r.array(F64, &[n, n], -1.0, 1.0)];
        for _ in 0..8 {
            args.push(r.array(F64, &[n], -1.0, 1.0));
        }
        args.push(int(n as i64));
        check("gemver.py", "gemver", args, 256);
    }
}

#[test]
fn softmax_loop_oriented() {
    for (k, (m, n)) in [(1usize, 1usize), (5, 257), (17, 1000)].into_iter().enumerate() {
        let mut r = Rng::new(60 + k as u64);
        let args = vec![
            r.array(F32, &[m, n], -4.0, 4.0),
            r.array(F32, &[m, n], -1.0, 1.0),
            int(m as i64),
            int(n as i64),
        ];
        check("softmax.py", "softmax", args, 256);
    }
}

#[test]
fn vidx_and_where() {
    for (k, n) in SIZES.iter().enumerate() {
        let mut r = Rng::new(70 + k as u64);
        let args = vec![
            r.array(F64, &[*n], -1.0, 1.0),
            r.array(F64, &[*n], -1.0, 1.0),
            r.array(F64, &[*n], -1.0, 1.0),
            int(*n as i64),
        ];
        check("vidx_where.py", "relu_blend", args, 256);
        let blocks = n.div_ceil(256);
        let args = vec![r.array(F64, &[*n], -1.0, 1.0), r.array(F64, &[blocks], -1.0, 1.0), int(*n as i64)];
        check("vidx_where.py", "block_sums", args, 256);
    }
}

#[test]
fn sequential_loop_carried() {
    for (k, (m, n)) in [(1usize, 1usize), (9, 100), (300, 17)].into_iter().enumerate() {
        let mut r = Rng::new(80 + k as u64);
        check(
            "prefix_rows.py",
            "prefix_rows",
            vec![r.array(F64, &[m, n], -1.0, 1.0), int(m as i64), int(n as i64)],
            256,
        );
        check(
            "prefix_rows.py",
            "recurrence",
            vec![r.array(F64, &[n], -1.0, 1.0), r.array(F64, &[n], -1.0, 1.0), int(n as i64)],
            256,
        );
    }
}

#[test]
fn host_time_loop_stencils() {
    for (k, n) in [3usize, 100, 1001].into_iter().enumerate() {
        let mut r = Rng::new(90 + k as u64);
        check(
            "jacobi_1d.py",
            "jacobi_1d",
            vec![r.array(F64, &[n], -1.0, 1.0), r.array(F64, &[n], -1.0, 1.0), int(n as i64), int(5)],
            256,
        );
        let m = n / 3 + 3;
        check(
            "jacobi_1d.py",
            "heat_2d",
            vec![
                r.array(F64, &[m, n], -1.0, 1.0),
                r.array(F64, &[m, n], -1.0, 1.0),
                int(m as i64),
                int(n as i64),
                int(3),
            ],
            256,
        );
    }
}

#[test]
fn prange_reductions_and_auto_simd() {
    for (k, n) in [1usize, 255, 1000].into_iter().enumerate() {
        let mut r = Rng::new(100 + k as u64);
        check("prange.py", "vsum", vec![r.array(F64, &[n], -1.0, 1.0), int(n as i64)], 256);
        check("prange.py", "masked_sum", vec![r.array(F64, &[n], 0.0, 1.0), int(n as i64)], 256);
        let m = n / 9 + 1;
        check("prange.py", "go_fast", vec![r.array(F64, &[m, m], -1.0, 1.0), int(m as i64)], 256);
        check(
            "prange.py",
            "azimint_like",
            vec![
                r.array(F64, &[n], -1.0, 1.0),
                r.array(F64, &[n], 0.0, 10.0),
                float(2.5),
                float(7.0),
                int(n as i64),
            ],
            256,
        );
        check("prange.py", "add_one", vec![r.array(F64, &[n], -1.0, 1.0), int(n as i64)], 256);
        let (rows, cols) = (n / 7 + 2, n % 300 + 3);
        check(
            "prange.py",
            "col_sums",
            vec![
                r.array(F64, &[cols], -1.0, 1.0),
                r.array(F64, &[rows, cols], -1.0, 1.0),
                int(rows as i64),
                int(cols as i64),
            ],
            256,
        );
        check(
            "prange.py",
            "row_sums",
            vec![
                r.array(F64, &[rows], -1.0, 1.0),
                r.array(F64, &[rows, cols], -1.0, 1.0),
                int(rows as i64),
                int(cols as i64),
            ],
            256,
        );
    }
}

#[test]
fn data_movement_examples() {
    let mut r = Rng::new(200);
    check(
        "data_movement.py",
        "scale_row",
        vec![r.array(F64, &[37, 41], -1.0, 1.0), int(5), int(41)],
        256,
    );
    check(
        "data_movement.py",
        "two_regions",
        vec![r.array(F64, &[1001], -1.0, 1.0), r.array(F64, &[1001], -1.0, 1.0), int(1001)],
        256,
    );
    check(
        "data_movement.py",
        "interior",
        vec![
            r.array(F64, &[37, 41], -1.0, 1.0),
            r.array(F64, &[37, 41], -1.0, 1.0),
            int(37),
            int(41),
        ],
        256,
    );
}

#[test]
fn two_dimensional_zeros_fill() {
    // np.zeros((N, N)) fills through a 2-D nest of parallel loops (a 2-D grid on the GPU).
    let mut r = Rng::new(300);
    check(
        "data_movement.py",
        "big_temporary",
        vec![r.array(F64, &[37], -1.0, 1.0), int(37)],
        256,
    );
}

#[test]
fn sliced_index_notation_one_dimension() {
    for (k, (m, n)) in [(1usize, 1usize), (5, 257), (17, 1000)].into_iter().enumerate() {
        let mut r = Rng::new(400 + k as u64);
        check(
            "softmax_tensor.py",
            "softmax_tensor",
            vec![
                r.array(F32, &[m, n], -4.0, 4.0),
                r.array(F32, &[m, n], -1.0, 1.0),
                int(m as i64),
                int(n as i64),
            ],
            256,
        );
        let labels: Vec<f64> = (0..m).map(|_| r.int(0, 3) as f64).collect();
        check(
            "softmax_tensor.py",
            "group_by_sum",
            vec![
                r.array(F64, &[m, n], -1.0, 1.0),
                HostValue::Array(HostArray::from_f64(I64, vec![m], &labels)),
                r.array(F64, &[3, n], -1.0, 1.0),
                int(m as i64),
                int(n as i64),
            ],
            256,
        );
        check(
            "softmax_tensor.py",
            "saxpy_slice",
            vec![
                float(1.5),
                r.array(F64, &[n], -1.0, 1.0),
                r.array(F64, &[n], -1.0, 1.0),
                int(n as i64),
            ],
            256,
        );
    }
}

#[test]
fn tensor_paper_examples() {
    let shapes = [(1usize, 1usize), (2, 3), (37, 53), (130, 257), (3, 1031)];
    for (k, (m, n)) in shapes.into_iter().enumerate() {
        let mut r = Rng::new(500 + k as u64);
        let (mi, ni) = (int(m as i64), int(n as i64));
        check(
            "tensor_paper.py",
            "gesummv",
            vec![
                float(1.5),
                float(-0.5),
                r.array(F64, &[m, n], -1.0, 1.0),
                r.array(F64, &[m, n], -1.0, 1.0),
                r.array(F64, &[n], -1.0, 1.0),
                r.array(F64, &[m], -1.0, 1.0),
                r.array(F64, &[m], -1.0, 1.0),
                mi.clone(),
                ni.clone(),
            ],
            256,
        );
        check(
            "tensor_paper.py",
            "jacobi_2d_one_iteration",
            vec![
                r.array(F32, &[m, n], -1.0, 1.0),
                r.array(F32, &[m, n], -1.0, 1.0),
                mi.clone(),
                ni.clone(),
            ],
            256,
        );
        check(
            "tensor_paper.py",
            "mv_alpha",
            vec![
                float(0.75),
                r.array(F32, &[m, n], -1.0, 1.0),
                r.array(F32, &[n], -1.0, 1.0),
                r.array(F32, &[m], -1.0, 1.0),
            ],
            256,
        );
        check(
            "tensor_paper.py",
            "shift",
            vec![
                r.array(F64, &[m, n], -1.0, 1.0),
                r.array(F64, &[m, n], -1.0, 1.0),
                mi.clone(),
                ni.clone(),
            ],
            256,
        );
        check(
            "tensor_paper.py",
            "outer_add",
            vec![
                r.array(F64, &[m], -1.0, 1.0),
                r.array(F64, &[n], -1.0, 1.0),
                r.array(F64, &[m, n], -1.0, 1.0),
                mi.clone(),
                ni.clone(),
            ],
            256,
        );
        check(
            "tensor_paper.py",
            "column_sum",
            vec![
                r.array(F64, &[m, n], -1.0, 1.0),
                r.array(F64, &[n], -1.0, 1.0),
                mi.clone(),
                ni.clone(),
            ],
            256,
        );
        check(
            "tensor_paper.py",
            "layernorm",
            vec![
                r.array(F32, &[m, n], -2.0, 2.0),
                r.array(F32, &[n], -1.0, 1.0),
                r.array(F32, &[n], -1.0, 1.0),
                r.array(F32, &[m, n], -1.0, 1.0),
                mi.clone(),
                ni.clone(),
                float(1e-5),
            ],
            256,
        );
    }
    for (k, n) in [3usize, 4, 11, 20].into_iter().enumerate() {
        let mut r = Rng::new(600 + k as u64);
        check(
            "tensor_paper.py",
            "heat_3d",
            vec![
                r.array(F64, &[n, n, n], -1.0, 1.0),
                r.array(F64, &[n, n, n], -1.0, 1.0),
                int(n as i64),
                int(5),
            ],
            256,
        );
    }
}

#[test]
fn tensor_matmul_cpu_loops() {
    for (k, (m, n, kk)) in [(1usize, 1usize, 1usize), (3, 5, 7), (37, 29, 64)].into_iter().enumerate() {
        let mut r = Rng::new(700 + k as u64);
        let (mi, ni, ki) = (int(m as i64), int(n as i64), int(kk as i64));
        check(
            "tensor_matmul.py",
            "gemm",
            vec![
                float(1.5),
                float(0.5),
                r.array(F64, &[m, n], -1.0, 1.0),
                r.array(F64, &[m, kk], -1.0, 1.0),
                r.array(F64, &[kk, n], -1.0, 1.0),
                mi.clone(),
                ni.clone(),
                ki.clone(),
            ],
            256,
        );
        check(
            "tensor_matmul.py",
            "at_b",
            vec![
                r.array(F64, &[kk, m], -1.0, 1.0),
                r.array(F64, &[kk, n], -1.0, 1.0),
                r.array(F64, &[m, n], -1.0, 1.0),
                mi.clone(),
                ni.clone(),
                ki,
            ],
            256,
        );
        check(
            "tensor_matmul.py",
            "vec_mat",
            vec![
                r.array(F64, &[kk, n], -1.0, 1.0),
                r.array(F64, &[kk], -1.0, 1.0),
                r.array(F64, &[n], -1.0, 1.0),
                int(kk as i64),
                int(n as i64),
            ],
            256,
        );
        check(
            "tensor_matmul.py",
            "sub_block",
            vec![
                r.array(F64, &[m + 1, n + 1], -1.0, 1.0),
                r.array(F64, &[n + 1, n + 1], -1.0, 1.0),
                r.array(F64, &[m + 1, n + 1], -1.0, 1.0),
                int(m as i64 + 1),
                int(n as i64 + 1),
            ],
            256,
        );
    }
}

/// A well-conditioned lower-triangular matrix (rows x n, diagonal in [1, 2]) and a
/// symmetric positive definite one (B Bᵀ + n I in the leading n x n block of an
/// (n + extra)² matrix of noise).
fn lower(r: &mut Rng, dt: DType, rows: usize, n: usize) -> HostValue {
    let mut v = vec![0.0; rows * n];
    for i in 0..rows {
        for j in 0..n {
            v[i * n + j] = if i == j {
                r.uniform(1.0, 2.0)
            } else if j < i {
                r.uniform(-1.0, 1.0) / n as f64
            } else {
                r.uniform(-9.0, 9.0) // never read by a lower-triangular solve
            };
        }
    }
    HostValue::Array(HostArray::from_f64(dt, vec![rows, n], &v))
}

fn spd(r: &mut Rng, dt: DType, n: usize, extra: usize) -> HostValue {
    let m = n + extra;
    let b: Vec<f64> = (0..n * n).map(|_| r.uniform(-1.0, 1.0)).collect();
    let mut v: Vec<f64> = (0..m * m).map(|_| r.uniform(-1.0, 1.0)).collect();
    for i in 0..n {
        for j in 0..n {
            let dot: f64 = (0..n).map(|k| b[i * n + k] * b[j * n + k]).sum();
            v[i * m + j] = dot + if i == j { n as f64 } else { 0.0 };
        }
    }
    HostValue::Array(HostArray::from_f64(dt, vec![m, m], &v))
}

#[test]
fn solvers_cpu_loops() {
    // On the CPU, triangular solves run as loops; Cholesky factorisations go to LAPACK
    // (with a BLAS library) or run as loops: either way NumPy's result.
    for (k, n) in [1usize, 7, 64, 301].into_iter().enumerate() {
        let mut r = Rng::new(800 + k as u64);
        let (l, x, b) = (
            lower(&mut r, F64, n, n),
            r.array(F64, &[n], -1.0, 1.0),
            r.array(F64, &[n], -1.0, 1.0),
        );
        check("solvers.py", "trisolv", vec![l, x, b], 256);
        let (l, x) = (lower(&mut r, F32, n + 3, n + 3), r.array(F32, &[n + 3], -1.0, 1.0));
        check("solvers.py", "trisolv_inplace", vec![l, x, int(n as i64)], 256);
        check("solvers.py", "cholesky", vec![spd(&mut r, F64, n, 0)], 256);
        check("solvers.py", "cholesky_block", vec![spd(&mut r, F64, n, 3), int(n as i64)], 256);
        check("solvers.py", "cholesky_rows", vec![spd(&mut r, F64, n, 0)], 256);
        check("solvers.py", "cholesky", vec![spd(&mut r, F32, n, 0)], 256);
        // Not positive definite: LAPACK fails, the matrix is untouched and the loops
        // run, NaN from the failing column on, as NumPy's loops give.
        let HostValue::Array(mut a) = spd(&mut r, F64, n, 0) else {
            unreachable!()
        };
        a.set_f64((n / 2) * n + n / 2, -1.0e6);
        check("solvers.py", "cholesky", vec![HostValue::Array(a.clone())], 256);
        check("solvers.py", "cholesky_rows", vec![HostValue::Array(a)], 256);
    }
}

#[test]
fn host_reads_cpu() {
    for (k, n) in SIZES.iter().enumerate() {
        let mut r = Rng::new(900 + k as u64);
        check(
            "host_reads.py",
            "time_loop",
            vec![r.array(F64, &[2, *n], -1.0, 1.0), r.array(F64, &[12], -1.0, 1.0), int(11)],
            256,
        );
        check(
            "host_reads.py",
            "before_loop",
            vec![r.array(F64, &[1, *n], -1.0, 1.0), r.array(F64, &[*n], -1.0, 1.0), int(5)],
            256,
        );
        check(
            "host_reads.py",
            "read_then_write",
            vec![r.array(F64, &[*n, 37], -1.0, 1.0), int(7)],
            256,
        );
    }
}

/// Max and min reductions over data holding NaNs: `np.maximum` propagates them (the
/// whole softmax row is NaN), the builtin `max` and comparisons ignore them as CPython
/// does; on the CPU the reductions are carried as `maxnumf` plus a NaN flag
/// (`appy-cpu-minmax`), which must give the same values.
#[test]
fn max_reductions_with_nans() {
    for (k, (m, n)) in [(1usize, 1usize), (5, 257), (8, 1000)].into_iter().enumerate() {
        let mut r = Rng::new(800 + k as u64);
        let with_nans = |v: HostValue, every: usize| match v {
            HostValue::Array(mut a) => {
                for i in (0..a.len()).step_by(every) {
                    a.set_f64(i, f64::NAN);
                }
                HostValue::Array(a)
            }
            v => v,
        };
        let (mi, ni) = (int(m as i64), int(n as i64));
        for dt in [F32, F64] {
            let a = with_nans(r.array(dt, &[m, n], -1.0, 1.0), 3 * n + 7);
            check(
                "softmax.py",
                "softmax",
                vec![a.clone(), r.array(dt, &[m, n], -1.0, 1.0), mi.clone(), ni.clone()],
                256,
            );
            check(
                "rowwise.py",
                "row_max",
                vec![a.clone(), r.array(dt, &[m], -1.0, 1.0), mi.clone(), ni.clone()],
                256,
            );
            check(
                "rowwise.py",
                "row_min",
                vec![a, r.array(dt, &[m], -1.0, 1.0), mi.clone(), ni.clone()],
                256,
            );
        }
        let a = with_nans(r.array(F32, &[m * n], 0.0, 1.0), 11);
        check("shared_sum.py", "masked_max", vec![a, int((m * n) as i64)], 256);
    }
}
