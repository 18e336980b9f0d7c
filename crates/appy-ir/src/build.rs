//! A small builder that appends MLIR operations (in the owned mirror form) to the
//! region being built, with the current source location attached.

use crate::attrs::{CmpFPredicate, CmpIPredicate, Scalar};
use crate::ir::{Block, Module, Op, Region, Value};
use crate::reduction::Reduction;
use crate::types::{DType, STy};

/// Appends ops to a stack of open op lists (one per region under construction).
pub struct Builder {
    /// The module whose value table the ops use.
    pub m: Module,
    stack: Vec<Vec<Op>>,
    /// Location attached to new ops (MLIR text without `loc(...)`).
    pub loc: Option<String>,
    consts: std::collections::HashMap<Value, i64>,
}

/// `arith.cmpi` predicates.
pub type IPred = CmpIPredicate;

/// `arith.cmpf` predicates.
pub type FPred = CmpFPredicate;

impl Builder {
    /// A builder over a fresh module.
    pub fn new() -> Self {
        Builder {
            m: Module::new(),
            stack: vec![vec![]],
            loc: None,
            consts: Default::default(),
        }
    }
    /// A builder over an existing module's value table (its ops are not touched).
    pub fn over(m: Module) -> Self {
        Builder { m, ..Builder::new() }
    }
    /// Opens a new op list (the body of a region being built).
    pub fn begin(&mut self) {
        self.stack.push(vec![]);
    }
    /// Takes the ops appended so far to the innermost open list, leaving it open and
    /// empty (the insertion point stays where it is).
    pub fn take(&mut self) -> Vec<Op> {
        std::mem::take(self.stack.last_mut().expect("open op list"))
    }
    /// Closes the innermost op list and returns its ops.
    pub fn end(&mut self) -> Vec<Op> {
        self.stack.pop().expect("balanced begin/end")
    }
    /// The op of an open list (not nested in another op) that defines `v`, innermost
    /// list first.
    pub fn find_open_mut(&mut self, v: Value) -> Option<&mut Op> {
        self.stack
            .iter_mut()
            .rev()
            .flat_map(|l| l.iter_mut().rev())
            .find(|o| o.results.contains(&v))
    }
    /// Number of open op lists.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }
    /// Appends an op, attaching the current location if it has none.
    pub fn push(&mut self, mut op: Op) {
        if op.loc.is_none() {
            op.loc = self.loc.clone();
        }
        self.stack.last_mut().expect("open op list").push(op);
    }
    /// Appends an op with one result of type `ty`.
    pub fn op1(&mut self, name: &str, operands: &[Value], ty: &str, attrs: &[(&str, String)]) -> Value {
        let r = self.m.value(ty);
        let mut op = Op::new(name).with_operands(operands.iter().copied()).with_results([r]);
        for (k, v) in attrs {
            op.set_attr(*k, v.clone());
        }
        self.push(op);
        r
    }
    /// Appends an op with no results.
    pub fn op0(&mut self, name: &str, operands: &[Value], attrs: &[(&str, String)]) {
        let mut op = Op::new(name).with_operands(operands.iter().copied());
        for (k, v) in attrs {
            op.set_attr(*k, v.clone());
        }
        self.push(op);
    }
    /// An integer (or index) constant.
    pub fn int(&mut self, v: i64, ty: &str) -> Value {
        // Narrow constants are written as their signed value (a uint8 200 is `-56 : i8`).
        let v = match ty {
            "i8" => v as i8 as i64,
            "i16" => v as i16 as i64,
            "i32" => v as i32 as i64,
            _ => v,
        };
        let text = if ty == "i1" {
            if v != 0 { "true".to_string() } else { "false".to_string() }
        } else {
            format!("{v} : {ty}")
        };
        let r = self.op1("arith.constant", &[], ty, &[("value", text)]);
        self.consts.insert(r, v);
        r
    }
    /// The value of an integer constant made by this builder, if `v` is one.
    pub fn const_int_of(&self, v: Value) -> Option<i64> {
        self.consts.get(&v).copied()
    }
    /// An index constant.
    pub fn index(&mut self, v: i64) -> Value {
        self.int(v, "index")
    }
    /// A float constant (exact, via its bit pattern).
    pub fn float(&mut self, v: f64, ty: &str) -> Value {
        let text = if ty == "f32" {
            format!("0x{:08X} : f32", (v as f32).to_bits())
        } else if let Some(h) = DType::from_mlir(ty).and_then(DType::half) {
            format!("0x{:04X} : {ty}", h.from_f64(v))
        } else {
            format!("0x{:016X} : f64", v.to_bits())
        };
        self.op1("arith.constant", &[], ty, &[("value", text)])
    }
    /// A constant of scalar type `t`.
    pub fn scalar(&mut self, v: f64, t: STy) -> Value {
        if t.is_float() {
            self.float(v, t.mlir())
        } else {
            self.int(v as i64, t.mlir())
        }
    }
    /// A constant of type `ty` (MLIR text).
    pub fn constant(&mut self, v: Scalar, ty: &str) -> Value {
        match v {
            Scalar::Int(i) => self.int(i, ty),
            Scalar::Float(f) => self.float(f, ty),
        }
    }
    /// The identity of reduction `r` over the element type `ty`.
    pub fn identity(&mut self, r: Reduction, ty: &str) -> Result<Value, String> {
        let dt = DType::from_mlir(ty).ok_or_else(|| format!("unsupported reduction type {ty}"))?;
        Ok(self.constant(r.identity(dt), ty))
    }
    /// `combine(x, y)` for reduction `r`.
    pub fn combine(&mut self, r: Reduction, x: Value, y: Value) -> Value {
        let float = crate::types::is_float_type(self.m.ty(x));
        self.bin(r.arith_op(float), x, y)
    }
    /// The combiner region of an `scf.reduce` for reduction `r` over `ty`.
    pub fn combiner(&mut self, r: Reduction, ty: &str) -> Region {
        let x = self.m.value(ty);
        let y = self.m.value(ty);
        let res = self.m.value(ty);
        let ops = vec![
            Op::new(r.arith_op(crate::types::is_float_type(ty)))
                .with_operands([x, y])
                .with_results([res])
                .with_loc(self.loc.clone()),
            Op::new("scf.reduce.return").with_operands([res]).with_loc(self.loc.clone()),
        ];
        Builder::region(vec![x, y], ops)
    }
    /// `i64` → `index`.
    pub fn to_index(&mut self, v: Value) -> Value {
        if self.m.ty(v) == "index" {
            return v;
        }
        self.op1("arith.index_cast", &[v], "index", &[])
    }
    /// `index` → `i64`.
    pub fn to_i64(&mut self, v: Value) -> Value {
        if self.m.ty(v) == "i64" {
            return v;
        }
        self.op1("arith.index_cast", &[v], "i64", &[])
    }
    /// Binary op with result type = operand type.
    pub fn bin(&mut self, name: &str, a: Value, b: Value) -> Value {
        let ty = self.m.ty(a).to_string();
        self.op1(name, &[a, b], &ty, &[])
    }
    /// Integer comparison.
    pub fn cmpi(&mut self, p: IPred, a: Value, b: Value) -> Value {
        self.op1("arith.cmpi", &[a, b], "i1", &[("predicate", p.attr())])
    }
    /// Float comparison.
    pub fn cmpf(&mut self, p: FPred, a: Value, b: Value) -> Value {
        self.op1("arith.cmpf", &[a, b], "i1", &[("predicate", p.attr())])
    }
    /// `arith.select`.
    pub fn select(&mut self, c: Value, a: Value, b: Value) -> Value {
        let ty = self.m.ty(a).to_string();
        self.op1("arith.select", &[c, a, b], &ty, &[])
    }
    /// Converts a scalar between types with NumPy's casting semantics.
    pub fn cast(&mut self, v: Value, from: STy, to: STy) -> Value {
        let (f, t) = (from.dt, to.dt);
        if f.mlir() == t.mlir() {
            return v;
        }
        let ty = t.mlir();
        match (f, t) {
            (_, DType::Bool) => {
                if f.is_float() {
                    let z = self.float(0.0, f.mlir());
                    self.cmpf(FPred::Une, v, z)
                } else {
                    let z = self.int(0, f.mlir());
                    self.cmpi(IPred::Ne, v, z)
                }
            }
            (DType::Bool, _) if t.is_float() => self.op1("arith.uitofp", &[v], ty, &[]),
            (DType::Bool, _) => self.op1("arith.extui", &[v], ty, &[]),
            _ if f.is_int() && t.is_int() => {
                if f.bits() < t.bits() {
                    // The source's signedness decides: uint8 255 widens to 255.
                    self.op1(if f.is_unsigned() { "arith.extui" } else { "arith.extsi" }, &[v], ty, &[])
                } else {
                    self.op1("arith.trunci", &[v], ty, &[])
                }
            }
            _ if f.is_int() => self.op1(if f.is_unsigned() { "arith.uitofp" } else { "arith.sitofp" }, &[v], ty, &[]),
            (_, DType::U64) => self.op1("arith.fptoui", &[v], ty, &[]),
            _ if t.is_int() && t.bits() < 64 && t != DType::I32 => {
                // Through int64, then wrapped to the width (as NumPy's casts do on the
                // usual platforms: 300.0 → uint8 44, -1.0 → uint8 255).
                let w = self.op1("arith.fptosi", &[v], "i64", &[]);
                self.op1("arith.trunci", &[w], ty, &[])
            }
            _ if t.is_int() => self.op1("arith.fptosi", &[v], ty, &[]),
            _ if f.bits() == t.bits() => {
                // float16 <-> bfloat16: through float32 (exact), then rounded.
                let w = self.op1("arith.extf", &[v], "f32", &[]);
                self.op1("arith.truncf", &[w], ty, &[])
            }
            _ => {
                if f.bits() < t.bits() {
                    self.op1("arith.extf", &[v], ty, &[])
                } else {
                    self.op1("arith.truncf", &[v], ty, &[])
                }
            }
        }
    }
    /// `memref.alloca() : memref<T>` (a private scalar slot).
    pub fn alloca_op(&mut self, ty: &str) -> (Op, Value) {
        let r = self.m.value(format!("memref<{ty}>"));
        let op = Op::new("memref.alloca")
            .with_results([r])
            .with_attr("operandSegmentSizes", "array<i32: 0, 0>")
            .with_loc(self.loc.clone());
        (op, r)
    }
    /// `memref.load`.
    pub fn load(&mut self, m: Value, idx: &[Value]) -> Value {
        let elem = memref_elem(self.m.ty(m)).to_string();
        let mut ops = vec![m];
        ops.extend_from_slice(idx);
        self.op1("memref.load", &ops, &elem, &[])
    }
    /// `memref.store`.
    pub fn store(&mut self, v: Value, m: Value, idx: &[Value]) {
        let mut ops = vec![v, m];
        ops.extend_from_slice(idx);
        self.op0("memref.store", &ops, &[]);
    }
    /// Builds a region with one block with `args` and the given ops.
    pub fn region(args: Vec<Value>, ops: Vec<Op>) -> Region {
        Region::single(Block { args, ops })
    }
    /// `scf.if` without results; `then`/`orelse` must end in `scf.yield`.
    pub fn if_op(&mut self, c: Value, then: Vec<Op>, orelse: Option<Vec<Op>>) {
        self.if_op_with_results(c, then, orelse, &[]);
    }
    /// `scf.if` with `results` (each branch's `scf.yield` passes them; with results,
    /// both branches must be present).
    pub fn if_op_with_results(&mut self, c: Value, then: Vec<Op>, orelse: Option<Vec<Op>>, results: &[Value]) {
        let op = Op::new("scf.if")
            .with_operands([c])
            .with_results(results.iter().copied())
            .with_region(Self::region(vec![], then))
            .with_region(Region {
                blocks: orelse.map(|o| vec![Block { args: vec![], ops: o }]).unwrap_or_default(),
            });
        self.push(op);
    }
    /// `scf.yield` with values.
    pub fn yield_op(vals: &[Value]) -> Op {
        Op::new("scf.yield").with_operands(vals.iter().copied())
    }
}

/// The element type of a memref type as stored, as MLIR spells it (`f64` of
/// `memref<?x4xf64>`; booleans are bytes, `i8`), ignoring a layout or memory space.
pub fn memref_elem(ty: &str) -> &str {
    ty.strip_prefix("memref<")
        .map(|t| t.split(',').next().unwrap_or(t).trim_end_matches('>'))
        .and_then(|t| t.rsplit('x').next())
        .unwrap_or("f64")
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}
