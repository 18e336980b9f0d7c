//! `appy-cpu-vector-math`: vector versions of libm functions from glibc's `libmvec`,
//! within the CPU back end's accuracy (at most 2 ulp from the correctly rounded
//! result, as the scalar C library).
//!
//! LLVM's loop vectoriser calls a vector version of a function when the function's
//! declaration names it (`vector-function-abi-variant`); this pass, on the LLVM
//! dialect, declares the versions the host has (instruction sets `b` SSE, `c` AVX, `d`
//! AVX2, `e` AVX-512) and names them:
//!
//! * for the float32 functions `appy-cpu-wide-math` computes in float64
//!   (`_appy_wide_exp` ...): the float64 `libmvec` function. Its error (at most ~3.5
//!   float64 ulp, measured) vanishes when the result is rounded to float32: the
//!   results equal the correctly rounded ones (2 million samples per function and
//!   instruction set, none off). This pass defines `_appy_wide_<f>` as a call of the C
//!   library's `<f>` (`noinline`, so the vectoriser sees the call it can replace);
//! * for float64 calls: only the functions whose `libmvec` version is within 1.5 ulp
//!   of the exact result ([`ACCURATE_F64`]: `pow`, `exp10`); the others (`exp` is at
//!   2.9 ulp, `sin` at 3.2) stay scalar calls of the C library, except float64 `exp`,
//!   `expm1` and `tanh` of varying arguments, which `appy-cpu-exp` computes inline
//!   (vectorisable) before.
//!
//! The measurements: a C program calling each vector function on 2 million arguments
//! per instruction set (uniform over the function's domain, over [-3, 3], over [0.001,
//! 100], and log-uniform over its magnitudes) against the `long double` C library.

use crate::{OptKind, Pass, PassInfo, PassOpt};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Module, Op, Region};
use std::collections::HashSet;

/// Math functions with vector versions in glibc's vector math library (`libmvec`):
/// name, number of arguments, and the `math` op computing it; the first five exist
/// since glibc 2.22, the others since 2.35.
pub const VECTOR_MATH: &[(&str, usize, &str)] = &[
    ("exp", 1, "math.exp"),
    ("log", 1, "math.log"),
    ("sin", 1, "math.sin"),
    ("cos", 1, "math.cos"),
    ("pow", 2, "math.powf"),
    ("exp2", 1, "math.exp2"),
    ("exp10", 1, ""),
    ("expm1", 1, "math.expm1"),
    ("log2", 1, "math.log2"),
    ("log10", 1, "math.log10"),
    ("log1p", 1, "math.log1p"),
    ("tan", 1, "math.tan"),
    ("sinh", 1, "math.sinh"),
    ("cosh", 1, "math.cosh"),
    ("tanh", 1, "math.tanh"),
    ("asin", 1, "math.asin"),
    ("acos", 1, "math.acos"),
    ("atan", 1, "math.atan"),
    ("asinh", 1, "math.asinh"),
    ("acosh", 1, "math.acosh"),
    ("atanh", 1, "math.atanh"),
    ("erf", 1, "math.erf"),
    ("erfc", 1, "math.erfc"),
    ("cbrt", 1, "math.cbrt"),
    ("atan2", 2, "math.atan2"),
    ("hypot", 2, ""),
];

/// The float64 functions whose `libmvec` versions are within 1.5 ulp (measured).
pub const ACCURATE_F64: &[&str] = &["pow", "exp10"];

/// The prefix of the float64 functions that compute float32 results
/// (`appy-cpu-wide-math`).
pub const WIDE: &str = "_appy_wide_";

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-cpu-vector-math",
    description: "CPU, LLVM dialect: vector versions (glibc's libmvec) of the math functions called, where they are accurate, for LLVM's loop vectoriser",
    options: &[
        PassOpt {
            name: "isa",
            kind: OptKind::Letters("bcde"),
            default: "",
            help: "instruction sets with vector versions on the host (vector function ABI letters)",
        },
        PassOpt {
            name: "full",
            kind: OptKind::Bool,
            default: "1",
            help: "the library has glibc 2.35's full set of functions",
        },
    ],
    file: file!(),
    make: |o| {
        Ok(Box::new(CpuVectorMath {
            isas: o.letters("isa")?,
            full: o.flag("full")?,
        }))
    },
};

/// The pass (see the module documentation).
pub struct CpuVectorMath {
    /// Instruction sets with vector versions on this host (letters of the vector
    /// function ABI: `b`, `c`, `d`, `e`); empty: none (the `_appy_wide_` functions are
    /// still defined).
    pub isas: String,
    /// Whether the library has glibc 2.35's full set of functions.
    pub full: bool,
}

/// The float64 vector versions of libm function `name` that `libmvec` provides for the
/// instruction sets in `isas`: `(vector length, symbol)`, widest first (LLVM takes the
/// first version of a length). `full`: glibc ≥ 2.35's set, else exp, log, sin, cos, pow.
pub fn vector_variants(name: &str, isas: &str, full: bool) -> Vec<(usize, String)> {
    let Some(pos) = VECTOR_MATH.iter().position(|(n, _, _)| *n == name) else {
        return vec![];
    };
    if pos >= 5 && !full {
        return vec![];
    }
    let args = "v".repeat(VECTOR_MATH[pos].1);
    let mut isas: Vec<char> = isas.chars().collect();
    isas.sort_unstable_by(|a, b| b.cmp(a));
    let mut out = vec![];
    for isa in isas {
        let vf = match isa {
            'b' => 2,
            'c' | 'd' => 4,
            'e' => 8,
            _ => continue,
        };
        out.push((vf, format!("_ZGV{isa}N{vf}{args}_{name}")));
    }
    out
}

fn func(name: &str, ty: String, internal: bool) -> Op {
    Op::new("llvm.func")
        .with_attr("CConv", "#llvm.cconv<ccc>")
        .with_attr("function_type", ty)
        .with_attr(
            "linkage",
            if internal {
                "#llvm.linkage<internal>"
            } else {
                "#llvm.linkage<external>"
            },
        )
        .with_attr("memory_effects", NONE)
        .with_attr("sym_name", format!("\"{name}\""))
        .with_attr("unnamed_addr", "0 : i64")
        .with_attr("visibility_", "0 : i64")
}

const NONE: &str =
    "#llvm.memory_effects<other = none, argMem = none, inaccessibleMem = none, errnoMem = none, targetMem0 = none, targetMem1 = none>";

impl Pass for CpuVectorMath {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let mut new = vec![];
        let mut used = vec![];
        let mut body = std::mem::take(m.body_mut());
        let mut declared: HashSet<String> = body
            .iter()
            .filter_map(|o| o.attr("sym_name").map(|s| s.trim_matches('"').to_string()))
            .collect();
        for f in body.iter_mut() {
            if f.name != "llvm.func" || !f.regions.iter().all(|r| r.blocks.is_empty()) {
                continue;
            }
            let Some(name) = f.attr("sym_name").map(|s| s.trim_matches('"').to_string()) else {
                continue;
            };
            let (base, wide) = match name.strip_prefix(WIDE) {
                Some(b) => (b.to_string(), true),
                None => (name.clone(), false),
            };
            let Some(&(_, arity, _)) = VECTOR_MATH.iter().find(|(n, _, _)| *n == base) else {
                continue;
            };
            let scalar_ty = format!("!llvm.func<f64 ({})>", vec!["f64"; arity].join(", "));
            if f.attr("function_type") != Some(scalar_ty.as_str()) {
                continue;
            }
            let variants = if wide || ACCURATE_F64.contains(&base.as_str()) {
                vector_variants(&base, &self.isas, self.full)
            } else {
                vec![]
            };
            let mut mapping = vec![];
            for (vf, sym) in &variants {
                mapping.push(format!("_ZGV_LLVM_N{vf}{}_{name}({sym})", "v".repeat(arity)));
                if declared.insert(sym.clone()) {
                    let vt = format!("vector<{vf}xf64>");
                    let ty = format!("!llvm.func<{vt} ({})>", vec![vt.as_str(); arity].join(", "));
                    new.push(func(sym, ty, false).with_region(Region::default()));
                    used.push(sym.clone());
                }
            }
            if !mapping.is_empty() {
                f.set_attr(
                    "passthrough",
                    format!("[[\"vector-function-abi-variant\", \"{}\"]]", mapping.join(",")),
                );
            }
            if wide {
                // `_appy_wide_<f>(x) = <f>(x)`, kept as a call the vectoriser can replace.
                let args: Vec<_> = (0..arity).map(|_| m.value("f64")).collect();
                let r = m.value("f64");
                let call = Op::new("llvm.call")
                    .with_operands(args.iter().copied())
                    .with_results([r])
                    .with_attr("CConv", "#llvm.cconv<ccc>")
                    .with_attr("TailCallKind", "#llvm.tailcallkind<none>")
                    .with_attr("callee", format!("@{base}"))
                    .with_attr("fastmathFlags", "#llvm.fastmath<none>")
                    .with_attr("op_bundle_sizes", "array<i32>")
                    .with_attr("operandSegmentSizes", format!("array<i32: {arity}, 0>"));
                f.set_attr("linkage", "#llvm.linkage<internal>");
                f.remove_attr("sym_visibility");
                f.set_attr("no_inline", "unit");
                f.set_attr("memory_effects", NONE);
                f.regions = vec![Builder::region(args, vec![call, Op::new("llvm.return").with_operands([r])])];
                if declared.insert(base.clone()) {
                    new.push(func(&base, scalar_ty, false).with_region(Region::default()));
                }
            }
        }
        if !used.is_empty() {
            // `llvm.compiler.used` keeps the declarations alive until the vectoriser
            // has seen them.
            let n = used.len();
            let arr = format!("!llvm.array<{n} x ptr>");
            let mut ops = vec![];
            let mut cur = m.value(arr.clone());
            ops.push(Op::new("llvm.mlir.undef").with_results([cur]));
            for (k, sym) in used.iter().enumerate() {
                let p = m.value("!llvm.ptr");
                ops.push(
                    Op::new("llvm.mlir.addressof")
                        .with_results([p])
                        .with_attr("global_name", format!("@{sym}")),
                );
                let next = m.value(arr.clone());
                ops.push(
                    Op::new("llvm.insertvalue")
                        .with_operands([cur, p])
                        .with_results([next])
                        .with_attr("position", format!("array<i64: {k}>")),
                );
                cur = next;
            }
            ops.push(Op::new("llvm.return").with_operands([cur]));
            new.push(
                Op::new("llvm.mlir.global")
                    .with_attr("addr_space", "0 : i32")
                    .with_attr("global_type", arr)
                    .with_attr("linkage", "#llvm.linkage<appending>")
                    .with_attr("section", "\"llvm.metadata\"")
                    .with_attr("sym_name", "\"llvm.compiler.used\"")
                    .with_attr("unnamed_addr", "0 : i64")
                    .with_attr("visibility_", "0 : i64")
                    .with_region(Builder::region(vec![], ops)),
            );
        }
        body.splice(0..0, new);
        *m.body_mut() = body;
        Ok(())
    }
}
