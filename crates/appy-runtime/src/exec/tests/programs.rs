//! Programs compiled from Python run against the mock device: results are compared
//! with the Python meaning (computed here), transfers with what the kernels access.

use super::mock::{Event, Mock};
use super::{call_on, int};
use crate::array::{HostArray, HostValue};
use crate::exec::{Limits, RunOptions, run};
use appy_compiler::{Compiler, Options};
use appy_ir::bundle::Bundle;
use appy_ir::diag::SourceFile;
use appy_ir::types::{DType, parse_signature};

const SRC: &str = r#"
import numpy as np
import appy

@appy.jit
def scalars(a, b, x, y):
    q = a // b
    r = a % b
    s = x / y - x * y
    c = 0
    if a < b:
        c = 1
    return q, r, s, c, np.sqrt(x) + abs(y)

@appy.jit
def small_ints(a, k):
    t = a[0] + a[a.shape[0] - 1]
    u = np.uint8(250) + np.uint8(10)
    v = np.int8(-128) // np.int8(-1)
    w = np.uint16(7) - np.uint16(9)
    h = np.float16(0.1) * np.float16(3)
    a[1] = k * np.uint8(3)
    return t, u, v, w, a[0] > -3, h

@appy.jit
def loops(a, N, T):
    s = 0.0
    for t in range(T):
        for i in range(N):
            s = s + a[i] * t
        a[t % N] = s
    return s

@appy.jit
def interior(a, b, M, N):
    #pragma parallel for
    for i in range(1, M - 1):
        #pragma simd
        for j in range(1, N - 1):
            b[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])

@appy.jit
def jacobi_tile(inp, out):
    #pragma parallel for
    for i in range(1, inp.shape[0] - 1, 64):
        buf = appy.buffer(64 + 2)
        buf[:] = inp[i - 1:i + 65]
        out[i:i + 64] = (buf[:-2] + buf[1:-1] + buf[2:]) / 3.0

@appy.jit
def scale_row(a, r, N):
    #pragma parallel for simd
    for j in range(N):
        a[r, j] = 2.0 * a[r, j]

@appy.jit
def trisolv(L, x, b):
    N = x.shape[0]
    #pragma sequential for
    for i in range(N):
        x[i] = (b[i] - np.sum(L[i, :i] * x[:i])) / L[i, i]

@appy.jit
def cholesky(A):
    N = A.shape[0]
    for j in range(N):
        A[j, j] = np.sqrt(A[j, j] - np.sum(A[j, :j] * A[j, :j]))
        #pragma parallel for
        for i in range(j + 1, N):
            A[i, j] = (A[i, j] - np.sum(A[i, :j] * A[j, :j])) / A[j, j]

@appy.jit
def sub_block(A, B, C, M, N):
    C[1:M, 1:N] = np.dot(A[1:M, :N - 1], B[:N - 1, 1:N])

@appy.jit
def vec_mat(A, x, y, M, N):
    y[:N] += 2.0 * x[:M] @ A[:M, :N]

@appy.jit
def return_scaled(x, N, alpha):
    return x[:N] + alpha

@appy.jit
def ping_pong(a, b, N, steps):
    for t in range(steps):
        #pragma parallel for
        for i in range(1, N - 1):
            b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0
        a, b = b, a
    return a

@appy.jit
def ping_pong_host(a, b, N, steps):
    for t in range(steps):
        for i in range(1, N - 1):
            b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0
        a, b = b, a
    return a

@appy.jit
def rotate(a, b, c, N, steps):
    for t in range(steps):
        for i in range(N):
            c[i] = a[i] + 2.0 * b[i]
        tmp = a
        a = b
        b = c
        c = tmp
    return a, b, c

@appy.jit
def branch_alias(a, b, N, flip):
    if flip > 0:
        a, b = b, a
    c = a
    for i in range(N):
        c[i] = a[i] + b[i]
    return c

@appy.jit
def collatz(x):
    steps = 0
    v = x
    while v != 1:
        steps += 1
        if v % 2 == 0:
            v = v // 2
            continue
        v = 3 * v + 1
        if steps > 100:
            return -1, v
    return steps, v

@appy.jit
def first_above(a, t):
    for i in range(a.shape[0]):
        if a[i] > t:
            return i
    return -1

@appy.jit
def constant_dims(x):
    N = x.shape[0]
    c = np.zeros((2, N, 3), dtype=np.int32)
    #pragma parallel for
    for i in range(N):
        c[1, i, 2] = i
    return c
"#;

fn compile(func: &str, sig: &str) -> Bundle {
    let c = Compiler::new();
    let file = SourceFile::new("t.py", SRC);
    let args = parse_signature(sig).unwrap();
    c.compile_gpu(&file, func, &args, &Options::default())
        .unwrap_or_else(|d| panic!("{}", d.render()))
}

/// Deterministic pseudo-random values in [lo, hi), never zero.
fn values(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            let v = lo + (hi - lo) * u;
            if v == 0.0 { 0.5 } else { v }
        })
        .collect()
}

pub(super) fn array(shape: Vec<usize>, seed: u64) -> HostArray {
    let n = shape.iter().product();
    HostArray::from_f64(DType::F64, shape, &values(n, seed, -1.0, 1.0))
}

fn floats(a: &HostArray) -> Vec<f64> {
    (0..a.len()).map(|i| a.get_f64(i)).collect()
}

fn arr(v: &HostValue) -> &HostArray {
    match v {
        HostValue::Array(a) => a,
        other => panic!("expected an array, got {other:?}"),
    }
}

fn float(v: &HostValue) -> f64 {
    match v {
        HostValue::Float(f, _, _) => *f,
        other => panic!("expected a float, got {other:?}"),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn host_while_break_and_early_return() {
    let b = compile("collatz", "int");
    assert!(b.kernels.is_empty());
    let steps = |mut v: i64| {
        let mut s = 0;
        while v != 1 {
            s += 1;
            if v % 2 == 0 {
                v /= 2;
                continue;
            }
            v = 3 * v + 1;
            if s > 100 {
                return (-1, v);
            }
        }
        (s, v)
    };
    for x in [1i64, 2, 6, 7, 27, 97] {
        let (r, _) = call_on(&Mock::new(), &b, &mut [HostValue::Int(x, DType::I64, true)], &Limits::default()).unwrap();
        assert_eq!((int(&r[0]), int(&r[1])), steps(x), "collatz({x})");
    }
    let b = compile("first_above", "f64[:],float");
    let a = array(vec![37], 5);
    for t in [-2.0, 0.5, 0.9, 2.0] {
        let want = floats(&a).iter().position(|v| *v > t).map_or(-1, |p| p as i64);
        let mut args = [HostValue::Array(a.clone()), HostValue::Float(t, DType::F64, true)];
        let (r, _) = call_on(&Mock::new(), &b, &mut args, &Limits::default()).unwrap();
        assert_eq!(int(&r[0]), want, "first_above({t})");
    }
}

#[test]
fn scalar_code_has_python_semantics() {
    let b = compile("scalars", "int,int,float,float");
    assert!(b.kernels.is_empty());
    for (a, d) in [(7i64, 2i64), (-7, 2), (7, -3), (-13, -5), (1, 5), (-1, 3)] {
        for (x, y) in [(2.5f64, -0.75f64), (0.3, 7.0)] {
            let mut args = [
                HostValue::Int(a, DType::I64, true),
                HostValue::Int(d, DType::I64, true),
                HostValue::Float(x, DType::F64, true),
                HostValue::Float(y, DType::F64, true),
            ];
            let (r, _) = call_on(&Mock::new(), &b, &mut args, &Limits::default()).unwrap();
            assert_eq!(
                int(&r[0]),
                a.div_euclid(d) - if d < 0 && a.rem_euclid(d) != 0 { 1 } else { 0 },
                "{a} // {d}"
            );
            assert_eq!(int(&r[1]), a - d * int(&r[0]), "{a} % {d}");
            assert!(close(float(&r[2]), x / y - x * y));
            assert_eq!(int(&r[3]), (a < d) as i64);
            assert!(close(float(&r[4]), x.sqrt() + y.abs()));
        }
    }
}

/// Host code on 8- and 16-bit integers and float16: its scalar slots are `memref<i8>`
/// like a bool's, and must keep the whole byte (they held bit 0 only on the GPU path).
#[test]
fn small_int_and_half_host_code() {
    let b = compile("small_ints", "u8[:],u8");
    assert!(b.kernels.is_empty());
    let a = HostArray::from_f64(DType::U8, vec![3], &[200.0, 1.0, 99.0]);
    let mut args = [HostValue::Array(a), HostValue::Int(100, DType::U8, false)];
    let (r, _) = call_on(&Mock::new(), &b, &mut args, &Limits::default()).unwrap();
    assert_eq!(r[0], HostValue::Int((200 + 99) % 256, DType::U8, false));
    assert_eq!(r[1], HostValue::Int(4, DType::U8, false));
    assert_eq!(r[2], HostValue::Int(-128, DType::I8, false));
    assert_eq!(r[3], HostValue::Int(65534, DType::U16, false));
    assert_eq!(int(&r[4]), 1);
    // float16(0.1) * float16(3) rounded to float16, as NumPy computes it.
    let h = appy_ir::half::Half::F16;
    assert_eq!(float(&r[5]), h.round(h.round(0.1) * 3.0));
    assert_eq!(arr(&args[0]).get_f64(1), 44.0);
}

#[test]
fn host_loops_and_element_access() {
    let b = compile("loops", "f64[:],int,int");
    for (n, t) in [(1usize, 3i64), (7, 11), (5, 0)] {
        let a0 = array(vec![n], n as u64);
        let mut args = [
            HostValue::Array(a0.clone()),
            HostValue::Int(n as i64, DType::I64, true),
            HostValue::Int(t, DType::I64, true),
        ];
        let dev = Mock::new();
        let (r, timing) = call_on(&dev, &b, &mut args, &Limits::default()).unwrap();
        let mut a = floats(&a0);
        let mut s = 0.0;
        for tt in 0..t {
            for x in a.iter() {
                s += x * tt as f64;
            }
            a[(tt as usize) % n] = s;
        }
        assert!(close(float(&r[0]), s), "{n} {t}");
        let got = floats(arr(&args[0]));
        assert!(got.iter().zip(&a).all(|(g, w)| close(*g, *w)), "{got:?} {a:?}");
        assert_eq!(timing.launches, 0, "no kernel: everything runs on the host");
        // The array never went to the device: no copy in either direction.
        assert_eq!(dev.copied(), (0, 0));
    }
}

/// An argument lent from the caller's memory (`AlignedBytes::borrowed`, the Python
/// package's NumPy arrays on the GPU) is read and written in place, and the memory
/// stays the caller's: the same results as an owned copy, in the caller's buffer.
#[test]
fn borrowed_host_arrays_are_written_in_place() {
    let b = compile("loops", "f64[:],int,int");
    let (n, t) = (7usize, 11i64);
    let a0 = array(vec![n], 3);
    let mut owned = [
        HostValue::Array(a0.clone()),
        HostValue::Int(n as i64, DType::I64, true),
        HostValue::Int(t, DType::I64, true),
    ];
    let (want, _) = call_on(&Mock::new(), &b, &mut owned, &Limits::default()).unwrap();
    let mut mine: Vec<f64> = floats(&a0);
    let ptr = mine.as_mut_ptr() as *mut u8;
    // SAFETY: `mine` outlives the call and is reached only through the lent buffer.
    let data = unsafe { crate::array::AlignedBytes::borrowed(ptr, n * 8) };
    assert!(data.is_borrowed() && !data.clone().is_borrowed());
    let mut lent = [
        HostValue::Array(HostArray {
            dtype: DType::F64,
            shape: vec![n],
            data,
        }),
        HostValue::Int(n as i64, DType::I64, true),
        HostValue::Int(t, DType::I64, true),
    ];
    let (got, _) = call_on(&Mock::new(), &b, &mut lent, &Limits::default()).unwrap();
    assert_eq!(float(&got[0]), float(&want[0]));
    assert_eq!(
        arr(&lent[0]).data.as_ptr(),
        ptr as *const u8,
        "the argument is still the caller's memory"
    );
    drop(lent);
    assert_eq!(mine, floats(arr(&owned[0])));
}

/// A stencil reads all of `a` and writes the interior of `b`: exactly those boxes move.
#[test]
fn transfers_are_the_accessed_boxes() {
    let b = compile("interior", "f64[:,:],f64[:,:],int,int");
    let (m, n) = (7usize, 5usize);
    let (a0, b0) = (array(vec![m, n], 1), array(vec![m, n], 2));
    let mut args = [
        HostValue::Array(a0.clone()),
        HostValue::Array(b0.clone()),
        HostValue::Int(m as i64, DType::I64, true),
        HostValue::Int(n as i64, DType::I64, true),
    ];
    let dev = Mock::new();
    let (_, timing) = call_on(&dev, &b, &mut args, &Limits::default()).unwrap();
    let interior = (m - 2) * (n - 2) * 8;
    assert_eq!(dev.copied(), (m * n * 8 + interior, interior));
    assert_eq!(
        (timing.htod_bytes, timing.dtoh_bytes, timing.launches),
        (m * n * 8 + interior, interior, 1)
    );
    // The (mock) kernel wrote nothing: the interior comes back as it went.
    assert_eq!(floats(arr(&args[1])), floats(&b0));
    assert_eq!(floats(arr(&args[0])), floats(&a0));

    // One row of a matrix: that row moves, both ways.
    let s = compile("scale_row", "f64[:,:],int,int");
    let mut args = [
        HostValue::Array(array(vec![m, n], 3)),
        HostValue::Int(2, DType::I64, true),
        HostValue::Int(n as i64, DType::I64, true),
    ];
    let dev = Mock::new();
    call_on(&dev, &s, &mut args, &Limits::default()).unwrap();
    assert_eq!(dev.copied(), (n * 8, n * 8));
}

/// A kernel with a scratchpad in shared memory (`appy.buffer`): launched with its
/// parameters only (the workgroup attribution is not one), and the scratchpad is no
/// array to move: `inp` goes in, `out`'s written box both ways (`[1, n)`: the interval
/// analysis of the lanes' bounds mask ends the last tile's box one element late).
#[test]
fn scratchpads_are_not_parameters() {
    let b = compile("jacobi_tile", "f64[:],f64[:]");
    let n = 64 * 3 + 2;
    let mut args = [HostValue::Array(array(vec![n], 1)), HostValue::Array(array(vec![n], 2))];
    let dev = Mock::new();
    let (_, timing) = call_on(&dev, &b, &mut args, &Limits::default()).unwrap();
    assert_eq!(timing.launches, 1);
    assert_eq!(dev.copied(), (n * 8 + (n - 1) * 8, (n - 1) * 8));
}

/// A float64 array of `shape` in the mock device's memory, and its address.
fn device_f64(dev: &Mock, shape: Vec<usize>) -> (HostValue, u64) {
    use crate::device::Device;
    let ptr = dev.malloc(shape.iter().product::<usize>() * 8).unwrap();
    let v = HostValue::Device {
        ptr,
        dtype: DType::F64,
        shape,
    };
    (v, ptr)
}

/// Arrays already on the device are used in place: nothing is copied or allocated.
#[test]
fn device_arguments_move_nothing() {
    let b = compile("interior", "f64[:,:],f64[:,:],int,int");
    let (m, n) = (6usize, 9usize);
    let dev = Mock::new();
    let (a, pa) = device_f64(&dev, vec![m, n]);
    let (b_, pb) = device_f64(&dev, vec![m, n]);
    let mut args = [
        a,
        b_,
        HostValue::Int(m as i64, DType::I64, true),
        HostValue::Int(n as i64, DType::I64, true),
    ];
    dev.log.borrow_mut().clear();
    call_on(&dev, &b, &mut args, &Limits::default()).unwrap();
    assert_eq!(dev.copied(), (0, 0));
    let launches = dev.launches();
    assert_eq!(launches.len(), 1);
    // The descriptors point at the caller's buffers, with the arrays' shapes and
    // row-major strides.
    let cells = &launches[0].3;
    for (p, shape) in [(pa, [m, n]), (pb, [m, n])] {
        let at = cells.iter().position(|c| *c == p).expect("buffer passed");
        assert_eq!(&cells[at..at + 7], &[p, p, 0, shape[0] as u64, shape[1] as u64, shape[1] as u64, 1]);
    }
    assert!(!dev.log.borrow().iter().any(|e| matches!(e, Event::Alloc(_))));
}

/// Under a memory budget, a launch runs in tiles of blocks whose data fits it; each
/// tile's transfers stay within the budget and the tiles cover every block once.
#[test]
fn tiles_fit_the_budget() {
    let b = compile("interior", "f64[:,:],f64[:,:],int,int");
    let (m, n) = (40usize, 16usize);
    let (a0, b0) = (array(vec![m, n], 4), array(vec![m, n], 5));
    let budget = 6 * n * 8 * 2;
    let mut args = [
        HostValue::Array(a0.clone()),
        HostValue::Array(b0.clone()),
        HostValue::Int(m as i64, DType::I64, true),
        HostValue::Int(n as i64, DType::I64, true),
    ];
    let limits = Limits {
        budget: Some(budget),
        ..Limits::default()
    };
    let dev = Mock::new();
    let (_, timing) = call_on(&dev, &b, &mut args, &limits).unwrap();
    let launches = dev.launches();
    assert!(launches.len() > 1, "tiled into {} launches", launches.len());
    assert_eq!(timing.tiles, launches.len());
    // Consecutive tiles: the block offset (the last parameter) advances by each
    // tile's grid, and together they cover the M - 2 workers.
    let mut next = 0u64;
    for (_, grid, _, cells) in &launches {
        assert_eq!(*cells.last().unwrap(), next);
        next += grid[0] as u64;
    }
    assert_eq!(next as usize, m - 2);
    // Each tile moves at most the budget.
    let log = dev.log.borrow();
    let mut moved = 0;
    for e in log.iter() {
        match e {
            Event::Htod(_, k) => moved += k,
            Event::Launch(..) => {
                assert!(moved <= budget, "{moved} > {budget}");
                moved = 0;
            }
            _ => {}
        }
    }
    drop(log);
    assert_eq!(floats(arr(&args[0])), floats(&a0));
    assert_eq!(floats(arr(&args[1])), floats(&b0));
}

fn lower_triangular(n: usize, seed: u64) -> Vec<f64> {
    let v = values(n * n, seed, -0.5, 0.5);
    (0..n * n)
        .map(|k| {
            let (i, j) = (k / n, k % n);
            if i == j { n as f64 + v[k] } else { v[k] }
        })
        .collect()
}

/// `appy.trsv`: the library solves what the loop computes.
#[test]
fn triangular_solve() {
    let b = compile("trisolv", "f64[:,:],f64[:],f64[:]");
    assert!(b.kernels.is_empty());
    for n in [1usize, 2, 7, 13] {
        let l = lower_triangular(n, n as u64);
        let rhs = values(n, 99, -1.0, 1.0);
        let mut args = [
            HostValue::Array(HostArray::from_f64(DType::F64, vec![n, n], &l)),
            HostValue::Array(HostArray::from_f64(DType::F64, vec![n], &vec![0.0; n])),
            HostValue::Array(HostArray::from_f64(DType::F64, vec![n], &rhs)),
        ];
        let dev = Mock::new();
        call_on(&dev, &b, &mut args, &Limits::default()).unwrap();
        assert!(dev.log.borrow().contains(&Event::Library("trsv")));
        let mut x = vec![0.0; n];
        for i in 0..n {
            let s: f64 = (0..i).map(|j| l[i * n + j] * x[j]).sum();
            x[i] = (rhs[i] - s) / l[i * n + i];
        }
        let got = floats(arr(&args[1]));
        assert!(got.iter().zip(&x).all(|(g, w)| close(*g, *w)), "n={n}: {got:?} {x:?}");
    }
}

/// `appy.potrf`: the lower triangle becomes the factor, the upper one is untouched; a
/// matrix that is not positive definite gives NaN from the failing column on, as the
/// loop does.
#[test]
fn cholesky_factorisation() {
    let b = compile("cholesky", "f64[:,:]");
    for (n, definite) in [(1usize, true), (5, true), (11, true), (6, false)] {
        let v = values(n * n, n as u64 + 7, -0.5, 0.5);
        let mut a: Vec<f64> = (0..n * n)
            .map(|k| {
                let (i, j) = (k / n, k % n);
                let s = v[i.min(j) * n + i.max(j)];
                if i == j { n as f64 + s.abs() } else { s }
            })
            .collect();
        if !definite {
            a[3 * n + 3] = -1.0;
        }
        let mut args = [HostValue::Array(HostArray::from_f64(DType::F64, vec![n, n], &a))];
        let dev = Mock::new();
        call_on(&dev, &b, &mut args, &Limits::default()).unwrap();
        assert!(dev.log.borrow().contains(&Event::Library("potrf")));
        let got = floats(arr(&args[0]));
        // The loops, in place.
        let mut w = a.clone();
        for j in 0..n {
            let d: f64 = w[j * n + j] - (0..j).map(|k| w[j * n + k] * w[j * n + k]).sum::<f64>();
            w[j * n + j] = d.sqrt();
            for i in j + 1..n {
                let s: f64 = (0..j).map(|k| w[i * n + k] * w[j * n + k]).sum();
                w[i * n + j] = (w[i * n + j] - s) / w[j * n + j];
            }
        }
        for i in 0..n {
            for j in 0..n {
                let (g, e) = (got[i * n + j], w[i * n + j]);
                assert!((g.is_nan() && e.is_nan()) || close(g, e), "n={n} [{i},{j}]: {g} vs {e}");
            }
        }
    }
}

/// `appy.gemm` on sub-matrices (offsets into the arrays) and as a matrix-vector
/// product: the library call gets the right addresses and leading dimensions.
#[test]
fn matrix_products() {
    let g = compile("sub_block", "f64[:,:],f64[:,:],f64[:,:],int,int");
    let (m, n) = (6usize, 5usize);
    let (a, bm, c) = (array(vec![m, n], 10), array(vec![n, n], 11), array(vec![m, n], 12));
    let mut args = [
        HostValue::Array(a.clone()),
        HostValue::Array(bm.clone()),
        HostValue::Array(c.clone()),
        HostValue::Int(m as i64, DType::I64, true),
        HostValue::Int(n as i64, DType::I64, true),
    ];
    let dev = Mock::new();
    call_on(&dev, &g, &mut args, &Limits::default()).unwrap();
    assert!(dev.log.borrow().contains(&Event::Library("gemm")));
    let (fa, fb) = (floats(&a), floats(&bm));
    let mut want = floats(&c);
    for i in 1..m {
        for j in 1..n {
            want[i * n + j] = (0..n - 1).map(|p| fa[i * n + p] * fb[p * n + j]).sum();
        }
    }
    let got = floats(arr(&args[2]));
    assert!(got.iter().zip(&want).all(|(x, y)| close(*x, *y)), "{got:?}\n{want:?}");

    let v = compile("vec_mat", "f64[:,:],f64[:],f64[:],int,int");
    let (m, n) = (7usize, 4usize);
    let (a, x, y) = (array(vec![m, n], 13), array(vec![m], 14), array(vec![n], 15));
    let mut args = [
        HostValue::Array(a.clone()),
        HostValue::Array(x.clone()),
        HostValue::Array(y.clone()),
        HostValue::Int(m as i64, DType::I64, true),
        HostValue::Int(n as i64, DType::I64, true),
    ];
    let dev = Mock::new();
    call_on(&dev, &v, &mut args, &Limits::default()).unwrap();
    assert!(dev.log.borrow().contains(&Event::Library("gemv")));
    let (fa, fx, fy) = (floats(&a), floats(&x), floats(&y));
    let want: Vec<f64> = (0..n)
        .map(|j| fy[j] + 2.0 * (0..m).map(|i| fx[i] * fa[i * n + j]).sum::<f64>())
        .collect();
    let got = floats(arr(&args[2]));
    assert!(got.iter().zip(&want).all(|(x, y)| close(*x, *y)), "{got:?}\n{want:?}");
}

/// A returned new array: downloaded, or left on the device for the caller, who then
/// owns the buffer (it is not given back to the pool).
/// Checked mode: an index out of bounds in host code is the program's located error
/// (`RunError::Checked`), read from the status buffer after the call; a negative index
/// counts from the end.
#[test]
fn checked_mode_reports_the_subscript() {
    let src = "import appy\n\n@appy.jit\ndef pick(a, i):\n    return a[i]\n";
    let file = SourceFile::new("k.py", src);
    let opts = Options {
        bounds_check: true,
        ..Options::default()
    };
    let b = Compiler::new()
        .compile_gpu(&file, "pick", &parse_signature("f64[:],int").unwrap(), &opts)
        .unwrap_or_else(|d| panic!("{}", d.render()));
    assert!(b.status.is_some(), "checked code takes a status buffer");
    let a = array(vec![5], 3);
    let call = |i: i64| {
        let mut args = vec![HostValue::Array(a.clone()), HostValue::Int(i, DType::I64, true)];
        call_on(&Mock::new(), &b, &mut args, &Limits::default())
    };
    let want = floats(&a);
    assert_eq!(float(&call(2).unwrap().0[0]), want[2]);
    assert_eq!(float(&call(-1).unwrap().0[0]), want[4]);
    let e = call(7).unwrap_err();
    assert!(
        matches!(&e, crate::error::RunError::Checked(m)
            if m.starts_with("k.py:5:") && m.contains("index 7 is out of bounds for axis 0 with size 5")),
        "{e}"
    );
}

/// A negative dimension is reported through the status buffer, which host code alone
/// writes here: it stays in host memory (no device buffer, no copy back), and the
/// error still reaches the caller.
#[test]
fn negative_dimensions_through_a_host_status_buffer() {
    let src = "import numpy as np\nimport appy\n\n@appy.jit\ndef mk(a, n):\n    t = np.empty((n, 3))\n    #pragma parallel for\n    for i in range(a.shape[0]):\n        a[i] = 1.0\n    return t\n";
    let file = SourceFile::new("k.py", src);
    let b = Compiler::new()
        .compile_gpu(&file, "mk", &parse_signature("f64[:],int").unwrap(), &Options::default())
        .unwrap_or_else(|d| panic!("{}", d.render()));
    let status = *b.program.params.last().expect("a status parameter");
    assert!(
        b.status.is_some() && !b.program.body.launch_may_use(status),
        "host code alone writes the status"
    );
    let call = |n: i64| {
        let mut args = vec![HostValue::Array(array(vec![4], 1)), HostValue::Int(n, DType::I64, true)];
        let dev = Mock::new();
        let r = call_on(&dev, &b, &mut args, &Limits::default());
        (r, dev)
    };
    let (r, _) = call(2);
    assert_eq!(arr(&r.unwrap().0[0]).shape, vec![2, 3]);
    let (r, _) = call(-2);
    let e = r.unwrap_err();
    assert!(matches!(&e, crate::error::RunError::Checked(m) if m.contains("negative")), "{e}");
}

#[test]
fn returned_arrays() {
    let b = compile("return_scaled", "f32[:],int,float");
    let n = 37usize;
    let x = HostArray::from_f64(DType::F32, vec![n], &values(n, 3, -2.0, 2.0));
    let args = || {
        [
            HostValue::Array(x.clone()),
            HostValue::Int(n as i64, DType::I64, true),
            HostValue::Float(0.5, DType::F64, true),
        ]
    };
    let dev = Mock::new();
    let (r, _) = call_on(&dev, &b, &mut args(), &Limits::default()).unwrap();
    // The mock kernel computed nothing: the result is what the device buffer held, all
    // of it downloaded.
    assert_eq!(arr(&r[0]).shape, vec![n]);
    let opts = RunOptions {
        results_on_device: true,
        interrupt: None,
        return_early: false,
    };
    let dev = Mock::new();
    let kernels = vec![(); b.kernels.len()];
    let (r, _) = run(&dev, &kernels, &b, &mut args(), &opts, &Limits::default()).unwrap();
    let HostValue::Device { ptr, dtype, shape } = &r[0] else {
        panic!("expected a device result, got {:?}", r[0]);
    };
    assert_eq!((*dtype, shape.clone()), (DType::F32, vec![n]));
    // The caller's buffer is live and readable.
    let mut bytes = vec![0u8; n * 4];
    dev.read(*ptr, &mut bytes).unwrap();
}

/// With `return_early`, a call on device arrays returns without waiting for its
/// kernels; one with a host array, or without the option, waits.
#[test]
fn calls_on_device_arrays_may_return_early() {
    let b = compile("interior", "f64[:,:],f64[:,:],int,int");
    let (m, n) = (6usize, 9usize);
    let run_with = |device_a: bool, early: bool| {
        let dev = Mock::new();
        let a = if device_a {
            device_f64(&dev, vec![m, n]).0
        } else {
            HostValue::Array(HostArray::zeros(DType::F64, vec![m, n]))
        };
        let mut args = [
            a,
            device_f64(&dev, vec![m, n]).0,
            HostValue::Int(m as i64, DType::I64, true),
            HostValue::Int(n as i64, DType::I64, true),
        ];
        let opts = RunOptions {
            results_on_device: true,
            interrupt: None,
            return_early: early,
        };
        let kernels = vec![(); b.kernels.len()];
        run(&dev, &kernels, &b, &mut args, &opts, &Limits::default()).unwrap();
        assert_eq!(dev.launched.get(), 1);
        dev.synced.get()
    };
    assert_eq!(run_with(true, true), 0);
    assert!(run_with(true, false) > 0);
    assert!(run_with(false, true) > 0);
}

/// An array with constant dimensions: canonicalisation makes its allocation static and
/// casts it back (`memref.cast`), which the host program runs as the same buffer.
#[test]
fn casts_between_static_and_dynamic_shapes() {
    let b = compile("constant_dims", "f64[:]");
    let n = 5usize;
    let x = HostArray::from_f64(DType::F64, vec![n], &values(n, 4, -1.0, 1.0));
    let dev = Mock::new();
    let (r, _) = call_on(&dev, &b, &mut [HostValue::Array(x)], &Limits::default()).unwrap();
    assert_eq!(arr(&r[0]).shape, vec![2, n, 3]);
    assert_eq!(arr(&r[0]).dtype, DType::I32);
}

/// The executor's cost per call and per launch on host-loop-heavy programs (NPBench's
/// time-stepped kernels on small sizes), against the mock device, whose launches and
/// copies cost next to nothing: what remains is the host program's interpretation,
/// residency bookkeeping and argument marshalling. Run with
/// `cargo test --release -p appy-runtime --lib host_overhead -- --ignored --nocapture`.
#[test]
#[ignore]
fn host_overhead() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../benchmarks/npbench/kernels.py");
    let file = SourceFile::read(std::path::Path::new(path)).unwrap();
    let c = Compiler::new();
    let cases: [(&str, &str, Vec<Vec<usize>>, i64); 3] = [
        ("jacobi_2d", "int,f64[:,:],f64[:,:]", vec![vec![16, 16], vec![16, 16]], 500),
        ("heat_3d", "int,f64[:,:,:],f64[:,:,:]", vec![vec![8, 8, 8], vec![8, 8, 8]], 500),
        (
            "fdtd_2d",
            "int,f64[:,:],f64[:,:],f64[:,:],f64[:]",
            vec![vec![16, 20], vec![16, 20], vec![16, 20], vec![500]],
            500,
        ),
    ];
    for (func, sig, shapes, steps) in cases {
        let b = c
            .compile_gpu(&file, func, &parse_signature(sig).unwrap(), &Options::default())
            .unwrap_or_else(|d| panic!("{}", d.render()));
        let kernels = vec![(); b.kernels.len()];
        for resident in [false, true] {
            let mut dev = Mock::new();
            dev.quiet = true;
            let mut args = vec![HostValue::Int(steps, DType::I64, true)];
            for (k, s) in shapes.iter().enumerate() {
                let a = array(s.clone(), k as u64);
                args.push(if resident {
                    use crate::device::Device;
                    let p = dev.malloc(a.data.len()).unwrap();
                    dev.write(p, &a.data).unwrap();
                    HostValue::Device {
                        ptr: p,
                        dtype: DType::F64,
                        shape: s.clone(),
                    }
                } else {
                    HostValue::Array(a)
                });
            }
            let mut best = f64::INFINITY;
            let mut launches = 0;
            for _ in 0..7 {
                let mut a = args.clone();
                dev.launched.set(0);
                let t0 = std::time::Instant::now();
                run(&dev, &kernels, &b, &mut a, &RunOptions::default(), &Limits::default()).unwrap();
                best = best.min(t0.elapsed().as_secs_f64());
                launches = dev.launched.get();
            }
            println!(
                "host_overhead {func:10} {:8}: {:8.3} ms/call, {launches:5} launches, {:6.2} us/launch",
                if resident { "resident" } else { "host" },
                best * 1e3,
                best * 1e6 / launches.max(1) as f64
            );
        }
    }
}

fn same(g: &HostArray, w: &[f64]) -> bool {
    floats(g).iter().zip(w).all(|(g, w)| close(*g, *w))
}

/// Array names rebound in host code are pointer swaps (`a, b = b, a` in a time loop,
/// `tmp = a; a = b; b = c; c = tmp`, `if flip: a, b = b, a`): each buffer ends with
/// what Python's program wrote into it, and the returned names are the right buffers.
/// (The host runs these loops itself: no kernels, so the mock's memory holds the
/// real values.)
#[test]
// The loops index two buffers of `bufs` at once.
#[allow(clippy::needless_range_loop)]
fn rebound_array_names_swap_buffers() {
    let dev = Mock::new();
    // The 1-D Jacobi ping-pong, for even and odd step counts and none.
    let b = compile("ping_pong_host", "f64[:],f64[:],int,int");
    for (n, steps) in [(1usize, 1i64), (2, 3), (11, 0), (11, 1), (11, 4), (13, 7)] {
        let (a0, b0) = (array(vec![n], 3), array(vec![n], 4));
        let mut args = [
            HostValue::Array(a0.clone()),
            HostValue::Array(b0.clone()),
            HostValue::Int(n as i64, DType::I64, true),
            HostValue::Int(steps, DType::I64, true),
        ];
        let (r, _) = call_on(&dev, &b, &mut args, &Limits::default()).unwrap();
        let mut bufs = [floats(&a0), floats(&b0)];
        let (mut ia, mut ib) = (0, 1);
        for _ in 0..steps {
            for i in 1..n.saturating_sub(1) {
                bufs[ib][i] = (bufs[ia][i - 1] + bufs[ia][i] + bufs[ia][i + 1]) / 3.0;
            }
            (ia, ib) = (ib, ia);
        }
        assert!(same(arr(&r[0]), &bufs[ia]), "return, n={n} steps={steps}");
        assert!(same(arr(&args[0]), &bufs[0]), "a, n={n} steps={steps}");
        assert!(same(arr(&args[1]), &bufs[1]), "b, n={n} steps={steps}");
    }
    // A rotation of three names.
    let b = compile("rotate", "f64[:],f64[:],f64[:],int,int");
    for steps in [0i64, 1, 2, 3, 5] {
        let n = 7;
        let a0: Vec<HostArray> = (0..3).map(|k| array(vec![n], 10 + k)).collect();
        let mut args = [
            HostValue::Array(a0[0].clone()),
            HostValue::Array(a0[1].clone()),
            HostValue::Array(a0[2].clone()),
            HostValue::Int(n as i64, DType::I64, true),
            HostValue::Int(steps, DType::I64, true),
        ];
        let (r, _) = call_on(&dev, &b, &mut args, &Limits::default()).unwrap();
        let mut bufs: Vec<Vec<f64>> = a0.iter().map(floats).collect();
        let (mut ia, mut ib, mut ic) = (0usize, 1usize, 2usize);
        for _ in 0..steps {
            for i in 0..n {
                bufs[ic][i] = bufs[ia][i] + 2.0 * bufs[ib][i];
            }
            (ia, ib, ic) = (ib, ic, ia);
        }
        for (k, buf) in bufs.iter().enumerate() {
            assert!(same(arr(&args[k]), buf), "buffer {k}, steps={steps}");
        }
        for (k, want) in [ia, ib, ic].into_iter().enumerate() {
            assert!(same(arr(&r[k]), &bufs[want]), "result {k}, steps={steps}");
        }
    }
    // A branch that swaps, then an alias written through.
    let b = compile("branch_alias", "f64[:],f64[:],int,int");
    for flip in [0i64, 1] {
        let n = 5;
        let (a0, b0) = (array(vec![n], 21), array(vec![n], 22));
        let mut args = [
            HostValue::Array(a0.clone()),
            HostValue::Array(b0.clone()),
            HostValue::Int(n as i64, DType::I64, true),
            HostValue::Int(flip, DType::I64, true),
        ];
        let (r, _) = call_on(&dev, &b, &mut args, &Limits::default()).unwrap();
        let mut bufs = [floats(&a0), floats(&b0)];
        let (ia, ib) = if flip > 0 { (1, 0) } else { (0, 1) };
        for i in 0..n {
            bufs[ia][i] += bufs[ib][i];
        }
        assert!(same(arr(&r[0]), &bufs[ia]), "return, flip={flip}");
        assert!(same(arr(&args[0]), &bufs[0]), "a, flip={flip}");
        assert!(same(arr(&args[1]), &bufs[1]), "b, flip={flip}");
    }
}

/// The kernels of a ping-pong time loop get the buffers swapped at every step: the
/// array each launch reads is the one the previous launch wrote.
#[test]
fn rebound_array_names_reach_the_kernels() {
    let b = compile("ping_pong", "f64[:],f64[:],int,int");
    let n = 11usize;
    let dev = Mock::new();
    let mut args = [
        HostValue::Array(array(vec![n], 1)),
        HostValue::Array(array(vec![n], 2)),
        HostValue::Int(n as i64, DType::I64, true),
        HostValue::Int(4, DType::I64, true),
    ];
    call_on(&dev, &b, &mut args, &Limits::default()).unwrap();
    let launches = dev.launches();
    assert_eq!(launches.len(), 4);
    // The kernel's parameters: four indices, then `a` and `b` as memref descriptors
    // (allocated and aligned pointers, offset, size, stride), then two indices.
    let ptrs: Vec<(u64, u64)> = launches.iter().map(|l| (l.3[5], l.3[10])).collect();
    for w in ptrs.windows(2) {
        assert_ne!(w[0].0, w[0].1, "{ptrs:?}");
        assert_eq!(w[1], (w[0].1, w[0].0), "each step reads what the last one wrote: {ptrs:?}");
    }
}

/// A function returning one of its array arguments (after rebinding names) says which:
/// the caller hands back that object (`return a` is `a` in Python).
#[test]
fn returned_arguments_are_named() {
    let b = compile("ping_pong", "f64[:],f64[:],int,int");
    let n = 9usize;
    for (steps, which) in [(2i64, 0usize), (3, 1)] {
        let mut args = [
            HostValue::Array(array(vec![n], 1)),
            HostValue::Array(array(vec![n], 2)),
            HostValue::Int(n as i64, DType::I64, true),
            HostValue::Int(steps, DType::I64, true),
        ];
        let (_, t) = call_on(&Mock::new(), &b, &mut args, &Limits::default()).unwrap();
        assert_eq!(t.returned_args, vec![Some(which)], "{steps} steps");
    }
    // A new array is no argument.
    let b = compile("return_scaled", "f32[:],int,float");
    let mut args = [
        HostValue::Array(HostArray::from_f64(DType::F32, vec![4], &[1.0, 2.0, 3.0, 4.0])),
        HostValue::Int(4, DType::I64, true),
        HostValue::Float(0.5, DType::F64, true),
    ];
    let (_, t) = call_on(&Mock::new(), &b, &mut args, &Limits::default()).unwrap();
    assert_eq!(t.returned_args, vec![None]);
}
