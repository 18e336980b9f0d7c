//! The bridge to MLIR (feature `mlir`): context set-up, parsing and verifying text,
//! importing an MLIR module into the owned mirror ([`crate::ir`]), running textual
//! pass pipelines, and capturing MLIR's diagnostics as located errors.

use crate::ir;
use melior::{
    Context,
    dialect::DialectRegistry,
    ir::{
        BlockLike, Module, OperationRef, RegionLike, ValueLike,
        operation::{OperationLike, OperationPrintingFlags},
    },
    pass::PassManager,
    utility::{register_all_dialects, register_all_llvm_translations, register_all_passes},
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// An MLIR context with every upstream dialect, pass and LLVM translation registered,
/// and a diagnostic handler that records MLIR's messages.
pub struct Ctx {
    /// The MLIR context.
    pub context: Context,
    diags: Rc<RefCell<Vec<String>>>,
}

impl Default for Ctx {
    fn default() -> Self {
        Self::new()
    }
}

static PASSES: std::sync::Once = std::sync::Once::new();

/// The `appy` dialect, defined with IRDL: the ops the `appy` level needs beyond
/// upstream MLIR. Loops and reductions are upstream `scf` ops carrying appy's
/// annotations as discardable attributes (`appy.parallel`, `appy.simd`,
/// `appy.sequential`, and after strip-mining `appy.lanes`, `appy.chunks`).
pub const APPY_IRDL: &str = r#"
irdl.dialect @appy {
  // `appy.MVL`: the maximum vector length, symbolic at the appy level; appy-strip-mine
  // replaces it by the chosen constant, so one appy-level function serves every MVL.
  irdl.operation @mvl {
    %i64 = irdl.is i64
    irdl.results(value: %i64)
  }
  // The tensor level (seed 001 §4): statements in sliced index notation, as SSA values
  // that are functions of the statement's dimensions (numbered 0..k-1 per statement).
  // `appy.view %array(%i...) {dims, steps}`: one i64 operand per array axis, either the
  // slice's lower bound (dims[a] = the statement dimension) or a scalar index (dims[a] =
  // -1); a sliced axis with `steps[a] = s` reads `lower + s * i` (1 when absent).
  irdl.operation @view {
    %mem = irdl.base "!builtin.memref"
    %i64 = irdl.is i64
    %t = irdl.base "!builtin.tensor"
    irdl.operands(source: %mem, index: variadic %i64)
    irdl.results(result: %t)
  }
  // `appy.print(%values...) {pieces}`: prints a line from the host code; `pieces` is the
  // text and the value fields, encoded by `appy_ir::pyfmt::Piece`; each value is the 64
  // bits of its representation (a float32 in the low 32).
  irdl.operation @print {
    %i64 = irdl.is i64
    irdl.operands(values: variadic %i64)
  }
  // `appy.iota {dims = [d]}`: the index of statement dimension d (i64), for `np.arange`.
  irdl.operation @iota {
    %t = irdl.base "!builtin.tensor"
    irdl.results(result: %t)
  }
  // `appy.ew {op = "arith.addf", ...}`: the scalar op `op` applied element-wise; its one
  // to three operands are tensors or scalars (broadcast); the other attributes are the
  // scalar op's.
  irdl.operation @ew {
    %a = irdl.any
    %b = irdl.any
    %c = irdl.any
    %t = irdl.base "!builtin.tensor"
    irdl.operands(a: %a, b: optional %b, c: optional %c)
    irdl.results(result: %t)
  }
  // `appy.reduce {kind = "sum"|"max"|"min", dims}`: reduces the listed dimensions.
  irdl.operation @reduce {
    %t = irdl.base "!builtin.tensor"
    %any = irdl.any
    irdl.operands(input: %t)
    irdl.results(result: %any)
  }
  // `appy.assign %target(%i...) = %value` over extents %e (one per statement dimension);
  // the loop order and per-dimension properties of the tensor pragma are attributes.
  // `appy.gemm C(ci, cj) = alpha * op(A)(ai, aj) @ op(B)(bi, bj) + beta * C` over M x N x
  // K (a matrix product delegated to a library: cuBLAS on the GPU); operands C, A, B,
  // the six view offsets, M, N, K, alpha, beta; attributes `trans_a`, `trans_b`.
  // A vector operand (rank 1) is a column (`vec_x = 1`, n x 1) or a row (`vec_x = 2`,
  // 1 x n) matrix: matrix-vector products are the same op.
  irdl.operation @gemm {
    %mc = irdl.base "!builtin.memref"
    %ma = irdl.base "!builtin.memref"
    %mb = irdl.base "!builtin.memref"
    %i64 = irdl.is i64
    %f = irdl.any
    irdl.operands(c: %mc, a: %ma, b: %mb, index: variadic %i64, alpha: %f, beta: %f)
  }
  // `appy.trsv(L, x, b, n)`: x[:n] = b[:n], then x = L⁻¹ x with the lower triangle of
  // L[:n, :n] (forward substitution, delegated to a library: cuBLAS on the GPU).
  irdl.operation @trsv {
    %ml = irdl.base "!builtin.memref"
    %mx = irdl.base "!builtin.memref"
    %mb = irdl.base "!builtin.memref"
    %i64 = irdl.is i64
    irdl.operands(l: %ml, x: %mx, b: %mb, n: %i64)
  }
  // `appy.potrf(A, n)`: the lower triangle of A[:n, :n] becomes its Cholesky factor L
  // (A = L Lᵀ); the rest of A is untouched (cuSOLVER on the GPU).
  irdl.operation @potrf {
    %m = irdl.base "!builtin.memref"
    %i64 = irdl.is i64
    irdl.operands(a: %m, n: %i64)
  }
  irdl.operation @assign {
    %mem = irdl.base "!builtin.memref"
    %any = irdl.any
    %i64 = irdl.is i64
    irdl.operands(target: %mem, value: %any, index: variadic %i64, extents: variadic %i64)
  }
}
"#;

impl Ctx {
    /// Creates a context (single-threaded: appy's modules are small, and the machines
    /// that run CI have two cores).
    pub fn new() -> Self {
        PASSES.call_once(register_all_passes);
        let registry = DialectRegistry::new();
        register_all_dialects(&registry);
        let context = Context::new_with_registry(&registry, false);
        context.load_all_available_dialects();
        register_all_llvm_translations(&context);
        let diags: Rc<RefCell<Vec<String>>> = Rc::default();
        let sink = diags.clone();
        context.attach_diagnostic_handler(move |d| {
            let mut msg = format!("{}: {}", d.location(), d);
            for i in 0..d.note_count() {
                if let Ok(n) = d.note(i) {
                    msg.push_str(&format!("\n  note: {}: {}", n.location(), n));
                }
            }
            sink.borrow_mut().push(msg);
            true
        });
        let ctx = Ctx { context, diags };
        let dialect = Module::parse(&ctx.context, APPY_IRDL).expect("the appy IRDL dialect parses");
        assert!(melior::utility::load_irdl_dialects(&dialect), "the appy IRDL dialect loads");
        ctx
    }

    /// Takes the diagnostics MLIR reported since the last call.
    pub fn take_diagnostics(&self) -> Vec<String> {
        std::mem::take(&mut self.diags.borrow_mut())
    }

    fn failure(&self, what: &str) -> String {
        let d = self.take_diagnostics();
        if d.is_empty() {
            what.to_string()
        } else {
            format!("{what}:\n{}", d.join("\n"))
        }
    }

    /// Parses and verifies MLIR text (any syntax).
    pub fn parse(&self, text: &str) -> Result<Module<'_>, String> {
        self.take_diagnostics();
        let m = Module::parse(&self.context, text).ok_or_else(|| self.failure("MLIR failed to parse the module"))?;
        if !m.as_operation().verify() {
            return Err(self.failure("the module failed MLIR verification"));
        }
        Ok(m)
    }

    /// Prints a mirror module generically, re-parses and verifies it with MLIR.
    pub fn load(&self, m: &ir::Module) -> Result<Module<'_>, String> {
        let text = m.to_generic();
        self.parse(&text).inspect_err(|_| {
            tracing::debug!(target: "appy::ir", "module that failed to verify:\n{text}");
        })
    }

    /// Runs a textual pass pipeline (`builtin.module(...)`) over a module.
    pub fn run_pipeline(&self, module: &mut Module<'_>, pipeline: &str) -> Result<(), String> {
        self.take_diagnostics();
        let pm = PassManager::new(&self.context);
        pm.enable_verifier(true);
        melior::utility::parse_pass_pipeline(pm.as_operation_pass_manager(), pipeline)
            .map_err(|e| self.failure(&format!("invalid pass pipeline `{pipeline}` ({e})")))?;
        pm.run(module)
            .map_err(|_| self.failure(&format!("pass pipeline `{pipeline}` failed")))
    }
}

/// MLIR's custom (pretty) syntax of a module, optionally with locations.
pub fn pretty(module: &Module<'_>, locations: bool) -> String {
    let flags = OperationPrintingFlags::new().enable_debug_info(locations, false);
    module
        .as_operation()
        .to_string_with_flags(flags)
        .unwrap_or_else(|_| module.as_operation().to_string())
}

/// Copies an MLIR module into the owned mirror.
pub fn import(module: &Module<'_>) -> ir::Module {
    let mut imp = Importer {
        ids: HashMap::new(),
        types: vec![],
        block_index: HashMap::new(),
    };
    let top = module.as_operation();
    imp.number(&top);
    let op = imp.op(&top);
    ir::Module { op, types: imp.types }
}

struct Importer {
    ids: HashMap<usize, ir::Value>,
    types: Vec<String>,
    /// Per region (by address): the index of each of its blocks, built once (a region
    /// with n blocks and n branches must not cost n²: a 5,000-term `and` has 10,000).
    block_index: HashMap<usize, HashMap<usize, usize>>,
}

impl Importer {
    fn id(&mut self, raw: mlir_sys::MlirValue, ty: String) -> ir::Value {
        let v = ir::Value(self.types.len() as u32);
        self.types.push(ty);
        self.ids.insert(raw.ptr as usize, v);
        v
    }
    fn get(&self, raw: mlir_sys::MlirValue) -> ir::Value {
        *self.ids.get(&(raw.ptr as usize)).expect("operand defined in the module")
    }
    /// Assigns ids to every result and block argument (uses may precede
    /// definitions in text order across blocks).
    fn number(&mut self, op: &OperationRef<'_, '_>) {
        for r in op.results() {
            self.id(ValueLike::to_raw(&r), r.r#type().to_string());
        }
        for region in op.regions() {
            let mut b = region.first_block();
            while let Some(block) = b {
                for i in 0..block.argument_count() {
                    let a = block.argument(i).expect("argument");
                    self.id(ValueLike::to_raw(&a), ValueLike::r#type(&a).to_string());
                }
                let mut o = block.first_operation();
                while let Some(op) = o {
                    self.number(&op);
                    o = op.next_in_block();
                }
                b = block.next_in_region();
            }
        }
    }
    fn op(&mut self, op: &OperationRef<'_, '_>) -> ir::Op {
        let name = op.name().as_string_ref().as_str().unwrap_or("").to_string();
        let operands = op.operands().map(|v| self.get(ValueLike::to_raw(&v))).collect();
        let results = op.results().map(|v| self.get(ValueLike::to_raw(&v))).collect();
        let mut attrs = vec![];
        for (k, v) in op.attributes() {
            attrs.push((k.as_string_ref().as_str().unwrap_or("").to_string(), v.to_string()));
        }
        let loc = op.location().to_string();
        let loc = loc.strip_prefix("loc(").and_then(|l| l.strip_suffix(')')).map(str::to_string);
        let loc = loc.filter(|l| l != "unknown");
        let mut regions = vec![];
        let mut successors = vec![];
        if op.successor_count() > 0 {
            // Successor indices refer to the parent region's block list.
            let parent = op.block().and_then(|b| b.parent_region());
            let key = parent.map_or(0, |r| r.to_raw().ptr as usize);
            let index = self.block_index.entry(key).or_insert_with(|| {
                let mut index = HashMap::new();
                if let Some(r) = parent {
                    let mut b = r.first_block();
                    let mut i = 0;
                    while let Some(block) = b {
                        index.insert(block.to_raw().ptr as usize, i);
                        i += 1;
                        b = block.next_in_region();
                    }
                }
                index
            });
            for s in op.successors() {
                successors.push(*index.get(&(s.to_raw().ptr as usize)).unwrap_or(&0));
            }
        }
        for region in op.regions() {
            let mut blocks = vec![];
            let mut b = region.first_block();
            while let Some(block) = b {
                let args = (0..block.argument_count())
                    .map(|i| self.get(ValueLike::to_raw(&block.argument(i).expect("argument"))))
                    .collect();
                let mut ops = vec![];
                let mut o = block.first_operation();
                while let Some(inner) = o {
                    ops.push(self.op(&inner));
                    o = inner.next_in_block();
                }
                blocks.push(ir::Block { args, ops });
                b = block.next_in_region();
            }
            regions.push(ir::Region { blocks });
        }
        ir::Op {
            name,
            operands,
            results,
            attrs,
            regions,
            successors,
            loc,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module using ops with properties, segment sizes, regions and successors
    /// survives import → generic print → parse unchanged.
    #[test]
    fn import_roundtrip() {
        let src = r#"
func.func @f(%a: memref<?xf64>, %n: index, %s: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%s) -> f64 {
    %x = memref.load %a[%i] : memref<?xf64>
    %p = arith.cmpf ogt, %x, %s : f64
    %y = arith.select %p, %x, %s : f64
    scf.reduce(%y : f64) {
    ^bb0(%l: f64, %r2: f64):
      %m = arith.addf %l, %r2 : f64
      scf.reduce.return %m : f64
    }
  } {appy.simd}
  cf.br ^bb1(%r : f64)
^bb1(%z: f64):
  %q = memref.atomic_rmw addf %z, %a[%c0] : (f64, memref<?xf64>) -> f64
  return %z : f64
}
"#;
        let ctx = Ctx::new();
        let m = ctx.parse(src).unwrap();
        let mirror = import(&m);
        let text = mirror.to_generic();
        let again = ctx.parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(pretty(&m, false), pretty(&again, false));
    }
}
