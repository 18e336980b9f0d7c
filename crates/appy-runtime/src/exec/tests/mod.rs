//! The executor against a device in host memory ([`mock::Mock`]): scalar semantics,
//! host loops, element access, residency bookkeeping, tiling and library operands,
//! without a GPU. Programs are compiled from Python sources by the compiler (feature
//! `jit`) or built by hand where the frontend never emits the op.

mod mock;
#[cfg(feature = "jit")]
mod programs;
#[cfg(feature = "jit")]
mod split;
#[cfg(feature = "jit")]
mod strided;

use super::{Limits, RunOptions, Timing, run};
use crate::array::{HostArray, HostValue};
use crate::error::{RunError, RunResult};
use appy_ir::build::Builder;
use appy_ir::bundle::{BUNDLE_VERSION, Bundle};
use appy_ir::ir::{Op, Region};
use appy_ir::types::{ArgType, DType};
use mock::Mock;

/// Calls `b` on a fresh mock device.
fn call_on(dev: &Mock, b: &Bundle, args: &mut [HostValue], limits: &Limits) -> RunResult<(Vec<HostValue>, Timing)> {
    let kernels = vec![(); b.kernels.len()];
    run(dev, &kernels, b, args, &RunOptions::default(), limits)
}

/// A bundle whose host function is built by `body` (a `func.func` with no
/// parameters), returning values of types `results`.
fn hand_built(results: &[ArgType], body: impl FnOnce(&mut Builder) -> Vec<appy_ir::ir::Value>) -> Bundle {
    let mut b = Builder::new();
    b.begin();
    let rets = body(&mut b);
    b.push(Op::new("func.return").with_operands(rets));
    let ops = b.end();
    let tys: Vec<String> = results.iter().map(|t| t.mlir()).collect();
    let f = Op::new("func.func")
        .with_attr("sym_name", "\"f\"")
        .with_attr("function_type", format!("() -> ({})", tys.join(", ")))
        .with_region(Region::single(appy_ir::ir::Block { args: vec![], ops }));
    b.m.body_mut().push(f);
    let program = appy_ir::host::lower(&b.m, &[]).unwrap();
    Bundle {
        version: BUNDLE_VERSION,
        func: "f".into(),
        params: vec![],
        args: vec![],
        results: results.to_vec(),
        status: None,
        mvl: 1024,
        host: b.m,
        program,
        ptx: String::new(),
        kernels: vec![],
        variants: vec![],
        choice: 0,
        vector_code: false,
    }
}

fn int(v: &HostValue) -> i64 {
    match v {
        HostValue::Int(i, _, _) => *i,
        HostValue::Bool(b) => *b as i64,
        other => panic!("expected an integer, got {other:?}"),
    }
}

const I64: ArgType = ArgType::Scalar {
    dtype: DType::I64,
    weak: false,
};
const I32: ArgType = ArgType::Scalar {
    dtype: DType::I32,
    weak: false,
};

/// `arith.divui/remui/maxui/minui/ceildivui/shrui` and unsigned comparisons treat
/// their operands' bits as unsigned numbers of their width.
#[test]
fn unsigned_integer_ops() {
    let ops = [
        "arith.divui",
        "arith.remui",
        "arith.maxui",
        "arith.minui",
        "arith.ceildivui",
        "arith.shrui",
    ];
    for (ty, t, a, b) in [
        ("i64", I64, -8i64, 3i64),
        ("i32", I32, -8, 3),
        ("i64", I64, 7, -1),
        ("i32", I32, 100, 7),
    ] {
        let mut results = vec![t; ops.len()];
        results.push(ArgType::Scalar {
            dtype: DType::Bool,
            weak: false,
        });
        let bundle = hand_built(&results, |bl| {
            let (x, y) = (bl.int(a, ty), bl.int(b, ty));
            let mut out: Vec<_> = ops.iter().map(|o| bl.bin(o, x, y)).collect();
            out.push(bl.cmpi(appy_ir::build::IPred::Ult, x, y));
            out
        });
        let dev = Mock::new();
        let (res, _) = call_on(&dev, &bundle, &mut [], &Limits::default()).unwrap();
        let (ua, ub, bits) = if ty == "i32" {
            (a as u32 as u64, b as u32 as u64, 32)
        } else {
            (a as u64, b as u64, 64)
        };
        let back = |u: u64| if bits == 32 { u as u32 as i32 as i64 } else { u as i64 };
        let want = [ua / ub, ua % ub, ua.max(ub), ua.min(ub), ua.div_ceil(ub), ua >> (ub % bits)];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(int(&res[k]), back(*w), "{} {ty} {a} {b}", ops[k]);
        }
        assert_eq!(int(&res[ops.len()]), (ua < ub) as i64, "cmpi ult {ty} {a} {b}");
    }
}

/// `arith.bitcast` between a float and the integer of its width keeps the bits.
#[test]
fn bitcasts_keep_the_bits() {
    let (x64, x32) = (-1.5e-300f64, 3.25e-30f32);
    let (i64v, i32v) = (0x4009_21FB_5444_2D18i64, 0x3F9D_70A4i32 as i64);
    let f64t = ArgType::Scalar {
        dtype: DType::F64,
        weak: false,
    };
    let f32t = ArgType::Scalar {
        dtype: DType::F32,
        weak: false,
    };
    let bundle = hand_built(&[I64, I32, f64t, f32t], |bl| {
        let (a, b) = (bl.float(x64, "f64"), bl.float(x32 as f64, "f32"));
        let (c, d) = (bl.int(i64v, "i64"), bl.int(i32v, "i32"));
        vec![
            bl.op1("arith.bitcast", &[a], "i64", &[]),
            bl.op1("arith.bitcast", &[b], "i32", &[]),
            bl.op1("arith.bitcast", &[c], "f64", &[]),
            bl.op1("arith.bitcast", &[d], "f32", &[]),
        ]
    });
    let (res, _) = call_on(&Mock::new(), &bundle, &mut [], &Limits::default()).unwrap();
    assert_eq!(int(&res[0]), x64.to_bits() as i64);
    assert_eq!(int(&res[1]) as u32, x32.to_bits());
    let float = |v: &HostValue| match v {
        HostValue::Float(f, _, _) => *f,
        other => panic!("expected a float, got {other:?}"),
    };
    assert_eq!(float(&res[2]).to_bits(), i64v as u64);
    assert_eq!((float(&res[3]) as f32).to_bits(), i32v as u32);
}

/// Integer division by zero in host code is an error, not a crash.
#[test]
fn division_by_zero_is_an_error() {
    let bundle = hand_built(&[I64], |bl| {
        let (x, y) = (bl.int(7, "i64"), bl.int(0, "i64"));
        vec![bl.bin("arith.floordivsi", x, y)]
    });
    let e = call_on(&Mock::new(), &bundle, &mut [], &Limits::default()).unwrap_err();
    assert!(matches!(e, RunError::Program(ref m) if m.contains("division by zero")), "{e}");
}

/// Arguments that do not match the bundle's signature are rejected.
#[test]
fn signature_mismatch() {
    let bundle = hand_built(&[I64], |bl| vec![bl.int(1, "i64")]);
    let mut args = [HostValue::Int(1, DType::I64, true)];
    let e = call_on(&Mock::new(), &bundle, &mut args, &Limits::default()).unwrap_err();
    assert!(matches!(e, RunError::Arguments(_)), "{e}");
}

/// A host loop asks for interruptions and stops when asked.
#[test]
fn interrupt_stops_a_host_loop() {
    let bundle = hand_built(&[I64], |bl| {
        let (lb, ub, st) = (bl.index(0), bl.index(i64::MAX / 2), bl.index(1));
        let zero = bl.int(0, "i64");
        let iv = bl.m.value("index");
        let acc = bl.m.value("i64");
        let res = bl.m.value("i64");
        bl.begin();
        let one = bl.int(1, "i64");
        let next = bl.bin("arith.addi", acc, one);
        bl.push(Builder::yield_op(&[next]));
        let body = bl.end();
        bl.push(
            Op::new("scf.for")
                .with_operands([lb, ub, st, zero])
                .with_results([res])
                .with_region(Builder::region(vec![iv, acc], body)),
        );
        vec![res]
    });
    let dev = Mock::new();
    let kernels: Vec<()> = vec![];
    let calls = std::cell::Cell::new(0);
    let stop = || {
        calls.set(calls.get() + 1);
        true
    };
    let opts = RunOptions {
        results_on_device: false,
        interrupt: Some(&stop),
        return_early: false,
    };
    let t0 = std::time::Instant::now();
    let e = run(&dev, &kernels, &bundle, &mut [], &opts, &Limits::default()).unwrap_err();
    assert_eq!(e, RunError::Interrupted);
    assert_eq!(calls.get(), 1);
    assert!(t0.elapsed().as_secs() < 10);
}

/// Host arrays of a call are freed (pooled) at its end.
#[test]
fn host_array_arguments_are_released() {
    let bundle = hand_built(&[], |_| vec![]);
    let mut b = bundle;
    b.args = vec![ArgType::Array {
        dtype: DType::F64,
        rank: 1,
    }];
    b.params = vec!["a".into()];
    // The host function takes the array.
    let v = b.host.value("memref<?xf64>");
    let f = b.host.body_mut().iter_mut().find(|o| o.name == "func.func").unwrap();
    f.regions[0].blocks[0].args.push(v);
    b.program = appy_ir::host::lower(&b.host, &[]).unwrap();
    let dev = Mock::new();
    let mut args = [HostValue::Array(HostArray::from_f64(DType::F64, vec![3], &[1.0, 2.0, 3.0]))];
    call_on(&dev, &b, &mut args, &Limits::default()).unwrap();
    // Nothing was accessed: nothing moved.
    assert_eq!(dev.copied(), (0, 0));
    // A second call reuses the pooled buffer.
    let before = dev.live();
    call_on(&dev, &b, &mut args, &Limits::default()).unwrap();
    assert_eq!(dev.live(), before);
}
