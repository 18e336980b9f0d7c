//! The bridge to MLIR (feature `mlir`): context set-up, parsing and verifying text,
//! importing an MLIR module into the owned mirror ([`crate::ir`]), running textual
//! pass pipelines, and capturing MLIR's diagnostics with their locations (through the
//! diagnostic handler and MLIR's location API, not from message text) as
//! [`IrError`]s.

use crate::diag::{IrError, Location};
use crate::ir;
use melior::{
    Context,
    diagnostic::DiagnosticSeverity,
    dialect::DialectRegistry,
    ir::{
        BlockLike, Module, OperationRef, RegionLike, ValueLike,
        operation::{OperationLike, OperationPrintingFlags},
    },
    pass::PassManager,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// An MLIR context with every upstream dialect, pass and LLVM translation registered,
/// and a diagnostic handler that records MLIR's diagnostics with their locations.
pub struct Ctx {
    /// The MLIR context.
    pub context: Context,
    diags: Rc<RefCell<Vec<MlirDiagnostic>>>,
}

/// A diagnostic MLIR reported, its location resolved to a source position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MlirDiagnostic {
    /// Whether it is an error (else a warning or remark).
    pub is_error: bool,
    /// The message.
    pub message: String,
    /// The first file position its location names (through name, call-site and
    /// fused locations).
    pub location: Option<Location>,
    /// Its notes, each with its location.
    pub notes: Vec<(Option<Location>, String)>,
}

/// The first file position of an MLIR location.
fn resolve(loc: melior::ir::Location<'_>) -> Option<Location> {
    if loc.is_file_line_col_range() {
        let file = loc.file_line_col_range_filename();
        Some(Location {
            file: file.as_string_ref().as_str().ok()?.to_string(),
            line: loc.file_line_col_range_start_line(),
            col: loc.file_line_col_range_start_column(),
        })
    } else if loc.is_name() {
        resolve(loc.name_child_location())
    } else if loc.is_call_site() {
        resolve(loc.call_site_callee()).or_else(|| resolve(loc.call_site_caller()))
    } else if loc.is_fused() {
        (0..loc.fused_num_locations()).find_map(|i| resolve(loc.fused_location(i)))
    } else {
        None
    }
}

impl Default for Ctx {
    fn default() -> Self {
        Self::new()
    }
}

static PASSES: std::sync::Once = std::sync::Once::new();

// `cxx/register.cpp`: the dialects, interfaces, upstream passes and LLVM IR translations
// appy uses (MLIR's register-everything functions would link every dialect and every
// LLVM target).
unsafe extern "C" {
    fn appyRegisterDialects(registry: mlir_sys::MlirDialectRegistry);
    fn appyRegisterPasses();
    fn appyRegisterTranslations(context: mlir_sys::MlirContext);
}

/// The `appy` dialect, defined with IRDL (`appy.irdl.mlir`): the ops the `appy` level
/// needs beyond upstream MLIR. Loops and reductions are upstream `scf` ops carrying
/// appy's annotations as discardable attributes (`appy.parallel`, `appy.simd`,
/// `appy.sequential`, and after strip-mining `appy.lanes`, `appy.chunks`).
pub const APPY_IRDL: &str = include_str!("appy.irdl.mlir");

impl Ctx {
    /// Creates a context (single-threaded: appy's modules are small, and the machines
    /// that run CI have two cores).
    pub fn new() -> Self {
        // SAFETY: the registrations take a live registry and context, and register
        // passes once per process.
        PASSES.call_once(|| unsafe { appyRegisterPasses() });
        let registry = DialectRegistry::new();
        unsafe { appyRegisterDialects(registry.to_raw()) };
        let context = Context::new_with_registry(&registry, false);
        context.load_all_available_dialects();
        unsafe { appyRegisterTranslations(context.to_raw()) };
        let diags: Rc<RefCell<Vec<MlirDiagnostic>>> = Rc::default();
        let sink = diags.clone();
        context.attach_diagnostic_handler(move |d| {
            let notes = (0..d.note_count())
                .filter_map(|i| d.note(i).ok())
                .map(|n| (resolve(n.location()), n.to_string()))
                .collect();
            sink.borrow_mut().push(MlirDiagnostic {
                is_error: matches!(d.severity(), DiagnosticSeverity::Error),
                message: d.to_string(),
                location: resolve(d.location()),
                notes,
            });
            true
        });
        let ctx = Ctx { context, diags };
        let dialect = Module::parse(&ctx.context, APPY_IRDL).expect("the appy IRDL dialect parses");
        assert!(melior::utility::load_irdl_dialects(&dialect), "the appy IRDL dialect loads");
        ctx
    }

    /// Takes the diagnostics MLIR reported since the last call.
    pub fn take_diagnostics(&self) -> Vec<MlirDiagnostic> {
        std::mem::take(&mut self.diags.borrow_mut())
    }

    /// The error `what`, at the first error MLIR reported (with the others as notes).
    fn failure(&self, what: &str) -> IrError {
        let mut diags = self.take_diagnostics();
        let Some(first) = diags.iter().position(|d| d.is_error).or((!diags.is_empty()).then_some(0)) else {
            return IrError::new(what);
        };
        let d = diags.remove(first);
        let mut notes = d.notes;
        for other in diags {
            notes.push((other.location, other.message));
            notes.extend(other.notes);
        }
        IrError {
            message: format!("{what}: {}", d.message),
            location: d.location,
            notes,
            user: false,
        }
    }

    /// Parses and verifies MLIR text (any syntax).
    pub fn parse(&self, text: &str) -> Result<Module<'_>, IrError> {
        self.take_diagnostics();
        let m = Module::parse(&self.context, text).ok_or_else(|| self.failure("MLIR failed to parse the module"))?;
        if !m.as_operation().verify() {
            return Err(self.failure("the module failed MLIR verification"));
        }
        Ok(m)
    }

    /// Prints a mirror module generically, re-parses and verifies it with MLIR.
    pub fn load(&self, m: &ir::Module) -> Result<Module<'_>, IrError> {
        let text = m.to_generic();
        self.parse(&text).inspect_err(|_| {
            tracing::debug!(target: "appy::ir", "module that failed to verify:\n{text}");
        })
    }

    /// Runs a textual pass pipeline (`builtin.module(...)`) over a module.
    pub fn run_pipeline(&self, module: &mut Module<'_>, pipeline: &str) -> Result<(), IrError> {
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

    /// A verifier error is reported at the op's location, read from MLIR's location
    /// and not from the message text.
    #[test]
    fn verifier_errors_are_located() {
        let src = r#"
func.func @f(%a: i64) -> i64 {
  %b = "arith.addi"(%a, %a) : (i64, i64) -> i32 loc("k.py":4:7)
  return %a : i64
}
"#;
        let ctx = Ctx::new();
        let e = ctx.parse(src).unwrap_err();
        let l = e.location.clone().expect("located");
        assert_eq!((l.file.as_str(), l.line, l.col), ("k.py", 4, 7), "{e}");
        assert!(e.message.contains("'arith.addi' op requires the same type"), "{e}");
        assert!(!e.message.contains("k.py"), "{e}");
    }
}
