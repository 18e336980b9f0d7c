//! `appy-cpu-alloc`: how compiled CPU code allocates arrays (`np.empty`, temporaries).
//!
//! `finalize-memref-to-llvm{use-generic-functions=true}` calls
//! `_mlir_memref_to_llvm_alloc(size)` and `_mlir_memref_to_llvm_free(ptr)`; this pass
//! defines them in the module: blocks of at least [`HUGE`] bytes are 2 MiB aligned and
//! advised to the kernel as transparent huge pages (`madvise(MADV_HUGEPAGE)`, as NumPy
//! does for its large arrays), so a fresh 100 MB array costs tens of page faults
//! instead of tens of thousands; smaller ones come from `malloc`. Both are released
//! with `free` (the runtime frees returned arrays it adopts the same way).

use crate::{Pass, PassInfo};
use appy_ir::build::Builder;
use appy_ir::diag::IrError;
use appy_ir::ir::{Block, Module, Op, Region, Value};

/// Blocks from this size (bytes) are huge-page backed.
pub const HUGE: i64 = 4 << 20;

const ALLOC: &str = "_mlir_memref_to_llvm_alloc";
const FREE: &str = "_mlir_memref_to_llvm_free";

/// The pass.
pub struct CpuAlloc;

/// The registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "appy-cpu-alloc",
    description: "CPU, LLVM dialect: define the array allocation functions (large blocks on transparent huge pages, like NumPy)",
    options: &[],
    file: file!(),
    make: |_| Ok(Box::new(CpuAlloc)),
};

/// `op` (an `llvm.func`) with the attributes of C function `name` of type `ty`.
pub(crate) fn func_attrs(op: Op, name: &str, ty: &str, internal: bool) -> Op {
    op.with_attr("CConv", "#llvm.cconv<ccc>")
        .with_attr("function_type", ty.to_string())
        .with_attr(
            "linkage",
            if internal {
                "#llvm.linkage<internal>"
            } else {
                "#llvm.linkage<external>"
            },
        )
        .with_attr("sym_name", format!("\"{name}\""))
        .with_attr("unnamed_addr", "0 : i64")
        .with_attr("visibility_", "0 : i64")
}

/// An `llvm.call` of C function `callee`, and its result of type `ret` if any.
pub(crate) fn call(m: &mut Module, callee: &str, args: &[Value], ret: Option<&str>) -> (Op, Option<Value>) {
    let r = ret.map(|t| m.value(t));
    let op = Op::new("llvm.call")
        .with_operands(args.iter().copied())
        .with_results(r)
        .with_attr("CConv", "#llvm.cconv<ccc>")
        .with_attr("TailCallKind", "#llvm.tailcallkind<none>")
        .with_attr("callee", format!("@{callee}"))
        .with_attr("fastmathFlags", "#llvm.fastmath<none>")
        .with_attr("op_bundle_sizes", "array<i32>")
        .with_attr("operandSegmentSizes", format!("array<i32: {}, 0>", args.len()));
    (op, r)
}

fn constant(m: &mut Module, v: i64, ty: &str) -> (Op, Value) {
    let r = m.value(ty);
    (
        Op::new("llvm.mlir.constant")
            .with_results([r])
            .with_attr("value", format!("{v} : {ty}")),
        r,
    )
}

impl Pass for CpuAlloc {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn run(&self, m: &mut Module) -> Result<(), IrError> {
        let names: Vec<String> = m
            .body()
            .iter()
            .filter_map(|o| o.attr("sym_name").map(|s| s.trim_matches('"').to_string()))
            .collect();
        let declared = |n: &str| names.iter().any(|x| x == n);
        if !declared(ALLOC) && !declared(FREE) {
            return Ok(());
        }
        // The C functions used.
        let mut decls = vec![];
        for (name, ty) in [
            ("malloc", "!llvm.func<ptr (i64)>"),
            ("free", "!llvm.func<void (ptr)>"),
            ("posix_memalign", "!llvm.func<i32 (ptr, i64, i64)>"),
            ("madvise", "!llvm.func<i32 (ptr, i64, i32)>"),
        ] {
            if !declared(name) {
                decls.push(func_attrs(Op::new("llvm.func"), name, ty, false).with_region(Region::default()));
            }
        }
        // alloc(n): n >= HUGE ? huge-page-advised 2 MiB-aligned block : malloc(n).
        let n = m.value("i64");
        let (c_huge, huge) = constant(m, HUGE, "i64");
        let big = m.value("i1");
        let cmp = Op::new("llvm.icmp")
            .with_operands([n, huge])
            .with_results([big])
            .with_attr("predicate", "9 : i64");
        let (c_one, one) = constant(m, 1, "i64");
        let slot = m.value("!llvm.ptr");
        let alloca = Op::new("llvm.alloca")
            .with_operands([one])
            .with_results([slot])
            .with_attr("elem_type", "!llvm.ptr");
        let br = Op::new("llvm.cond_br")
            .with_operands([big])
            .with_attr("operandSegmentSizes", "array<i32: 1, 0, 0>");
        let mut br = br;
        br.successors = vec![1, 2];
        let entry = Block {
            args: vec![n],
            ops: vec![c_huge, cmp, c_one, alloca, br],
        };
        let (c_align, align) = constant(m, 2 << 20, "i64");
        let (pm, rc) = call(m, "posix_memalign", &[slot, align, n], Some("i32"));
        let p = m.value("!llvm.ptr");
        let load = Op::new("llvm.load")
            .with_operands([slot])
            .with_results([p])
            .with_attr("ordering", "0 : i64");
        let (c_adv, adv) = constant(m, 14, "i32"); // MADV_HUGEPAGE
        let (advise, _) = call(m, "madvise", &[p, n, adv], Some("i32"));
        let (c_zero, zero) = constant(m, 0, "i32");
        let ok = m.value("i1");
        let icmp = Op::new("llvm.icmp")
            .with_operands([rc.expect("result"), zero])
            .with_results([ok])
            .with_attr("predicate", "0 : i64");
        let null = m.value("!llvm.ptr");
        let nullop = Op::new("llvm.mlir.zero").with_results([null]);
        let res = m.value("!llvm.ptr");
        let sel = Op::new("llvm.select")
            .with_operands([ok, p, null])
            .with_results([res])
            .with_attr("fastmathFlags", "#llvm.fastmath<none>");
        let huge_block = Block {
            args: vec![],
            ops: vec![
                c_align,
                pm,
                load,
                c_adv,
                advise,
                c_zero,
                icmp,
                nullop,
                sel,
                Op::new("llvm.return").with_operands([res]),
            ],
        };
        let (mal, q) = call(m, "malloc", &[n], Some("!llvm.ptr"));
        let small_block = Block {
            args: vec![],
            ops: vec![mal, Op::new("llvm.return").with_operands(q)],
        };
        let alloc = func_attrs(Op::new("llvm.func"), ALLOC, "!llvm.func<ptr (i64)>", true).with_region(Region {
            blocks: vec![entry, huge_block, small_block],
        });
        // free(p).
        let fp = m.value("!llvm.ptr");
        let (fr, _) = call(m, "free", &[fp], None);
        let free = func_attrs(Op::new("llvm.func"), FREE, "!llvm.func<void (ptr)>", true)
            .with_region(Builder::region(vec![fp], vec![fr, Op::new("llvm.return")]));
        let body = m.body_mut();
        body.retain(|o| !matches!(o.attr("sym_name").map(|s| s.trim_matches('"')), Some(ALLOC) | Some(FREE)));
        body.splice(0..0, decls.into_iter().chain([alloc, free]));
        Ok(())
    }
}
