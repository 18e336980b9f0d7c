//! Strided transfers (seed 002 §5.3): launches whose subscripts have constant strides
//! move exactly the elements they touch, packed, in both directions; the rest of the
//! array stays as it was on the host (with `Limits::strided`, `APPY_STRIDED=1`; the
//! mock device runs no kernel: what goes to the device comes back as it went).

use super::mock::Mock;
use super::programs::array;
use super::{Limits, call_on};
use crate::array::HostValue;
use appy_compiler::{Compiler, Options};
use appy_ir::bundle::Bundle;
use appy_ir::diag::SourceFile;
use appy_ir::types::parse_signature;

const SRC: &str = r#"
import appy

@appy.jit
def even(a, out):
    #pragma parallel for simd
    for i in range(out.shape[0]):
        out[i] = 2.0 * a[2 * i]

@appy.jit
def pairs(a, out):
    #pragma parallel for simd
    for i in range(out.shape[0]):
        out[i] = a[3 * i] - a[3 * i + 1]

@appy.jit
def every_other_row(a, out):
    #pragma parallel for
    for i in range(out.shape[0]):
        #pragma simd
        for j in range(out.shape[1]):
            out[i, j] = a[2 * i + 1, j]

@appy.jit
def scatter(a, out):
    #pragma parallel for simd
    for i in range(a.shape[0]):
        out[3 * i + 2] = a[i]
"#;

fn compile(func: &str, sig: &str) -> Bundle {
    Compiler::new()
        .compile_gpu(
            &SourceFile::new("t.py", SRC),
            func,
            &parse_signature(sig).unwrap(),
            &Options::default(),
        )
        .unwrap_or_else(|d| panic!("{}", d.render()))
}

fn floats(v: &HostValue) -> Vec<f64> {
    match v {
        HostValue::Array(a) => (0..a.len()).map(|i| a.get_f64(i)).collect(),
        other => panic!("expected an array, got {other:?}"),
    }
}

/// Runs `func` on arrays of `shapes` on the mock: (bytes to the device, bytes back),
/// checking that every argument comes back as it went.
fn moved(func: &str, sig: &str, shapes: &[Vec<usize>]) -> (usize, usize) {
    let b = compile(func, sig);
    let mut args: Vec<HostValue> = shapes
        .iter()
        .enumerate()
        .map(|(k, s)| HostValue::Array(array(s.clone(), 7 + k as u64)))
        .collect();
    let before: Vec<Vec<f64>> = args.iter().map(floats).collect();
    let dev = Mock::new();
    let strided = Limits {
        strided: true,
        ..Limits::default()
    };
    let (_, t) = call_on(&dev, &b, &mut args, &strided).unwrap();
    for (k, a) in args.iter().enumerate() {
        assert_eq!(floats(a), before[k], "{func}: argument {k} changed");
    }
    assert_eq!(dev.copied(), (t.htod_bytes, t.dtoh_bytes));
    (t.htod_bytes, t.dtoh_bytes)
}

#[test]
fn one_dimensional_stride() {
    // out has 37 elements: a[0], a[2], ..., a[72] go (37 of 80), out goes and comes back.
    assert_eq!(moved("even", "f64[:],f64[:]", &[vec![80], vec![37]]), ((37 + 37) * 8, 37 * 8));
    // One element.
    assert_eq!(moved("even", "f64[:],f64[:]", &[vec![5], vec![1]]), (2 * 8, 8));
}

#[test]
fn interleaved_group() {
    // a[3i] and a[3i+1], i < 29: 58 of 90 elements.
    assert_eq!(moved("pairs", "f64[:],f64[:]", &[vec![90], vec![29]]), ((58 + 29) * 8, 29 * 8));
}

#[test]
fn every_other_row_of_a_matrix() {
    // Rows 1, 3, ..., 11 of a 13x7 matrix: 6 rows of 7.
    assert_eq!(
        moved("every_other_row", "f64[:,:],f64[:,:]", &[vec![13, 7], vec![6, 7]]),
        ((42 + 42) * 8, 42 * 8)
    );
}

#[test]
fn off_by_default_the_boxes_move() {
    let b = compile("even", "f64[:],f64[:]");
    let mut args: Vec<HostValue> = [vec![80], vec![37]]
        .iter()
        .enumerate()
        .map(|(k, s)| HostValue::Array(array(s.clone(), 3 + k as u64)))
        .collect();
    let dev = Mock::new();
    let (_, t) = call_on(&dev, &b, &mut args, &Limits::default()).unwrap();
    // a[0..73) and out, both ways for out.
    assert_eq!((t.htod_bytes, t.dtoh_bytes), ((73 + 37) * 8, 37 * 8));
}

#[test]
fn strided_writes_come_back_alone() {
    // out[3i + 2] for i < 11: 11 of 40 elements go and come back; the others are
    // never touched on the device.
    let (h, d) = moved("scatter", "f64[:],f64[:]", &[vec![11], vec![40]]);
    assert_eq!((h, d), ((11 + 11) * 8, 11 * 8));
}
