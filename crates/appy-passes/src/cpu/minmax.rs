//! `appy-cpu-minmax`: floating-point max/min reductions in CPU loops in a form LLVM
//! vectorises.
//!
//! A reduction `acc = maximumf(acc, x)` carried by an `scf.for` (NumPy's
//! NaN-propagating `max`; what `appy-cpu-openmp` makes of a `max`/`np.maximum`
//! reduction) is expensive for LLVM: `llvm.maximum` has no vector instruction, and when
//! `x` is conditional (`if a[i] < 0.5: m = max(m, a[i])`) LLVM folds the select into the
//! maximum and no longer recognises a reduction at all, so the loop stays scalar. This
//! pass carries the same reduction as `maxnumf` (which ignores NaN, `vmaxps` plus a
//! fix-up) and a second accumulator, an `i1` "a NaN was seen" flag (`or` of
//! `cmpf uno, x, x`, and of the initial value's); after the loop the result is NaN if
//! the flag is set, else the `maxnumf` result: the value of `maximumf` (up to the sign
//! of a zero maximum, which reduction order already leaves open). LLVM drops the flag
//! when it can prove `x` is never NaN (a conditional or compare-and-select update), and
//! then vectorises `maxnumf` as it is; where the flag stays, it vectorises the
//! reduction only with `nnan` and `nsz` on `maxnumf`, which is sound here: a NaN makes
//! the accumulator poison, and the flag then discards it. So a loop whose body has no
//! `scf.if` or `arith.select` gets `nnan,nsz`; the others keep `maxnumf` plain (with
//! `nnan`, LLVM would fold the select into the reduction and not recognise it).
//!
//! Runs on the CPU pipeline after `appy-cpu-openmp`.

use crate::{Pass, PassInfo};
use appy_ir::build::{Builder, FPred};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};
use appy_ir::rewrite::rewrite;

/// The pass.
pub struct CpuMinMax;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-cpu-minmax",
    description: "CPU only: maximumf/minimumf reductions of scf.for loops as maxnumf/minnumf plus a NaN flag (vectorisable)",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(CpuMinMax)),
};

impl Pass for CpuMinMax {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        rewrite(m, |rw| {
            for f in &mut rw.top {
                walk(&mut rw.b, f);
            }
        });
        Ok(())
    }
}

/// Rewrites the loops under `op`, innermost first.
fn walk(b: &mut Builder, op: &mut Op) {
    let Ok(()) = op.rewrite_nested(b, &mut |b, o, out| {
        if o.name == "scf.for" {
            out.extend(rewrite_for(b, o));
        } else {
            out.push(o);
        }
        Ok::<(), std::convert::Infallible>(())
    });
}

/// Uses of `v` in `ops` (nested regions included).
fn uses(ops: &[Op], v: Value) -> usize {
    let mut n = 0;
    for o in ops {
        n += o.operands.iter().filter(|x| **x == v).count();
        for r in &o.regions {
            for blk in &r.blocks {
                n += uses(&blk.ops, v);
            }
        }
    }
    n
}

/// The `scf.for` with each max/min reduction carried as `maxnumf`/`minnumf` and a NaN
/// flag, followed by the selects giving the reductions' results.
fn rewrite_for(b: &mut Builder, mut f: Op) -> Vec<Op> {
    if f.regions.len() != 1 || f.regions[0].blocks.len() != 1 {
        return vec![f];
    }
    let n_red = f.results.len();
    let mut found = vec![];
    {
        let body = &f.regions[0].blocks[0];
        let Some(term) = body.ops.last().filter(|t| t.name == "scf.yield" && t.operands.len() == n_red) else {
            return vec![f];
        };
        for k in 0..n_red {
            let acc = body.args[k + 1];
            let y = term.operands[k];
            let Some(pos) = body.ops.iter().position(|o| o.results.first() == Some(&y)) else {
                continue;
            };
            let op = &body.ops[pos];
            let name = match op.name.as_str() {
                "arith.maximumf" => "arith.maxnumf",
                "arith.minimumf" => "arith.minnumf",
                _ => continue,
            };
            let [a0, a1] = op.operands[..] else { continue };
            let x = if a0 == acc {
                a1
            } else if a1 == acc {
                a0
            } else {
                continue;
            };
            if x == acc || uses(&body.ops, acc) != 1 || uses(&body.ops, y) != 1 {
                continue;
            }
            found.push((k, pos, name, x));
        }
    }
    if found.is_empty() {
        return vec![f];
    }
    b.loc = f.loc.clone();
    b.begin();
    let mut after = vec![];
    // Without a branch in the body, the max/min may drop NaN handling (the flag does it).
    let conditional = f.regions[0].blocks[0]
        .ops
        .iter()
        .any(|o| o.walk_any(&|x| x.name == "scf.if" || x.name == "arith.select"));
    for (k, pos, name, x) in found {
        let ty = b.m.ty(f.results[k]).to_string();
        // Before the loop: whether the initial value is NaN.
        let init = f.operands[3 + k];
        let flag0 = b.cmpf(FPred::Uno, init, init);
        // In the body: maxnumf, and the flag.
        let flag = b.m.value("i1");
        let body = &mut f.regions[0].blocks[0];
        body.ops[pos].name = name.to_string();
        if !conditional {
            body.ops[pos].set_attr("fastmath", "#arith.fastmath<nnan,nsz,reassoc>");
        }
        b.begin();
        let isnan = b.cmpf(FPred::Uno, x, x);
        let flag1 = b.bin("arith.ori", flag, isnan);
        let extra = b.end();
        let term = body.ops.pop().expect("yield");
        body.ops.extend(extra);
        let mut term = term;
        term.operands.push(flag1);
        body.ops.push(term);
        body.args.push(flag);
        f.operands.push(flag0);
        // After the loop: NaN when the flag is set.
        let old = f.results[k];
        let fresh = b.m.value(ty.clone());
        let flag_out = b.m.value("i1");
        f.results[k] = fresh;
        f.results.push(flag_out);
        b.begin();
        let nan = b.float(f64::NAN, &ty);
        b.push(Op::new("arith.select").with_operands([flag_out, nan, fresh]).with_results([old]));
        after.extend(b.end());
    }
    let mut out = b.end();
    out.push(f);
    out.extend(after);
    out
}
