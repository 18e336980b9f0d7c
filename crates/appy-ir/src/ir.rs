//! An owned, mutable mirror of MLIR operations.
//!
//! Rust passes in appy work on this representation: a tree of [`Op`]s with regions,
//! blocks and SSA [`Value`] ids, where rewriting is ordinary Rust (vectors, matching,
//! moving subtrees). It is *not* a second IR with its own semantics: every op is an
//! MLIR operation (name, operands, results, attributes, regions, successors) and the
//! whole module is printed in MLIR's generic syntax and re-parsed and verified by
//! MLIR after every pass (see `crate::mlir`). Attributes and types are kept as their
//! MLIR textual form.
//!
//! The mirror has no dependency on MLIR itself, so the GPU runner (built without
//! MLIR) can deserialize and interpret a host function from a compiled bundle.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt::Write;

/// An SSA value id, unique within a [`Module`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Value(pub u32);

/// An operation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Op {
    /// Full name, e.g. `arith.addi`.
    pub name: String,
    /// Operands (including successor operands, as in MLIR's generic form).
    pub operands: Vec<Value>,
    /// Results.
    pub results: Vec<Value>,
    /// Attributes (inherent and discardable): name and MLIR textual value.
    pub attrs: Vec<(String, String)>,
    /// Nested regions.
    pub regions: Vec<Region>,
    /// Successor blocks, as indices into the enclosing region's block list.
    pub successors: Vec<usize>,
    /// MLIR location text without `loc(...)`, e.g. `"k.py":3:5`.
    pub loc: Option<String>,
}

/// A region: a list of blocks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Region {
    /// Blocks; the first is the entry block.
    pub blocks: Vec<Block>,
}

/// A basic block.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// Block arguments.
    pub args: Vec<Value>,
    /// Operations in order.
    pub ops: Vec<Op>,
}

/// A module: the `builtin.module` op plus the type of every value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Module {
    /// The top-level `builtin.module` operation (one region, one block).
    pub op: Op,
    /// Type (MLIR text) of each value, indexed by [`Value`] id.
    pub types: Vec<String>,
}

impl Default for Module {
    fn default() -> Self {
        Self::new()
    }
}

impl Op {
    /// A new op with no operands, results, attributes or regions.
    pub fn new(name: impl Into<String>) -> Self {
        Op {
            name: name.into(),
            ..Default::default()
        }
    }
    /// Builder: sets operands.
    pub fn with_operands(mut self, operands: impl IntoIterator<Item = Value>) -> Self {
        self.operands = operands.into_iter().collect();
        self
    }
    /// Builder: sets results.
    pub fn with_results(mut self, results: impl IntoIterator<Item = Value>) -> Self {
        self.results = results.into_iter().collect();
        self
    }
    /// Builder: adds an attribute.
    pub fn with_attr(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.set_attr(name, value);
        self
    }
    /// Builder: adds a region.
    pub fn with_region(mut self, region: Region) -> Self {
        self.regions.push(region);
        self
    }
    /// Builder: sets the location.
    pub fn with_loc(mut self, loc: Option<String>) -> Self {
        self.loc = loc;
        self
    }
    /// The attribute's text, if present.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
    /// Whether the attribute is present.
    pub fn has_attr(&self, name: &str) -> bool {
        self.attr(name).is_some()
    }
    /// Sets (or replaces) an attribute.
    pub fn set_attr(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let (name, value) = (name.into(), value.into());
        if let Some(slot) = self.attrs.iter_mut().find(|(n, _)| *n == name) {
            slot.1 = value;
        } else {
            self.attrs.push((name, value));
        }
    }
    /// Removes an attribute, returning its value.
    pub fn remove_attr(&mut self, name: &str) -> Option<String> {
        let i = self.attrs.iter().position(|(n, _)| n == name)?;
        Some(self.attrs.remove(i).1)
    }
    /// The single result; panics if the op does not have exactly one (a compiler bug).
    pub fn result(&self) -> Value {
        assert_eq!(self.results.len(), 1, "{} has {} results", self.name, self.results.len());
        self.results[0]
    }
    /// The entry block of region `i`.
    pub fn body(&self, i: usize) -> &Block {
        &self.regions[i].blocks[0]
    }
    /// The entry block of region `i`, mutably.
    pub fn body_mut(&mut self, i: usize) -> &mut Block {
        &mut self.regions[i].blocks[0]
    }
    /// Visits this op and all nested ops, pre-order.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Op)) {
        f(self);
        for r in &self.regions {
            for b in &r.blocks {
                for o in &b.ops {
                    o.walk(f);
                }
            }
        }
    }
    /// Visits this op and all nested ops mutably, pre-order.
    pub fn walk_mut(&mut self, f: &mut impl FnMut(&mut Op)) {
        f(self);
        for r in &mut self.regions {
            for b in &mut r.blocks {
                for o in &mut b.ops {
                    o.walk_mut(f);
                }
            }
        }
    }
    /// Rewrites the ops nested in this op's regions, innermost first: each nested op,
    /// once its own nested ops are rewritten, is handed to `f` with the list that
    /// replaces the block's ops, and `f` pushes what stands in its place (the op
    /// itself, or new ops). `cx` is the pass's context (a builder, the module).
    pub fn rewrite_nested<C: ?Sized, E>(
        &mut self,
        cx: &mut C,
        f: &mut impl FnMut(&mut C, Op, &mut Vec<Op>) -> Result<(), E>,
    ) -> Result<(), E> {
        for r in &mut self.regions {
            for b in &mut r.blocks {
                let ops = std::mem::take(&mut b.ops);
                let mut out = Vec::with_capacity(ops.len());
                for mut o in ops {
                    o.rewrite_nested(cx, f)?;
                    f(cx, o, &mut out)?;
                }
                b.ops = out;
            }
        }
        Ok(())
    }
    /// Whether this op or any nested op satisfies `pred`.
    pub fn walk_any(&self, pred: &dyn Fn(&Op) -> bool) -> bool {
        let mut hit = false;
        self.walk(&mut |o| hit |= pred(o));
        hit
    }
    /// Replaces every use of a value (operands, recursively) according to `map`.
    pub fn remap_uses(&mut self, map: &HashMap<Value, Value>) {
        self.walk_mut(&mut |o| {
            for v in &mut o.operands {
                if let Some(n) = map.get(v) {
                    *v = *n;
                }
            }
        });
    }
    /// Values used inside this op (or its regions) but defined outside of it.
    pub fn free_values(&self) -> Vec<Value> {
        let mut defined = std::collections::HashSet::new();
        self.walk(&mut |o| {
            defined.extend(o.results.iter().copied());
            for r in &o.regions {
                for b in &r.blocks {
                    defined.extend(b.args.iter().copied());
                }
            }
        });
        let mut seen = std::collections::HashSet::new();
        let mut out = vec![];
        self.walk(&mut |o| {
            for v in &o.operands {
                if !defined.contains(v) && seen.insert(*v) {
                    out.push(*v);
                }
            }
        });
        out
    }
}

impl Block {
    /// A block with the given arguments and no ops.
    pub fn new(args: Vec<Value>) -> Self {
        Block { args, ops: vec![] }
    }
}

impl Region {
    /// A region with one block.
    pub fn single(block: Block) -> Self {
        Region { blocks: vec![block] }
    }
}

impl Module {
    /// An empty `builtin.module`.
    pub fn new() -> Self {
        let op = Op::new("builtin.module").with_region(Region::single(Block::default()));
        Module { op, types: vec![] }
    }
    /// A fresh value of type `ty` (MLIR text).
    pub fn value(&mut self, ty: impl Into<String>) -> Value {
        self.types.push(ty.into());
        Value(self.types.len() as u32 - 1)
    }
    /// The type of a value.
    pub fn ty(&self, v: Value) -> &str {
        &self.types[v.0 as usize]
    }
    /// The ops of the module body.
    pub fn body(&self) -> &Vec<Op> {
        &self.op.regions[0].blocks[0].ops
    }
    /// The ops of the module body, mutably.
    pub fn body_mut(&mut self) -> &mut Vec<Op> {
        &mut self.op.regions[0].blocks[0].ops
    }
    /// Finds a top-level `func.func` by symbol name.
    pub fn func(&self, name: &str) -> Option<&Op> {
        self.body()
            .iter()
            .find(|o| o.name == "func.func" && o.attr("sym_name") == Some(&format!("\"{name}\"")))
    }
    /// Prints the module in MLIR's generic syntax (always re-parseable by MLIR).
    pub fn to_generic(&self) -> String {
        let mut p = Printer {
            m: self,
            out: String::new(),
        };
        p.op(&self.op, 0);
        p.out
    }
    /// Deep-copies `op` giving every value defined inside it a fresh id; values
    /// defined outside keep their ids unless `map` already maps them.
    pub fn clone_op(&mut self, op: &Op, map: &mut HashMap<Value, Value>) -> Op {
        let mut out = op.clone();
        self.clone_fresh(&mut out, map);
        out
    }
    fn clone_fresh(&mut self, op: &mut Op, map: &mut HashMap<Value, Value>) {
        for v in &mut op.operands {
            if let Some(n) = map.get(v) {
                *v = *n;
            }
        }
        for r in &mut op.regions {
            for b in &mut r.blocks {
                for a in &mut b.args {
                    let n = self.value(self.ty(*a).to_string());
                    map.insert(*a, n);
                    *a = n;
                }
            }
            for b in &mut r.blocks {
                for o in &mut b.ops {
                    self.clone_fresh(o, map);
                }
            }
        }
        for v in &mut op.results {
            let n = self.value(self.ty(*v).to_string());
            map.insert(*v, n);
            *v = n;
        }
    }
}

struct Printer<'a> {
    m: &'a Module,
    out: String,
}

impl Printer<'_> {
    fn val(&mut self, v: Value) {
        let _ = write!(self.out, "%v{}", v.0);
    }
    fn op(&mut self, op: &Op, ind: usize) {
        let pad = "  ".repeat(ind);
        self.out.push_str(&pad);
        if !op.results.is_empty() {
            for (i, r) in op.results.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.val(*r);
            }
            self.out.push_str(" = ");
        }
        let _ = write!(self.out, "\"{}\"(", op.name);
        for (i, v) in op.operands.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.val(*v);
        }
        self.out.push(')');
        if !op.successors.is_empty() {
            self.out.push('[');
            for (i, s) in op.successors.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                let _ = write!(self.out, "^bb{s}");
            }
            self.out.push(']');
        }
        if !op.regions.is_empty() {
            self.out.push_str(" (");
            for (i, r) in op.regions.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.out.push_str("{\n");
                for (bi, b) in r.blocks.iter().enumerate() {
                    // An empty block is printed with its label: `{}` alone would
                    // read back as a region without blocks.
                    if bi > 0 || !b.args.is_empty() || b.ops.is_empty() {
                        let _ = write!(self.out, "{pad}^bb{bi}");
                        if !b.args.is_empty() {
                            self.out.push('(');
                            for (ai, a) in b.args.iter().enumerate() {
                                if ai > 0 {
                                    self.out.push_str(", ");
                                }
                                self.val(*a);
                                let _ = write!(self.out, ": {}", self.m.ty(*a));
                            }
                            self.out.push(')');
                        }
                        self.out.push_str(":\n");
                    }
                    for o in &b.ops {
                        self.op(o, ind + 1);
                    }
                }
                let _ = write!(self.out, "{pad}}}");
            }
            self.out.push(')');
        }
        if !op.attrs.is_empty() {
            self.out.push_str(" {");
            for (i, (k, v)) in op.attrs.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                let key = if k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '$') {
                    k.clone()
                } else {
                    format!("\"{k}\"")
                };
                if v == "unit" {
                    self.out.push_str(&key);
                } else {
                    let _ = write!(self.out, "{key} = {v}");
                }
            }
            self.out.push('}');
        }
        self.out.push_str(" : (");
        for (i, v) in op.operands.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.out.push_str(self.m.ty(*v));
        }
        self.out.push_str(") -> ");
        if op.results.len() == 1 {
            self.out.push_str(self.m.ty(op.results[0]));
        } else {
            self.out.push('(');
            for (i, v) in op.results.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.out.push_str(self.m.ty(*v));
            }
            self.out.push(')');
        }
        if let Some(l) = &op.loc {
            let _ = write!(self.out, " loc({l})");
        }
        self.out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_generic_form() {
        let mut m = Module::new();
        let a = m.value("i64");
        let b = m.value("i64");
        m.body_mut()
            .push(Op::new("arith.constant").with_results([a]).with_attr("value", "1 : i64"));
        m.body_mut().push(Op::new("arith.addi").with_operands([a, a]).with_results([b]));
        let s = m.to_generic();
        assert!(s.contains("%v0 = \"arith.constant\"() {value = 1 : i64} : () -> i64"), "{s}");
        assert!(s.contains("%v1 = \"arith.addi\"(%v0, %v0) : (i64, i64) -> i64"), "{s}");
    }

    #[test]
    fn clone_gives_fresh_ids() {
        let mut m = Module::new();
        let outer = m.value("index");
        let arg = m.value("index");
        let r = m.value("index");
        let mut blk = Block::new(vec![arg]);
        blk.ops.push(Op::new("arith.addi").with_operands([arg, outer]).with_results([r]));
        let op = Op::new("test.region").with_region(Region::single(blk));
        let mut map = HashMap::new();
        let c = m.clone_op(&op, &mut map);
        assert_ne!(c.body(0).args[0], arg);
        assert_eq!(c.body(0).ops[0].operands[1], outer);
        assert_eq!(c.body(0).ops[0].operands[0], c.body(0).args[0]);
        assert_eq!(op.free_values(), vec![outer]);
    }
}
