//! The runtime's compile-and-call API (`appy_runtime::jit::Jit`): one compilation per
//! signature, the persistent compile cache (reused — as native code for the CPU — and
//! rebuilt when corrupt), strided and transposed NumPy-style views passed in place.

use appy_ir::types::DType;
use appy_runtime::{HostArray, HostValue};
use appy_tests::root;
use std::path::PathBuf;

fn examples() -> PathBuf {
    root().join("examples")
}

/// A scratch directory of one test, removed when the test ends, pass or fail.
fn tmp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("appy-jit-{name}-")).tempdir().unwrap()
}

#[test]
fn jit_caches_specialisations() {
    let src = std::fs::read_to_string(examples().join("vector_add.py")).unwrap();
    let mut jit = appy_runtime::jit::Jit::from_source("vector_add.py", &src, appy_runtime::Device::Cpu).with_cache_dir(None);
    for dtype in [DType::F32, DType::F32, DType::F64, DType::F32] {
        let a = HostArray::from_f64(dtype, vec![5], &[1.0, 2.0, 3.0, 4.0, 5.0]);
        let b = HostArray::from_f64(dtype, vec![5], &[0.5, 0.5, 0.5, 0.5, -1.0]);
        let c = HostArray::zeros(dtype, vec![5]);
        let mut args = vec![
            HostValue::Array(a),
            HostValue::Array(b),
            HostValue::Array(c),
            HostValue::Int(5, DType::I64, true),
        ];
        jit.call("vector_add", &mut args).unwrap();
        let HostValue::Array(c) = &args[2] else { unreachable!() };
        assert_eq!((0..5).map(|i| c.get_f64(i)).collect::<Vec<_>>(), vec![1.5, 2.5, 3.5, 4.5, 4.0]);
    }
    assert_eq!(jit.compilations(), 2, "one specialisation per signature");
}

#[test]
fn persistent_cache_is_reused_and_rebuilt_when_corrupt() {
    let scratch = tmp("cache");
    let dir = scratch.path().join("cache");
    let src = std::fs::read_to_string(examples().join("vector_add.py")).unwrap();
    let call = |jit: &mut appy_runtime::jit::Jit| {
        let a = HostArray::from_f64(DType::F64, vec![3], &[1.0, 2.0, 3.0]);
        let mut args = vec![
            HostValue::Array(a.clone()),
            HostValue::Array(a),
            HostValue::Array(HostArray::zeros(DType::F64, vec![3])),
            HostValue::Int(3, DType::I64, true),
        ];
        jit.call("vector_add", &mut args).unwrap();
        let HostValue::Array(c) = &args[2] else { unreachable!() };
        assert_eq!((0..3).map(|i| c.get_f64(i)).collect::<Vec<_>>(), vec![2.0, 4.0, 6.0]);
    };
    let new = || appy_runtime::jit::Jit::from_source("vector_add.py", &src, appy_runtime::Device::Cpu).with_cache_dir(Some(dir.clone()));
    // First use compiles and writes the cache: the entry and its native code.
    let mut j = new();
    call(&mut j);
    assert_eq!((j.compilations(), j.disk_hits()), (1, 0));
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    // `<entry>.json` and `<entry>.<code hash>.so`.
    files.sort_by_key(|p| p.extension().unwrap() == "so");
    assert_eq!(files.len(), 2, "{files:?}");
    let (entry, object) = (files[0].clone(), files[1].clone());
    assert_eq!(entry.extension().unwrap(), "json");
    assert_eq!(object.extension().unwrap(), "so");
    let good = std::fs::read(&entry).unwrap();
    drop(j);
    // A new process (a new Jit) loads the native code: neither appy's passes nor LLVM run.
    let mut j = new();
    call(&mut j);
    assert_eq!((j.compilations(), j.disk_hits(), j.object_hits()), (0, 1, 1));
    // (Unloaded before the file changes: a loaded shared object stays in use.)
    drop(j);
    // Native code that cannot be loaded is rebuilt from the entry's LLVM module.
    std::fs::write(&object, b"not an ELF file").unwrap();
    let mut j = new();
    call(&mut j);
    assert_eq!((j.compilations(), j.disk_hits(), j.object_hits()), (0, 1, 0));
    drop(j);
    let mut j = new();
    call(&mut j);
    assert_eq!(j.object_hits(), 1, "the shared object was written again");
    drop(j);
    // Truncated, garbage, and valid-JSON-but-wrong entries are detected and rebuilt:
    // edited without updating the checksum, or well formed with a valid checksum (as
    // a buggy compiler could write them) but with results, a name or code that do not
    // match the function. A wrong `results` used to make every later run crash.
    let doc: serde_json::Value = serde_json::from_slice(&good).unwrap();
    let key = doc["key"].as_str().unwrap().to_string();
    let edited = |field: &str, v: serde_json::Value, reseal: bool| {
        let mut d = doc.clone();
        d["payload"][field] = v;
        if reseal {
            appy_runtime::cache::entry_text(&key, &d["payload"]).into_bytes()
        } else {
            d.to_string().into_bytes()
        }
    };
    let scalar_f64 = serde_json::json!([{"Scalar": {"dtype": "F64", "weak": false}}]);
    let array_f64 = serde_json::json!([{"Array": {"dtype": "F64", "rank": 2}}, {"Array": {"dtype": "F64", "rank": 1}}]);
    for bad in [
        good[..good.len() / 2].to_vec(),
        b"\x00\x01garbage".to_vec(),
        edited("llvm", "this is not MLIR".into(), false),
        edited("results", scalar_f64.clone(), false),
        edited("results", scalar_f64, true),
        edited("results", array_f64, true),
        edited("name", "other".into(), true),
        edited("llvm", "this is not MLIR".into(), true),
    ] {
        // (The native code stays: it is not the code of an edited entry.)
        std::fs::write(&entry, &bad).unwrap();
        let mut j = new();
        call(&mut j);
        assert_eq!((j.compilations(), j.disk_hits()), (1, 0), "a corrupt entry must be rebuilt");
        let again: serde_json::Value = serde_json::from_slice(&std::fs::read(&entry).unwrap()).unwrap();
        assert!(
            again["payload"]["llvm"].as_str().unwrap().contains("llvm.func"),
            "the entry was rewritten"
        );
    }
}

#[test]
fn strided_and_transposed_views() {
    use appy_runtime::jit::{Jit, ViewArg};
    use ndarray::{Array1, Array2, s};
    let src = "import appy\n\n@appy.jit\ndef scale(a, N):\n    #pragma parallel for simd\n    for i in range(N):\n        a[i] = 2.0 * a[i] + 1.0\n\n\
@appy.jit\ndef row_sum(a, out, M, N):\n    #pragma parallel for\n    for i in range(M):\n        s = 0.0\n        #pragma simd\n        for j in range(N):\n            s += a[i, j]\n        out[i] = s\n";
    let mut jit = Jit::from_source("views.py", src, appy_runtime::Device::Cpu).with_cache_dir(None);
    // Every other element of a base array: a strided view, updated in place.
    let mut base = Array1::from_iter((0..11).map(|i| i as f64));
    let n = base.slice(s![..;2]).len();
    let mut args = vec![
        ViewArg::F64(base.slice_mut(s![..;2]).into_dyn()),
        ViewArg::Scalar(HostValue::Int(n as i64, DType::I64, true)),
    ];
    jit.call_views("scale", &mut args).unwrap();
    drop(args);
    for (i, x) in base.iter().enumerate() {
        let want = if i % 2 == 0 { 2.0 * i as f64 + 1.0 } else { i as f64 };
        assert_eq!(*x, want, "element {i}");
    }
    // A transposed (column-major) view as input.
    let mut m = Array2::from_shape_fn((3, 5), |(i, j)| (i * 10 + j) as f64);
    let mut t = m.view_mut().reversed_axes();
    let mut out = Array1::<f64>::zeros(5);
    let mut args = vec![
        ViewArg::F64(t.view_mut().into_dyn()),
        ViewArg::F64(out.view_mut().into_dyn()),
        ViewArg::Scalar(HostValue::Int(5, DType::I64, true)),
        ViewArg::Scalar(HostValue::Int(3, DType::I64, true)),
    ];
    jit.call_views("row_sum", &mut args).unwrap();
    drop(args);
    for j in 0..5 {
        assert_eq!(out[j], (0..3).map(|i| (i * 10 + j) as f64).sum::<f64>());
    }
    // A reversed 2-D view (negative strides) and a column slice with a step, written in
    // place through their strides.
    let mut m = Array2::from_shape_fn((4, 9), |(i, j)| (i * 10 + j) as f64);
    let mut out = Array1::<f64>::zeros(8);
    let mut args = vec![
        ViewArg::F64(m.slice_mut(s![..;-1, 1..;2]).into_dyn()),
        ViewArg::F64(out.slice_mut(s![..;-2]).into_dyn()),
        ViewArg::Scalar(HostValue::Int(4, DType::I64, true)),
        ViewArg::Scalar(HostValue::Int(4, DType::I64, true)),
    ];
    jit.call_views("row_sum", &mut args).unwrap();
    drop(args);
    for r in 0..4 {
        let want: f64 = (0..4).map(|c| ((3 - r) * 10 + 1 + 2 * c) as f64).sum();
        assert_eq!(out[7 - 2 * r], want, "row {r}");
        assert_eq!(out[6 - 2 * r], 0.0);
    }
    assert_eq!(jit.gathered_view_calls(), 0, "strided views are passed in place, not gathered");
    // A function that returns its argument needs an identity layout: the view is
    // gathered, and the result is still written back through it.
    let src = "import appy\n\n@appy.jit\ndef twice(a, N):\n    #pragma parallel for\n    for i in range(N):\n        a[i] = 2.0 * a[i]\n    return a\n";
    let mut jit = Jit::from_source("ret.py", src, appy_runtime::Device::Cpu).with_cache_dir(None);
    let mut base = Array1::from_iter((0..6).map(|i| i as f64));
    let mut args = vec![
        ViewArg::F64(base.slice_mut(s![..;3]).into_dyn()),
        ViewArg::Scalar(HostValue::Int(2, DType::I64, true)),
    ];
    let ret = jit.call_views("twice", &mut args).unwrap();
    drop(args);
    assert_eq!(base.to_vec(), vec![0.0, 1.0, 2.0, 6.0, 4.0, 5.0]);
    let HostValue::Array(r) = &ret[0] else { panic!("{ret:?}") };
    assert_eq!((r.get_f64(0), r.get_f64(1)), (0.0, 6.0));
    assert_eq!(jit.gathered_view_calls(), 1);
}
