//! `appy-cpu-blas`: on the CPU, `appy.gemm` becomes a call of the host's BLAS.
//!
//! `appy-tensor-library{cpu=1}` turns matrix products of arrays with an identity
//! layout into `appy.gemm` (`C = alpha * op(A) @ op(B) + beta * C` on row-major
//! sub-matrices; with `vec`, `y = alpha * op(A) @ x + beta * y`). This pass replaces each
//! by a call of CBLAS's `?gemm` / `?gemv` (row-major, ILP64: 64-bit integers, the
//! enumerations 32-bit), through a function pointer: the module holds one public
//! `memref<1xi64>` global per routine it calls (`appy_blas_dgemm`, ...), which the
//! runtime fills with the address of the routine in the BLAS library it loaded before
//! the first call ([`appy_ir::blas`]). Compiled code then names no library symbol: the same
//! object serves the execution engine, a cached shared object, and any library, and
//! cannot bind to another BLAS loaded in the process with a different integer width.
//!
//! A sub-matrix starts at `base + (row * ld + col)` elements with `ld` its array's row
//! length (at least 1, as BLAS requires); empty products (`m` or `n` zero) call nothing,
//! and `k = 0` leaves `beta * C`, as BLAS defines. Runs at the `cpu` level, before the
//! upstream lowering to the LLVM dialect.

use crate::{Pass, PassInfo};
use appy_ir::blas::global_name;
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::ops::{Gemm, Potrf, Trsv};
use appy_ir::rewrite::rewrite;
use appy_ir::types::{DType, parse_memref};

/// The pass.
pub struct CpuBlas;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-cpu-blas",
    description: "CPU only: appy.gemm → calls of CBLAS ?gemm/?gemv (ILP64) through function pointers the runtime sets",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(CpuBlas)),
};

/// CBLAS's enumerations.
const ROW_MAJOR: i64 = 101;
const NO_TRANS: i64 = 111;
const TRANS: i64 = 112;
const LOWER: i64 = 122;
const NON_UNIT: i64 = 131;

impl Pass for CpuBlas {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let mut used: Vec<&'static str> = vec![];
        rewrite(m, |rw| -> Result<(), IrError> {
            for f in &mut rw.top {
                if f.name == "func.func" {
                    lower_in(&mut rw.b, f, &mut used)?;
                }
            }
            for name in &used {
                rw.top.insert(
                    0,
                    Op::new("memref.global")
                        .with_attr("sym_name", format!("\"{}\"", global_name(name)))
                        .with_attr("sym_visibility", "\"public\"")
                        .with_attr("type", "memref<1xi64>")
                        .with_attr("initial_value", "dense<0> : tensor<1xi64>"),
                );
            }
            Ok(())
        })
    }
}

/// Runs `f` on a fresh op list of `b`, at `op`'s location, and appends what it built to
/// `out`.
fn emit(b: &mut Builder, op: &Op, out: &mut Vec<Op>, f: impl FnOnce(&mut Builder) -> Result<(), IrError>) -> Result<(), IrError> {
    b.loc = op.loc.clone();
    b.begin();
    let r = f(b);
    out.extend(b.end());
    r
}

/// Lowers the `appy.gemm`, `appy.trsv` and `appy.potrf` ops under `op`.
fn lower_in(b: &mut Builder, op: &mut Op, used: &mut Vec<&'static str>) -> Result<(), IrError> {
    op.rewrite_nested(b, &mut |b, o, out| match o.name.as_str() {
        "appy.gemm" => {
            let g = Gemm::of(&o).ok_or_else(|| IrError::at(&o, "malformed appy.gemm"))?;
            emit(b, &o, out, |b| call(b, &o, &g, used))
        }
        "appy.trsv" => {
            let t = Trsv::of(&o).ok_or_else(|| IrError::at(&o, "malformed appy.trsv"))?;
            emit(b, &o, out, |b| trsv(b, &o, &t, used))
        }
        "appy.potrf" => {
            let p = Potrf::of(&o).ok_or_else(|| IrError::at(&o, "malformed appy.potrf"))?;
            emit(b, &o, out, |b| potrf(b, &o, &p, used))
        }
        _ => {
            out.push(o);
            Ok(())
        }
    })
}

/// The address of element (`row`, `col`) of the 2-D memref `mem` (or of element `row`
/// of a 1-D one) as an `!llvm.ptr`, and its row length (1 for a vector).
fn element_ptr(b: &mut Builder, mem: Value, row: Value, col: Option<Value>, es: i64) -> (Value, Value) {
    let base = b.op1("memref.extract_aligned_pointer_as_index", &[mem], "index", &[]);
    let base = b.op1("arith.index_cast", &[base], "i64", &[]);
    let (off, ld) = match col {
        Some(col) => {
            let one = b.index(1);
            let d1 = b.op1("memref.dim", &[mem, one], "index", &[]);
            let d1 = b.op1("arith.index_cast", &[d1], "i64", &[]);
            let c1 = b.int(1, "i64");
            let ld = b.bin("arith.maxsi", d1, c1);
            let r = b.bin("arith.muli", row, ld);
            (b.bin("arith.addi", r, col), ld)
        }
        None => (row, b.int(1, "i64")),
    };
    let size = b.int(es, "i64");
    let bytes = b.bin("arith.muli", off, size);
    let addr = b.bin("arith.addi", base, bytes);
    (b.op1("llvm.inttoptr", &[addr], "!llvm.ptr", &[]), ld)
}

/// The call replacing `g`, guarded by `m > 0 && n > 0`.
fn call(b: &mut Builder, o: &Op, g: &Gemm, used: &mut Vec<&'static str>) -> Result<(), IrError> {
    let (fty, es, prefix) = float_of(b, o, g.mems[0])?;
    let routine: &'static str = match (prefix, g.vec) {
        ('d', false) => "dgemm",
        ('s', false) => "sgemm",
        ('d', true) => "dgemv",
        _ => "sgemv",
    };
    let [m, n, k] = g.sizes;
    let idx = g.offsets;
    let scalar = |b: &mut Builder, v: Value| {
        if fty == "f32" && b.m.ty(v) == "f64" {
            b.op1("arith.truncf", &[v], "f32", &[])
        } else {
            v
        }
    };
    // The body, built first, then wrapped in the guard.
    b.begin();
    let alpha = scalar(b, g.alpha);
    let beta = scalar(b, g.beta);
    let order = b.int(ROW_MAJOR, "i32");
    let tr = |b: &mut Builder, t: bool| b.int(if t { TRANS } else { NO_TRANS }, "i32");
    let args: Vec<Value> = if g.vec {
        // y[idx0 ..] = alpha * op(A[idx2.., idx3..]) @ x[idx4 ..] + beta * y; A as stored
        // is (k x m) when transposed, (m x k) otherwise.
        let (pa, lda) = element_ptr(b, g.mems[1], idx[2], Some(idx[3]), es);
        let (px, _) = element_ptr(b, g.mems[2], idx[4], None, es);
        let (py, _) = element_ptr(b, g.mems[0], idx[0], None, es);
        let (rows, cols) = if g.trans_a { (k, m) } else { (m, k) };
        let t = tr(b, g.trans_a);
        let one = b.int(1, "i64");
        vec![order, t, rows, cols, alpha, pa, lda, px, one, beta, py, one]
    } else {
        let (pc, ldc) = element_ptr(b, g.mems[0], idx[0], Some(idx[1]), es);
        let (pa, lda) = element_ptr(b, g.mems[1], idx[2], Some(idx[3]), es);
        let (pb, ldb) = element_ptr(b, g.mems[2], idx[4], Some(idx[5]), es);
        let ta = tr(b, g.trans_a);
        let tb = tr(b, g.trans_b);
        vec![order, ta, tb, m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc]
    };
    let f = routine_ptr(b, routine, used);
    indirect_call(b, f, &args, None);
    b.push(Builder::yield_op(&[]));
    let body = b.end();
    // Guard: an empty product calls nothing.
    let z = b.int(0, "i64");
    let mp = b.cmpi(appy_ir::build::IPred::Sgt, m, z);
    let np = if g.vec { mp } else { b.cmpi(appy_ir::build::IPred::Sgt, n, z) };
    let both = b.bin("arith.andi", mp, np);
    b.if_op(both, body, None);
    Ok(())
}

/// `llvm.call` of the function at address `f` with `args`, defining `result` if given.
fn indirect_call(b: &mut Builder, f: Value, args: &[Value], result: Option<Value>) {
    b.push(
        Op::new("llvm.call")
            .with_operands(std::iter::once(f).chain(args.iter().copied()))
            .with_results(result)
            .with_attr("operandSegmentSizes", format!("array<i32: {}, 0>", args.len() + 1))
            .with_attr("op_bundle_sizes", "array<i32>"),
    );
}

/// The element type of memref `m` as (`f64`/`f32`, bytes, BLAS prefix).
fn float_of(b: &Builder, o: &Op, m: Value) -> Result<(&'static str, i64, char), IrError> {
    match parse_memref(b.m.ty(m)).map(|(d, _)| d) {
        Some(DType::F64) => Ok(("f64", 8, 'd')),
        Some(DType::F32) => Ok(("f32", 4, 's')),
        other => Err(IrError::at(o, format!("{} of {other:?} has no BLAS routine", o.name))),
    }
}

/// The address in the global of `routine` (marking it used), as an `!llvm.ptr`.
fn routine_ptr(b: &mut Builder, routine: &'static str, used: &mut Vec<&'static str>) -> Value {
    if !used.contains(&routine) {
        used.push(routine);
    }
    let slot = b.op1(
        "memref.get_global",
        &[],
        "memref<1xi64>",
        &[("name", format!("@{}", global_name(routine)))],
    );
    let zero = b.index(0);
    let addr = b.load(slot, &[zero]);
    b.op1("llvm.inttoptr", &[addr], "!llvm.ptr", &[])
}

/// `appy.trsv(L, x, b, n)`: `x[:n] = b[:n]` (when b is another array), then CBLAS
/// `?trsv` (row-major, lower, no transpose, non-unit diagonal) on x; nothing for n <= 0.
fn trsv(b: &mut Builder, o: &Op, t: &Trsv, used: &mut Vec<&'static str>) -> Result<(), IrError> {
    let [l, x, rhs] = t.mems;
    let (_, es, prefix) = float_of(b, o, l)?;
    let routine: &'static str = if prefix == 'd' { "dtrsv" } else { "strsv" };
    let z = b.int(0, "i64");
    let positive = b.cmpi(appy_ir::build::IPred::Sgt, t.n, z);
    b.begin();
    if rhs != x {
        // x[:n] = b[:n]
        let c0 = b.index(0);
        let c1 = b.index(1);
        let n = b.to_index(t.n);
        let i = b.m.value("index");
        b.begin();
        let v = b.load(rhs, &[i]);
        b.store(v, x, &[i]);
        b.push(Builder::yield_op(&[]));
        let body = b.end();
        b.push(
            Op::new("scf.for")
                .with_operands([c0, n, c1])
                .with_region(Builder::region(vec![i], body)),
        );
    }
    let zero = b.int(0, "i64");
    let (pl, ldl) = element_ptr(b, l, zero, Some(zero), es);
    let (px, _) = element_ptr(b, x, zero, None, es);
    let f = routine_ptr(b, routine, used);
    let order = b.int(ROW_MAJOR, "i32");
    let lower = b.int(LOWER, "i32");
    let notrans = b.int(NO_TRANS, "i32");
    let diag = b.int(NON_UNIT, "i32");
    let one = b.int(1, "i64");
    indirect_call(b, f, &[order, lower, notrans, diag, t.n, pl, ldl, px, one], None);
    b.push(Builder::yield_op(&[]));
    let body = b.end();
    b.if_op(positive, body, None);
    Ok(())
}

/// `%ok = appy.potrf(A, n)`: the runtime's factorisation (`appy_blas_?potrf`:
/// `info = f(A, n, lda, rows)`, LAPACK on a copy of the lower triangle, written back
/// only when it succeeded), `ok` when `info` is 0.
fn potrf(b: &mut Builder, o: &Op, p: &Potrf, used: &mut Vec<&'static str>) -> Result<(), IrError> {
    let (_, es, prefix) = float_of(b, o, p.a)?;
    let routine: &'static str = if prefix == 'd' { "dpotrf" } else { "spotrf" };
    let zero = b.int(0, "i64");
    let (pa, lda) = element_ptr(b, p.a, zero, Some(zero), es);
    let c0 = b.index(0);
    let rows = b.op1("memref.dim", &[p.a, c0], "index", &[]);
    let rows = b.op1("arith.index_cast", &[rows], "i64", &[]);
    let f = routine_ptr(b, routine, used);
    let info = b.m.value("i64");
    indirect_call(b, f, &[pa, p.n, lda, rows], Some(info));
    match o.results.first() {
        Some(ok) => {
            let z = b.int(0, "i64");
            b.push(
                Op::new("arith.cmpi")
                    .with_operands([info, z])
                    .with_results([*ok])
                    .with_attr("predicate", "0 : i64"),
            );
        }
        None => return Err(IrError::at(o, "appy.potrf on the CPU needs its `ok` result")),
    }
    Ok(())
}
