//! `appy-half-in-f32`: every `arith` and `math` operation on float16 or bfloat16 values
//! computed in float32 and rounded back after each operation: its 16-bit operands are
//! extended (`arith.extf`, exact), the operation runs on float32, and each 16-bit result
//! is the float32 result rounded to nearest even (`arith.truncf`).
//!
//! That is NumPy's meaning of a float16 operation (its loops convert to float32,
//! compute, and convert back) and torch's of a bfloat16 one. For `+ - * /` and
//! `sqrt` the result is the correctly rounded 16-bit one (float32 has more than twice
//! the bits, so the double rounding is innocuous); math functions are float32's
//! rounded. MLIR's `arith-emulate-unsupported-floats` is not used: it keeps a chain of
//! operations in float32 and rounds only where a value leaves it, which gives other
//! results than NumPy's. Both back ends run it before their math libraries, so the
//! libraries see float32 only, and the host code that the runtime interprets has no
//! 16-bit arithmetic either. Integer conversions to a 16-bit float go through float64
//! (rounded once for integers of up to 53 bits).
//!
//! The roundings themselves: float64 to a 16-bit float is rounded to float32 *to odd*
//! first (toward zero, the last bit set when inexact), then to nearest even, which is
//! the correctly rounded result (float32 keeps more than two extra bits) without the
//! C library's `__truncdfhf2`. On the CPU (`cpu=1`) float32 to bfloat16 is rounded with
//! integer operations (no `__truncsfbf2`, which older C libraries lack); float32 to
//! float16 and back are the processor's F16C instructions.

use crate::util::{builder_for, finish};
use crate::{Pass, PassInfo, PassOpt};
use appy_ir::build::{Builder, FPred};
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Value};

/// The pass.
pub struct HalfInF32 {
    /// The CPU: float32 to bfloat16 with integer operations.
    cpu: bool,
}

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-half-in-f32",
    description: "float16 and bfloat16 arith and math operations computed in float32, rounded back after each (NumPy's float16 meaning)",
    options: &[PassOpt::CPU],
    file: file!(),
    make: |o| Ok(Box::new(HalfInF32 { cpu: o.flag("cpu")? })),
};

impl Pass for HalfInF32 {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let mut root = std::mem::take(&mut m.op);
        let cpu = self.cpu;
        let Ok(()) = root.rewrite_nested(m, &mut |m, o, out| {
            let mut widened = vec![];
            widen(m, o, &mut widened);
            for o in widened {
                round(m, o, cpu, out);
            }
            Ok::<(), std::convert::Infallible>(())
        });
        m.op = root;
        Ok(())
    }
}

fn is_half(ty: &str) -> bool {
    ty == "f16" || ty == "bf16"
}

/// Appends `op`, computed in float32 when it is an arithmetic or math operation on
/// 16-bit floats.
fn widen(m: &mut Module, mut op: Op, out: &mut Vec<Op>) {
    let arith = op.name.starts_with("arith.") || op.name.starts_with("math.");
    // Conversions, constants and selects are exact (or are the rounding itself).
    let exact = matches!(
        op.name.as_str(),
        "arith.constant" | "arith.extf" | "arith.truncf" | "arith.bitcast" | "arith.select"
    );
    let touches = op.operands.iter().chain(&op.results).any(|v| is_half(m.ty(*v)));
    if !arith || exact || !touches || !op.regions.is_empty() {
        out.push(op);
        return;
    }
    let from_int = matches!(op.name.as_str(), "arith.sitofp" | "arith.uitofp");
    let wide = if from_int { "f64" } else { "f32" };
    let mut b = builder_for(m);
    b.loc = op.loc.clone();
    for x in op.operands.iter_mut() {
        if is_half(b.m.ty(*x)) {
            *x = b.op1("arith.extf", &[*x], "f32", &[]);
        }
    }
    let mut rounds = vec![];
    for r in op.results.iter_mut() {
        if is_half(b.m.ty(*r)) {
            let w = b.m.value(wide);
            rounds.push((w, *r));
            *r = w;
        }
    }
    let loc = op.loc.clone();
    let mut ops = b.take();
    ops.push(op);
    for (w, r) in rounds {
        let mut t = Op::new("arith.truncf").with_operands([w]).with_results([r]);
        t.loc = loc.clone();
        ops.push(t);
    }
    finish(&mut b, m);
    out.extend(ops);
}

/// Appends `op`, with a rounding to a 16-bit float (`arith.truncf`) from float64 made
/// from float32 (rounded to odd), and on the CPU one from float32 to bfloat16 made of
/// integer operations.
fn round(m: &mut Module, op: Op, cpu: bool, out: &mut Vec<Op>) {
    if op.name != "arith.truncf" || op.operands.len() != 1 || op.results.len() != 1 {
        out.push(op);
        return;
    }
    let (x, r) = (op.operands[0], op.results[0]);
    let (from, to) = (m.ty(x).to_string(), m.ty(r).to_string());
    let f64_src = from == "f64" && is_half(&to);
    let bf16_cpu = cpu && from == "f32" && to == "bf16";
    if !f64_src && !bf16_cpu {
        out.push(op);
        return;
    }
    let mut b = builder_for(m);
    b.loc = op.loc.clone();
    let x32 = if f64_src { to_f32_odd(&mut b, x) } else { x };
    let last = if cpu && to == "bf16" {
        let bits = f32_to_bf16_bits(&mut b, x32);
        Op::new("arith.bitcast").with_operands([bits]).with_results([r])
    } else {
        Op::new("arith.truncf").with_operands([x32]).with_results([r])
    };
    let mut ops = b.take();
    let mut last = last;
    last.loc = op.loc.clone();
    ops.push(last);
    finish(&mut b, m);
    out.extend(ops);
}

/// The float64 `x` rounded to float32 to odd: toward zero, with the last bit set when
/// the rounding was inexact (a NaN stays a NaN, a value beyond float32 becomes the
/// largest float32, odd, which then rounds to infinity).
fn to_f32_odd(b: &mut Builder, x: Value) -> Value {
    let r = b.op1("arith.truncf", &[x], "f32", &[]);
    let back = b.op1("arith.extf", &[r], "f64", &[]);
    let inexact = b.cmpf(FPred::Une, back, x);
    let (ab, ax) = (b.op1("math.absf", &[back], "f64", &[]), b.op1("math.absf", &[x], "f64", &[]));
    let over = b.cmpf(FPred::Ogt, ab, ax);
    let bits = b.op1("arith.bitcast", &[r], "i32", &[]);
    let one = b.int(1, "i32");
    let down = b.bin("arith.subi", bits, one);
    let toward_zero = b.select(over, down, bits);
    let odd = b.bin("arith.ori", toward_zero, one);
    let bits = b.select(inexact, odd, toward_zero);
    b.op1("arith.bitcast", &[bits], "f32", &[])
}

/// The bits of the float32 `x` rounded to bfloat16 (nearest, ties to even; a NaN
/// becomes the quiet NaN of its sign), as an `i16`.
fn f32_to_bf16_bits(b: &mut Builder, x: Value) -> Value {
    let bits = b.op1("arith.bitcast", &[x], "i32", &[]);
    let c16 = b.int(16, "i32");
    let hi = b.bin("arith.shrui", bits, c16);
    let one = b.int(1, "i32");
    let lsb = b.bin("arith.andi", hi, one);
    let bias = b.int(0x7fff, "i32");
    let inc = b.bin("arith.addi", bias, lsb);
    let sum = b.bin("arith.addi", bits, inc);
    let rounded = b.bin("arith.shrui", sum, c16);
    let quiet = b.int(0x40, "i32");
    let nan_bits = b.bin("arith.ori", hi, quiet);
    let nan = b.cmpf(FPred::Uno, x, x);
    let r = b.select(nan, nan_bits, rounded);
    b.op1("arith.trunci", &[r], "i16", &[])
}
