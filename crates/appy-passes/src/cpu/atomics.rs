//! Atomic updates (`memref.atomic_rmw`) on the CPU (helpers of `appy-cpu-openmp`).
//!
//! * Outside OpenMP regions nothing runs concurrently: an atomic update is a plain
//!   load, combine and store.
//! * Inside a region, an array that the region only ever updates atomically, with one
//!   associative and commutative operation (`+=` of `shared`-like accumulations,
//!   `#pragma atomic`, detected array reductions such as `a[j] += b[i, j]` in a loop
//!   over `i`), is privatised: each thread updates its own zero-initialised copy with
//!   plain (vectorisable) operations, then adds its copy into the array with one
//!   atomic update per element. The updates are reassociated, as any order of atomic
//!   updates already may. Copies cost memory and a pass over them per thread, so the
//!   region chooses at run time: privatised when the array has at most as many
//!   elements as the loop has iterations (and at most [`MAX_PRIVATE`]), atomic
//!   otherwise.

use appy_ir::build::Builder;
use appy_ir::ir::{Op, Value};
use std::collections::{HashMap, HashSet};

/// The largest array (elements) privatised per thread.
pub const MAX_PRIVATE: i64 = 1 << 22;

/// An array a region updates only atomically, with one kind of update.
pub struct Privatised {
    /// The array (defined outside the region).
    pub array: Value,
    /// `memref.atomic_rmw`'s kind (the `arith::AtomicRMWKind` number).
    pub kind: i64,
}

/// The combining op and identity (as a float or integer) of an atomic kind.
fn kind_info(kind: i64) -> Option<(&'static str, f64)> {
    Some(match kind {
        0 => ("arith.addf", 0.0),
        1 => ("arith.addi", 0.0),
        2 => ("arith.andi", -1.0),
        4 => ("arith.maximumf", f64::NEG_INFINITY),
        5 => ("arith.maxnumf", f64::NEG_INFINITY),
        6 => ("arith.maxsi", f64::NAN),
        8 => ("arith.minimumf", f64::INFINITY),
        9 => ("arith.minnumf", f64::INFINITY),
        10 => ("arith.minsi", f64::NAN),
        12 => ("arith.mulf", 1.0),
        13 => ("arith.muli", 1.0),
        14 => ("arith.ori", 0.0),
        _ => return None,
    })
}

fn kind_of(op: &Op) -> Option<i64> {
    op.attr("kind")?.split(':').next()?.trim().parse().ok()
}

/// The identity of `kind` for elements of type `ty`.
fn identity(b: &mut Builder, kind: i64, ty: &str) -> Value {
    let (_, v) = kind_info(kind).expect("supported kind");
    let bits = if ty == "i32" { 32 } else { 64 };
    match kind {
        6 => b.int(if bits == 32 { i32::MIN as i64 } else { i64::MIN }, ty),
        10 => b.int(if bits == 32 { i32::MAX as i64 } else { i64::MAX }, ty),
        _ if appy_ir::types::is_float_type(ty) => b.float(v, ty),
        _ => b.int(v as i64, ty),
    }
}

/// `combine(old, v)` for an atomic kind (floating-point ones reassociable).
fn combine(b: &mut Builder, kind: i64, old: Value, v: Value) -> Value {
    let (name, _) = kind_info(kind).expect("supported kind");
    let ty = b.m.ty(old).to_string();
    if appy_ir::types::is_float_type(&ty) {
        b.op1(name, &[old, v], &ty, &[("fastmath", "#arith.fastmath<reassoc>".into())])
    } else {
        b.op1(name, &[old, v], &ty, &[])
    }
}

/// An atomic update done as a plain load, combine and store into `target` (its
/// result, the old value, is the loaded one). `None` for kinds without a combining op.
pub fn plain(b: &mut Builder, op: &Op, target: Value) -> Option<Vec<Op>> {
    let kind = kind_of(op)?;
    kind_info(kind)?;
    b.loc = op.loc.clone();
    b.begin();
    let idx = &op.operands[2..];
    let old = b.load(target, idx);
    let new = combine(b, kind, old, op.operands[0]);
    b.store(new, target, idx);
    let mut ops = b.end();
    // The load defines the atomic's result value (the old value).
    if let Some(r) = op.results.first() {
        let mut map = HashMap::new();
        map.insert(old, *r);
        for o in &mut ops {
            o.remap_uses(&map);
        }
        ops[0].results = vec![*r];
    }
    Some(ops)
}

/// The arrays of a region body that it only updates atomically, with one kind each.
pub fn privatisable(body: &[Op]) -> Vec<Privatised> {
    let mut defined = HashSet::new();
    let mut used = HashSet::new();
    let mut found: Vec<(Value, i64)> = vec![];
    for o in body {
        o.walk(&mut |x| {
            defined.extend(x.results.iter().copied());
            for r in &x.regions {
                for blk in &r.blocks {
                    defined.extend(blk.args.iter().copied());
                }
            }
            used.extend(x.operands.iter().copied());
            if x.name == "memref.atomic_rmw"
                && let Some(k) = kind_of(x)
                && !found.iter().any(|(a, _)| *a == x.operands[1])
            {
                found.push((x.operands[1], k));
            }
        });
    }
    let mut out = vec![];
    'arrays: for (a, kind) in found {
        if defined.contains(&a) || kind_info(kind).is_none() {
            continue;
        }
        let mut ok = true;
        for o in body {
            o.walk(&mut |x| {
                if !x.operands.contains(&a) {
                    return;
                }
                let fine = match x.name.as_str() {
                    "memref.atomic_rmw" => {
                        x.operands[1] == a && x.operands[0] != a && kind_of(x) == Some(kind) && !x.results.iter().any(|r| used.contains(r))
                    }
                    "memref.dim" => x.operands[0] == a,
                    _ => false,
                };
                ok &= fine;
            });
            if !ok {
                continue 'arrays;
            }
        }
        out.push(Privatised { array: a, kind });
    }
    out
}

/// Emits (in `b`'s current list) whether privatising is worth it: every array has at
/// most `trip` and at most [`MAX_PRIVATE`] elements.
pub fn worth_it(b: &mut Builder, arrays: &[Privatised], trip: Value) -> Value {
    let max = b.index(MAX_PRIVATE);
    let mut all: Option<Value> = None;
    for p in arrays {
        let n = numel(b, p.array);
        let small = b.cmpi(appy_ir::build::IPred::Sle, n, max);
        let few = b.cmpi(appy_ir::build::IPred::Sle, n, trip);
        let both = b.bin("arith.andi", small, few);
        all = Some(match all {
            Some(x) => b.bin("arith.andi", x, both),
            None => both,
        });
    }
    all.expect("at least one array")
}

fn dims(b: &mut Builder, a: Value) -> Vec<Value> {
    let rank = appy_ir::types::parse_memref(b.m.ty(a)).map(|(_, r)| r).unwrap_or(0);
    (0..rank)
        .map(|k| {
            let c = b.index(k as i64);
            b.op1("memref.dim", &[a, c], "index", &[])
        })
        .collect()
}

fn numel(b: &mut Builder, a: Value) -> Value {
    let mut n = b.index(1);
    for d in dims(b, a) {
        n = b.bin("arith.muli", n, d);
    }
    n
}

/// A loop nest over `dims` (in `b`'s current list) whose innermost body `f` emits.
fn nest(b: &mut Builder, dims: &[Value], ivs: &mut Vec<Value>, f: &mut dyn FnMut(&mut Builder, &[Value])) {
    let Some((&d, rest)) = dims.split_first() else {
        f(b, ivs);
        return;
    };
    let c0 = b.index(0);
    let c1 = b.index(1);
    let iv = b.m.value("index");
    ivs.push(iv);
    b.begin();
    nest(b, rest, ivs, f);
    let mut body = b.end();
    body.push(Builder::yield_op(&[]));
    ivs.pop();
    b.push(
        Op::new("scf.for")
            .with_operands([c0, d, c1])
            .with_region(Builder::region(vec![iv], body)),
    );
}

/// Privatises `arrays` in a region body: returns the ops to run once per thread before
/// the work-sharing loop (allocate and fill the copies), the body with the updates
/// going to the copies, and the ops to run after it (add the copies into the arrays,
/// free them).
pub fn privatise(b: &mut Builder, body: Vec<Op>, arrays: &[Privatised]) -> (Vec<Op>, Vec<Op>, Vec<Op>) {
    let mut copies: HashMap<Value, Value> = HashMap::new();
    b.begin();
    for p in arrays {
        let ty = b.m.ty(p.array).to_string();
        let elem = appy_ir::types::parse_memref(&ty)
            .map(|(d, _)| d.mlir())
            .unwrap_or("f64")
            .to_string();
        let ds = dims(b, p.array);
        // The allocation takes the dynamic sizes only (a kernel's reduction buffer
        // is `memref<1xT>`).
        let shape = appy_ir::types::MemRefType::parse(&ty).map(|t| t.shape).unwrap_or_default();
        let dynamic: Vec<Value> = ds
            .iter()
            .enumerate()
            .filter(|(k, _)| shape.get(*k).is_none_or(|s| s.is_none()))
            .map(|(_, d)| *d)
            .collect();
        let copy = b.m.value(ty);
        b.push(
            Op::new("memref.alloc")
                .with_operands(dynamic.iter().copied())
                .with_results([copy])
                .with_attr("operandSegmentSizes", format!("array<i32: {}, 0>", dynamic.len())),
        );
        let id = identity(b, p.kind, &elem);
        nest(b, &ds, &mut vec![], &mut |b, ivs| b.store(id, copy, ivs));
        copies.insert(p.array, copy);
    }
    let prologue = b.end();
    let body = redirect(b, body, &copies);
    b.begin();
    for p in arrays {
        let copy = copies[&p.array];
        let ds = dims(b, p.array);
        let kind = p.kind;
        let array = p.array;
        nest(b, &ds, &mut vec![], &mut |b, ivs| {
            let v = b.load(copy, ivs);
            let ty = b.m.ty(v).to_string();
            let mut ops = vec![v, array];
            ops.extend_from_slice(ivs);
            b.op1("memref.atomic_rmw", &ops, &ty, &[("kind", format!("{kind} : i64"))]);
        });
        b.op0("memref.dealloc", &[copy], &[]);
    }
    let epilogue = b.end();
    (prologue, body, epilogue)
}

/// Replaces the atomic updates of the privatised arrays by plain updates of the copies.
fn redirect(b: &mut Builder, ops: Vec<Op>, copies: &HashMap<Value, Value>) -> Vec<Op> {
    let mut out = vec![];
    for mut op in ops {
        if op.name == "memref.atomic_rmw"
            && let Some(copy) = copies.get(&op.operands[1])
            && let Some(plain) = plain(b, &op, *copy)
        {
            out.extend(plain);
            continue;
        }
        for r in &mut op.regions {
            for blk in &mut r.blocks {
                let inner = std::mem::take(&mut blk.ops);
                blk.ops = redirect(b, inner, copies);
            }
        }
        out.push(op);
    }
    out
}
