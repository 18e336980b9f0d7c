//! What each op does to memory: the one table the passes consult (which ops may be
//! moved, duplicated or skipped over), in place of per-pass lists of op names.
//!
//! An op's *own* effects are listed here; the effects of the ops nested in its regions
//! are found by walking them ([`may_write`], [`may_write_to`]). Ops not in the table
//! are assumed to read and write any memory.

use crate::ir::{Op, Value};

/// Which memrefs an op reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// None.
    None,
    /// The memrefs that are these operands.
    Operands(&'static [usize]),
    /// Any memory (calls, kernel launches, ops the table does not know).
    Any,
}

impl Access {
    /// Whether it accesses anything.
    pub fn any(self) -> bool {
        self != Access::None
    }
    /// Whether it may access the memref `mem`, an operand list being `operands`.
    pub fn may_touch(self, operands: &[Value], mem: Value) -> bool {
        match self {
            Access::None => false,
            Access::Operands(ix) => ix.iter().any(|i| operands.get(*i) == Some(&mem)),
            Access::Any => true,
        }
    }
}

/// An op's own memory effects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effects {
    /// What it reads.
    pub reads: Access,
    /// What it writes.
    pub writes: Access,
    /// Whether it allocates memory (`memref.alloc`, `memref.alloca`).
    pub allocates: bool,
    /// Whether it frees a memref (`memref.dealloc`: counted as a write to it).
    pub frees: bool,
}

impl Effects {
    const PURE: Effects = Effects {
        reads: Access::None,
        writes: Access::None,
        allocates: false,
        frees: false,
    };
    const UNKNOWN: Effects = Effects {
        reads: Access::Any,
        writes: Access::Any,
        allocates: false,
        frees: false,
    };
    const fn rw(reads: Access, writes: Access) -> Effects {
        Effects {
            reads,
            writes,
            allocates: false,
            frees: false,
        }
    }
    /// Whether the op has no memory effect at all.
    pub fn is_none(&self) -> bool {
        *self == Effects::PURE
    }
    /// Whether it writes (or frees) memory.
    pub fn writes_any(&self) -> bool {
        self.writes.any() || self.frees
    }
}

/// Ops with no memory effect of their own: values, views of memrefs (casts, subviews:
/// a new descriptor of the same memory), terminators, GPU ids, the tensor
/// values of the `appy` level (the statement that uses them, `appy.assign`, reads).
/// Ops with regions (loops, conditionals, functions) are here too: what they do is
/// what their regions do.
fn effect_free(name: &str) -> bool {
    let dialect = name.split('.').next().unwrap_or("");
    matches!(dialect, "arith" | "math" | "index")
        || matches!(
            name,
            "memref.dim"
                | "memref.cast"
                | "memref.subview"
                | "memref.reinterpret_cast"
                | "memref.collapse_shape"
                | "memref.expand_shape"
                | "memref.memory_space_cast"
                | "scf.yield"
                | "scf.condition"
                | "scf.reduce"
                | "scf.reduce.return"
                | "scf.for"
                | "scf.if"
                | "scf.parallel"
                | "scf.while"
                | "func.func"
                | "func.return"
                | "gpu.func"
                | "gpu.module"
                | "gpu.return"
                | "gpu.block_id"
                | "gpu.thread_id"
                | "gpu.block_dim"
                | "gpu.grid_dim"
                | "gpu.all_reduce"
                | "builtin.module"
                | "appy.mvl"
                | "appy.view"
                | "appy.ew"
                | "appy.reduce"
                | "appy.iota"
                | "appy.alias"
        )
}

/// The memory effects of `op` itself (not of the ops in its regions).
pub fn effects(op: &Op) -> Effects {
    use Access::*;
    match op.name.as_str() {
        n if effect_free(n) => Effects::PURE,
        "memref.load" => Effects::rw(Operands(&[0]), None),
        "memref.store" => Effects::rw(None, Operands(&[1])),
        "memref.atomic_rmw" => Effects::rw(Operands(&[1]), Operands(&[1])),
        "memref.copy" => Effects::rw(Operands(&[0]), Operands(&[1])),
        "memref.alloc" | "memref.alloca" => Effects {
            allocates: true,
            ..Effects::PURE
        },
        "memref.dealloc" => Effects {
            frees: true,
            ..Effects::rw(None, Operands(&[0]))
        },
        // The target; the value's views read arrays the op does not name.
        "appy.assign" => Effects::rw(Any, Operands(&[0])),
        // C = alpha * A @ B + beta * C; x = L⁻¹ b; A = chol(A).
        "appy.gemm" => Effects::rw(Operands(&[0, 1, 2]), Operands(&[0])),
        "appy.trsv" => Effects::rw(Operands(&[0, 2]), Operands(&[1])),
        "appy.potrf" => Effects::rw(Operands(&[0]), Operands(&[0])),
        _ => Effects::UNKNOWN,
    }
}

/// A view or cast of a memref (its first operand): it names the same memory.
pub fn is_view(op: &Op) -> bool {
    matches!(
        op.name.as_str(),
        "memref.cast"
            | "memref.subview"
            | "memref.reinterpret_cast"
            | "memref.collapse_shape"
            | "memref.expand_shape"
            | "memref.memory_space_cast"
    )
}

/// The root of a memref value, through views and casts ([`is_view`]), to the
/// allocation or parameter; `def` gives a value's defining op.
pub fn root<'a>(mut v: Value, def: impl Fn(Value) -> Option<&'a Op>) -> Value {
    while let Some(op) = def(v).filter(|op| is_view(op)) {
        v = op.operands[0];
    }
    v
}

/// An op with no memory effect and no regions: it may be moved, duplicated or dropped
/// (if unused) freely.
pub fn is_pure(op: &Op) -> bool {
    op.regions.is_empty() && effects(op).is_none()
}

/// An op with no regions that writes, frees and allocates nothing (it may read).
pub fn is_read_only(op: &Op) -> bool {
    let e = effects(op);
    op.regions.is_empty() && !e.writes_any() && !e.allocates
}

/// Whether `op` or an op nested in it may write or free memory.
pub fn may_write(op: &Op) -> bool {
    op.walk_any(&|o| effects(o).writes_any())
}

/// Whether `op` or an op nested in it may write or free the memref `mem`.
pub fn may_write_to(op: &Op, mem: Value) -> bool {
    op.walk_any(&|o| effects(o).writes.may_touch(&o.operands, mem))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let (a, b, v) = (Value(0), Value(1), Value(2));
        let store = Op::new("memref.store").with_operands([v, a]);
        assert!(may_write_to(&store, a) && !may_write_to(&store, b) && may_write(&store));
        assert!(is_read_only(&Op::new("memref.load").with_operands([a])));
        assert!(!is_pure(&Op::new("memref.load").with_operands([a])));
        assert!(is_pure(&Op::new("arith.addi")) && is_pure(&Op::new("memref.dim")));
        let call = Op::new("func.call");
        assert!(may_write_to(&call, a) && !is_read_only(&call));
        let dealloc = Op::new("memref.dealloc").with_operands([a]);
        assert!(may_write_to(&dealloc, a));
        assert!(!is_read_only(&Op::new("memref.alloca")));
    }
}
