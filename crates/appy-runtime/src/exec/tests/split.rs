//! Launches split between mock devices ([`crate::exec::run_split`]): the ranges each
//! device runs, the halos that move between devices at every step (and nothing else),
//! launches whose ranges write the same elements kept whole, and host reads served by
//! the device that wrote the element. The results themselves are checked against NumPy
//! on host devices that compute (the `cases` suite runs every case split three ways).

use super::mock::{Event, Mock};
use super::programs::array;
use crate::array::HostValue;
use crate::exec::{RunOptions, Timing, run_split};
use appy_compiler::{Compiler, Options};
use appy_ir::bundle::Bundle;
use appy_ir::diag::SourceFile;
use appy_ir::types::{DType, parse_signature};

const SRC: &str = r#"
import numpy as np
import appy

@appy.jit
def jacobi_2d(A, B, T):
    n, m = A.shape
    for t in range(T):
        #pragma parallel for
        for i in range(1, n - 1):
            B[i, 1:m - 1] = 0.2 * (A[i, 1:m - 1] + A[i, :m - 2] + A[i, 2:] + A[i + 1, 1:m - 1] + A[i - 1, 1:m - 1])
        #pragma parallel for
        for i in range(1, n - 1):
            A[i, 1:m - 1] = 0.2 * (B[i, 1:m - 1] + B[i, :m - 2] + B[i, 2:] + B[i + 1, 1:m - 1] + B[i - 1, 1:m - 1])

@appy.jit
def sum_then_scale(x, T):
    total = 0.0
    for t in range(T):
        s = 0.0
        #pragma parallel for simd shared(s)
        for i in range(x.shape[0]):
            s += x[i]
        #pragma parallel for simd
        for i in range(x.shape[0]):
            x[i] = x[i] * 0.5
        total += s + x[x.shape[0] - 1]
    return total

@appy.jit
def scatter(x, idx, out):
    #pragma parallel for simd
    for i in range(x.shape[0]):
        out[idx[i]] = x[i]

@appy.jit
def histogram(x, h):
    #pragma parallel for
    for i in range(x.shape[0]):
        #pragma atomic
        h[i % 8] += x[i]
"#;

fn compile(func: &str, sig: &str) -> Bundle {
    let file = SourceFile::new("t.py", SRC);
    Compiler::new()
        .compile_gpu(&file, func, &parse_signature(sig).unwrap(), &Options::default())
        .unwrap_or_else(|d| panic!("{}", d.render()))
}

/// Runs `b` split between `devs` with `weights`.
fn split_on(devs: &[Mock], weights: &[f64], b: &Bundle, args: &mut [HostValue]) -> Timing {
    let kernels = vec![(); b.kernels.len()];
    let pairs: Vec<(&Mock, &[()])> = devs.iter().map(|d| (d, &kernels[..])).collect();
    run_split(&pairs, weights, b, args, &RunOptions::default(), &Default::default())
        .unwrap()
        .1
}

/// The launches a device ran: (groups, first group).
fn launches(dev: &Mock) -> Vec<(u32, u64)> {
    dev.log
        .borrow()
        .iter()
        .filter_map(|e| match e {
            Event::Launch(_, grid, _, cells) => Some((grid[0], *cells.last().unwrap())),
            _ => None,
        })
        .collect()
}

/// Bytes a device received from other devices, per copy.
fn peer_copies(dev: &Mock) -> Vec<usize> {
    dev.log
        .borrow()
        .iter()
        .filter_map(|e| match e {
            Event::Peer(_, _, n) => Some(*n),
            _ => None,
        })
        .collect()
}

fn htod_bytes(dev: &Mock) -> usize {
    dev.log
        .borrow()
        .iter()
        .map(|e| if let Event::Htod(_, n) = e { *n } else { 0 })
        .sum()
}

#[test]
fn each_device_runs_its_range_and_halos_move_between_them() {
    let b = compile("jacobi_2d", "f64[:,:],f64[:,:],int");
    let (n, m, steps) = (50usize, 64usize, 4i64);
    let mut args = [
        HostValue::Array(array(vec![n, m], 1)),
        HostValue::Array(array(vec![n, m], 2)),
        HostValue::Int(steps, DType::I64, true),
    ];
    let devs = [Mock::new(), Mock::new()];
    let t = split_on(&devs, &[], &b, &mut args);
    // 48 interior rows, one group each: rows 1..25 on device 0, 25..49 on device 1, at
    // every launch.
    assert_eq!(launches(&devs[0]), vec![(24, 0); 2 * steps as usize]);
    assert_eq!(launches(&devs[1]), vec![(24, 24); 2 * steps as usize]);
    assert_eq!(t.split, (2 * steps as usize, 0));
    // Each device's rows come from the host once, at the first launch that needs
    // them: to device 0, A's rows 0..26 and B's written part of rows 1..25, then B's
    // row 0 and the boundary columns of rows 1..26 (the second sweep reads them).
    let row = m * 8;
    let inner = (m - 2) * 8;
    assert_eq!(htod_bytes(&devs[0]), 26 * row + 24 * inner + row + 25 * 16);
    // Device 1 takes rows 24 and 25 of A from device 0, which holds them already, at
    // the first launch, and B's row 24 and the boundary elements of row 25 at the
    // second (device 0 took them from the host just before).
    assert_eq!(htod_bytes(&devs[1]), 24 * row + 24 * inner + 24 * 16 + row - 16);
    assert_eq!(peer_copies(&devs[1])[..4], [2 * row, row, 8, 8]);
    // From then on, each launch moves the written part of one halo row each way and
    // nothing else: the other device's first (last) interior row.
    assert_eq!(peer_copies(&devs[0]), vec![inner; 2 * steps as usize - 1]);
    assert_eq!(peer_copies(&devs[1])[4..], vec![inner; 2 * steps as usize - 2]);
    assert_eq!(
        t.peer_bytes,
        peer_copies(&devs[0]).iter().chain(&peer_copies(&devs[1])).sum::<usize>()
    );
}

#[test]
fn ranges_follow_the_weights_and_skip_empty_ones() {
    let b = compile("jacobi_2d", "f64[:,:],f64[:,:],int");
    let mut args = [
        HostValue::Array(array(vec![50, 8], 1)),
        HostValue::Array(array(vec![50, 8], 2)),
        HostValue::Int(1, DType::I64, true),
    ];
    let devs = [Mock::new(), Mock::new(), Mock::new()];
    split_on(&devs, &[1.0, 1.0, 2.0], &b, &mut args);
    assert_eq!(launches(&devs[0]), vec![(12, 0); 2]);
    assert_eq!(launches(&devs[1]), vec![(12, 12); 2]);
    assert_eq!(launches(&devs[2]), vec![(24, 24); 2]);
    // Three rows: one interior row, fewer groups than devices: one device runs it.
    let mut args = [
        HostValue::Array(array(vec![3, 8], 1)),
        HostValue::Array(array(vec![3, 8], 2)),
        HostValue::Int(1, DType::I64, true),
    ];
    let devs = [Mock::new(), Mock::new(), Mock::new()];
    let t = split_on(&devs, &[], &b, &mut args);
    let all: Vec<_> = devs.iter().flat_map(launches).collect();
    assert_eq!(all, vec![(1, 0); 2]);
    assert_eq!(t.split, (0, 0));
}

#[test]
fn reductions_accumulate_privately_and_combine_on_the_host() {
    let b = compile("sum_then_scale", "f64[:],int");
    let n = 10_000;
    let x0 = array(vec![n], 3);
    let mut args = [HostValue::Array(x0.clone()), HostValue::Int(3, DType::I64, true)];
    let devs = [Mock::new(), Mock::new()];
    let t = split_on(&devs, &[], &b, &mut args);
    // Every launch is split (groups of 1024 elements, 5 each): the reduction's too.
    assert_eq!(t.split.1, 0, "{:?}", t.split);
    assert!(t.split.0 >= 6, "{:?}", t.split);
    assert_eq!(launches(&devs[1]).len(), t.split.0);
    // Device 1 accumulates into the identity (its partial-sum buffer filled with -0.0
    // before each reduction launch: one element), and its partial comes back to be
    // combined on the host (one element per step), as does x[n - 1], which it wrote,
    // when the host reads it; its part of x comes back at the end.
    let ident = devs[1].log.borrow().iter().filter(|e| matches!(e, Event::Htod(_, 8))).count();
    assert_eq!(ident, 3);
    let dtoh_1: Vec<usize> = devs[1]
        .log
        .borrow()
        .iter()
        .filter_map(|e| if let Event::Dtoh(_, n) = e { Some(*n) } else { None })
        .collect();
    assert_eq!(dtoh_1.iter().filter(|&&n| n == 8).count(), 6, "{dtoh_1:?}");
    // Nothing of x moves between the devices: each reduces and scales its own half.
    assert_eq!(t.peer_bytes, 0);
}

#[test]
fn launches_whose_ranges_may_write_the_same_elements_run_whole_on_device_0() {
    let b = compile("scatter", "f64[:],i64[:],f64[:]");
    let n = 5000;
    let idx: Vec<f64> = (0..n).map(|i| ((i * 7) % n) as f64).collect();
    let mut args = [
        HostValue::Array(array(vec![n], 4)),
        HostValue::Array(crate::array::HostArray::from_f64(DType::I64, vec![n], &idx)),
        HostValue::Array(array(vec![n], 5)),
    ];
    let devs = [Mock::new(), Mock::new()];
    let t = split_on(&devs, &[], &b, &mut args);
    assert_eq!(t.split, (0, 1));
    assert!(launches(&devs[1]).is_empty());
    assert_eq!(launches(&devs[0]), vec![(5, 0)]);
}
