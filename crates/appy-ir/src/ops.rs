//! Typed views of the ops appy's passes and runtime read: each `X::of(&op)` checks the
//! op's name and shape and returns its operands, attributes and regions by meaning
//! (`MemrefLoad::of(op)?.indices`), so that operand positions and attribute texts are
//! decoded here once.

use crate::attrs::{AtomicKind, CmpFPredicate, CmpIPredicate, Scalar, flag, i64_array, int_array, parse_constant, symbol_leaf};
use crate::ir::{Module, Op, Value};
use crate::schedule::LoopKind;
use crate::types::MemRefType;

/// `arith.constant`.
#[derive(Clone, Copy, Debug)]
pub struct Constant {
    /// The value.
    pub value: Scalar,
    /// The result.
    pub result: Value,
}

impl Constant {
    /// The view of `op`, if it is an integer or float constant.
    pub fn of(op: &Op, m: &Module) -> Option<Constant> {
        if op.name != "arith.constant" || op.results.len() != 1 {
            return None;
        }
        let result = op.results[0];
        let value = parse_constant(op.attr("value")?, m.ty(result))?;
        Some(Constant { value, result })
    }
}

/// `arith.cmpi`.
#[derive(Clone, Copy, Debug)]
pub struct CmpI {
    /// The predicate.
    pub pred: CmpIPredicate,
    /// Left operand.
    pub lhs: Value,
    /// Right operand.
    pub rhs: Value,
}

impl CmpI {
    /// The view of `op`.
    pub fn of(op: &Op) -> Option<CmpI> {
        if op.name != "arith.cmpi" || op.operands.len() != 2 {
            return None;
        }
        Some(CmpI {
            pred: CmpIPredicate::parse(op.attr("predicate")?)?,
            lhs: op.operands[0],
            rhs: op.operands[1],
        })
    }
}

/// `arith.cmpf`.
#[derive(Clone, Copy, Debug)]
pub struct CmpF {
    /// The predicate.
    pub pred: CmpFPredicate,
    /// Left operand.
    pub lhs: Value,
    /// Right operand.
    pub rhs: Value,
}

impl CmpF {
    /// The view of `op`.
    pub fn of(op: &Op) -> Option<CmpF> {
        if op.name != "arith.cmpf" || op.operands.len() != 2 {
            return None;
        }
        Some(CmpF {
            pred: CmpFPredicate::parse(op.attr("predicate")?)?,
            lhs: op.operands[0],
            rhs: op.operands[1],
        })
    }
}

/// `memref.load`.
#[derive(Clone, Copy, Debug)]
pub struct MemrefLoad<'a> {
    /// The memref.
    pub memref: Value,
    /// One index per dimension.
    pub indices: &'a [Value],
    /// The loaded value.
    pub result: Value,
}

impl<'a> MemrefLoad<'a> {
    /// The view of `op`.
    pub fn of(op: &'a Op) -> Option<Self> {
        if op.name != "memref.load" || op.operands.is_empty() || op.results.len() != 1 {
            return None;
        }
        Some(MemrefLoad {
            memref: op.operands[0],
            indices: &op.operands[1..],
            result: op.results[0],
        })
    }
}

/// `memref.store`.
#[derive(Clone, Copy, Debug)]
pub struct MemrefStore<'a> {
    /// The stored value.
    pub value: Value,
    /// The memref.
    pub memref: Value,
    /// One index per dimension.
    pub indices: &'a [Value],
}

impl<'a> MemrefStore<'a> {
    /// The view of `op`.
    pub fn of(op: &'a Op) -> Option<Self> {
        if op.name != "memref.store" || op.operands.len() < 2 {
            return None;
        }
        Some(MemrefStore {
            value: op.operands[0],
            memref: op.operands[1],
            indices: &op.operands[2..],
        })
    }
}

/// `memref.atomic_rmw`.
#[derive(Clone, Copy, Debug)]
pub struct AtomicRmw<'a> {
    /// How the operand combines with memory.
    pub kind: AtomicKind,
    /// The operand.
    pub value: Value,
    /// The memref.
    pub memref: Value,
    /// One index per dimension.
    pub indices: &'a [Value],
    /// The value memory held before.
    pub result: Value,
}

impl<'a> AtomicRmw<'a> {
    /// The view of `op`.
    pub fn of(op: &'a Op) -> Option<Self> {
        if op.name != "memref.atomic_rmw" || op.operands.len() < 2 || op.results.len() != 1 {
            return None;
        }
        Some(AtomicRmw {
            kind: AtomicKind::parse(op.attr("kind")?)?,
            value: op.operands[0],
            memref: op.operands[1],
            indices: &op.operands[2..],
            result: op.results[0],
        })
    }
}

/// `memref.alloc` (device memory) or `memref.alloca` (a stack slot).
#[derive(Clone, Debug)]
pub struct MemrefAlloc<'a> {
    /// The type allocated.
    pub ty: MemRefType,
    /// The sizes of its dynamic dimensions, in order.
    pub sizes: &'a [Value],
    /// `memref.alloca`.
    pub stack: bool,
    /// The memref.
    pub result: Value,
}

impl<'a> MemrefAlloc<'a> {
    /// The view of `op`.
    pub fn of(op: &'a Op, m: &Module) -> Option<Self> {
        let stack = match op.name.as_str() {
            "memref.alloc" => false,
            "memref.alloca" => true,
            _ => return None,
        };
        let result = *op.results.first()?;
        let ty = MemRefType::parse(m.ty(result))?;
        let sizes = op.operands.get(..ty.dynamic_dims())?;
        Some(MemrefAlloc { ty, sizes, stack, result })
    }
}

/// `scf.for`.
#[derive(Clone, Copy, Debug)]
pub struct ScfFor<'a> {
    /// Lower bound.
    pub lb: Value,
    /// Upper bound (exclusive).
    pub ub: Value,
    /// Step.
    pub step: Value,
    /// Initial values of the loop-carried values.
    pub inits: &'a [Value],
    /// The induction variable.
    pub iv: Value,
    /// The loop-carried values inside the body.
    pub iter_args: &'a [Value],
    /// The body (ending in `scf.yield`).
    pub body: &'a [Op],
    /// The final loop-carried values.
    pub results: &'a [Value],
}

impl<'a> ScfFor<'a> {
    /// The view of `op`.
    pub fn of(op: &'a Op) -> Option<Self> {
        if op.name != "scf.for" || op.operands.len() < 3 {
            return None;
        }
        let blk = op.regions.first()?.blocks.first()?;
        let (iv, iter_args) = blk.args.split_first()?;
        Some(ScfFor {
            lb: op.operands[0],
            ub: op.operands[1],
            step: op.operands[2],
            inits: &op.operands[3..],
            iv: *iv,
            iter_args,
            body: &blk.ops,
            results: &op.results,
        })
    }
}

/// `scf.while`.
#[derive(Clone, Copy, Debug)]
pub struct ScfWhile<'a> {
    /// Initial values.
    pub inits: &'a [Value],
    /// The condition region's arguments.
    pub before_args: &'a [Value],
    /// The condition region (ending in `scf.condition`).
    pub before: &'a [Op],
    /// The body's arguments.
    pub after_args: &'a [Value],
    /// The body (ending in `scf.yield`).
    pub after: &'a [Op],
    /// Results.
    pub results: &'a [Value],
}

impl<'a> ScfWhile<'a> {
    /// The view of `op`.
    pub fn of(op: &'a Op) -> Option<Self> {
        if op.name != "scf.while" || op.regions.len() != 2 {
            return None;
        }
        let b = op.regions[0].blocks.first()?;
        let a = op.regions[1].blocks.first()?;
        Some(ScfWhile {
            inits: &op.operands,
            before_args: &b.args,
            before: &b.ops,
            after_args: &a.args,
            after: &a.ops,
            results: &op.results,
        })
    }
}

/// `scf.if`.
#[derive(Clone, Copy, Debug)]
pub struct ScfIf<'a> {
    /// The condition (`i1`).
    pub cond: Value,
    /// The then-branch (ending in `scf.yield`).
    pub then: &'a [Op],
    /// The else-branch, if any.
    pub orelse: Option<&'a [Op]>,
    /// Results.
    pub results: &'a [Value],
}

impl<'a> ScfIf<'a> {
    /// The view of `op`.
    pub fn of(op: &'a Op) -> Option<Self> {
        if op.name != "scf.if" || op.operands.len() != 1 {
            return None;
        }
        let then = &op.regions.first()?.blocks.first()?.ops;
        let orelse = op.regions.get(1).and_then(|r| r.blocks.first()).map(|b| b.ops.as_slice());
        Some(ScfIf {
            cond: op.operands[0],
            then,
            orelse,
            results: &op.results,
        })
    }
}

/// `scf.parallel`.
#[derive(Clone, Copy, Debug)]
pub struct ScfParallel<'a> {
    /// Lower bounds, one per dimension.
    pub lbs: &'a [Value],
    /// Upper bounds.
    pub ubs: &'a [Value],
    /// Steps.
    pub steps: &'a [Value],
    /// Initial values of the reductions.
    pub inits: &'a [Value],
    /// Induction variables.
    pub ivs: &'a [Value],
    /// The body, ending in `scf.reduce`.
    pub body: &'a [Op],
    /// What appy uses it for.
    pub kind: LoopKind,
}

impl<'a> ScfParallel<'a> {
    /// The view of `op`.
    pub fn of(op: &'a Op) -> Option<Self> {
        if op.name != "scf.parallel" {
            return None;
        }
        let blk = op.regions.first()?.blocks.first()?;
        let d = blk.args.len();
        if op.operands.len() < 3 * d {
            return None;
        }
        let kind = LoopKind::of(op)?;
        Some(ScfParallel {
            lbs: &op.operands[..d],
            ubs: &op.operands[d..2 * d],
            steps: &op.operands[2 * d..3 * d],
            inits: &op.operands[3 * d..],
            ivs: &blk.args,
            body: &blk.ops,
            kind,
        })
    }
    /// The `scf.reduce` terminator.
    pub fn reduce(&self) -> Option<&'a Op> {
        self.body.last().filter(|o| o.name == "scf.reduce")
    }
}

/// `gpu.launch_func`.
#[derive(Clone, Copy, Debug)]
pub struct LaunchFunc<'a> {
    /// The kernel's name (the leaf of `@module::@kernel`).
    pub kernel: &'a str,
    /// Grid size (x, y, z).
    pub grid: [Value; 3],
    /// Block size (x, y, z).
    pub block: [Value; 3],
    /// The kernel's operands.
    pub args: &'a [Value],
}

impl<'a> LaunchFunc<'a> {
    /// The view of `op` (no async dependencies, cluster sizes or dynamic shared memory:
    /// appy's launches have none).
    pub fn of(op: &'a Op) -> Option<Self> {
        if op.name != "gpu.launch_func" {
            return None;
        }
        let o = &op.operands;
        let args = match op.attr("operandSegmentSizes").map(int_array) {
            Some(seg) => {
                // async deps, grid x y z, block x y z, cluster x y z, dynamic shared
                // memory, kernel operands, async object.
                if seg.len() != 13 || seg[0] != 0 || seg[1..7].iter().any(|s| *s != 1) || seg[7..11].iter().any(|s| *s != 0) {
                    return None;
                }
                o.get(6..6 + seg[11] as usize)?
            }
            None => o.get(6..)?,
        };
        Some(LaunchFunc {
            kernel: symbol_leaf(op.attr("kernel")?),
            grid: [o[0], o[1], o[2]],
            block: [o[3], o[4], o[5]],
            args,
        })
    }
}

/// `appy.gemm`: `C[ci.., cj..] = alpha * op(A) @ op(B) + beta * C` over `m x n x k`.
#[derive(Clone, Copy, Debug)]
pub struct Gemm {
    /// C, A, B.
    pub mems: [Value; 3],
    /// The row and column offsets of C, A and B.
    pub offsets: [Value; 6],
    /// m, n, k.
    pub sizes: [Value; 3],
    /// alpha.
    pub alpha: Value,
    /// beta.
    pub beta: Value,
    /// `op(A) = Aᵀ`.
    pub trans_a: bool,
    /// `op(B) = Bᵀ`.
    pub trans_b: bool,
    /// A matrix-vector product (C and B are vectors).
    pub vec: bool,
}

impl Gemm {
    /// The view of `op`.
    pub fn of(op: &Op) -> Option<Gemm> {
        let o = &op.operands;
        if op.name != "appy.gemm" || o.len() != 14 {
            return None;
        }
        Some(Gemm {
            mems: [o[0], o[1], o[2]],
            offsets: [o[3], o[4], o[5], o[6], o[7], o[8]],
            sizes: [o[9], o[10], o[11]],
            alpha: o[12],
            beta: o[13],
            trans_a: flag(op.attr("trans_a")),
            trans_b: flag(op.attr("trans_b")),
            vec: flag(op.attr("vec")),
        })
    }
}

/// `appy.trsv(L, x, b, n)`.
#[derive(Clone, Copy, Debug)]
pub struct Trsv {
    /// L, x, b.
    pub mems: [Value; 3],
    /// n.
    pub n: Value,
}

impl Trsv {
    /// The view of `op`.
    pub fn of(op: &Op) -> Option<Trsv> {
        let o = &op.operands;
        (op.name == "appy.trsv" && o.len() == 4).then(|| Trsv {
            mems: [o[0], o[1], o[2]],
            n: o[3],
        })
    }
}

/// `appy.potrf(A, n)`.
#[derive(Clone, Copy, Debug)]
pub struct Potrf {
    /// A.
    pub a: Value,
    /// n.
    pub n: Value,
}

impl Potrf {
    /// The view of `op`.
    pub fn of(op: &Op) -> Option<Potrf> {
        let o = &op.operands;
        (op.name == "appy.potrf" && o.len() == 2).then(|| Potrf { a: o[0], n: o[1] })
    }
}

/// The per-axis steps of an `appy.view` or `appy.assign` (`steps` attribute; 1 on every
/// axis when absent): a sliced axis reads `lower + step * i` for the dimension's `i`.
pub fn steps_of(op: &Op, axes: usize) -> Vec<i64> {
    let mut s = op.attr("steps").map(int_array).unwrap_or_default();
    s.resize(axes, 1);
    s
}

/// `appy.assign`: a tensor statement (see `appy.irdl.mlir`), its parts owned, so that
/// passes can change them and [`AppyAssign::build`] the statement again.
#[derive(Clone, Debug)]
pub struct AppyAssign {
    /// The target memref (an array, or a 0-d slot).
    pub target: Value,
    /// The value (a tensor, or a scalar that is broadcast).
    pub value: Value,
    /// Per target axis: the lower bound (sliced axis) or the index (scalar axis), i64.
    pub idx: Vec<Value>,
    /// Extent of each statement dimension (i64).
    pub exts: Vec<Value>,
    /// Per target axis: the statement dimension, or -1 for a scalar index.
    pub dims: Vec<i64>,
    /// Loop order (statement dimensions, outermost first).
    pub order: Vec<usize>,
    /// `parallel` per dimension.
    pub parallel: Vec<bool>,
    /// `simd` per dimension.
    pub simd: Vec<bool>,
    /// `le(c)` per dimension (0: none).
    pub le: Vec<i64>,
    /// `memref.atomic_rmw` kind for `#pragma atomic` updates.
    pub atomic: Option<AtomicKind>,
    /// Per target axis: the step of a sliced axis (`a[::2]`), 1 otherwise.
    pub steps: Vec<i64>,
}

impl AppyAssign {
    /// Reads an `appy.assign`.
    pub fn of(op: &Op) -> Result<AppyAssign, String> {
        let bad = |what: &str| format!("malformed appy.assign: {what}");
        let seg = int_array(op.attr("operandSegmentSizes").ok_or_else(|| bad("no operandSegmentSizes"))?);
        let [1, 1, ni, ne] = seg.as_slice() else {
            return Err(bad("operandSegmentSizes"));
        };
        let (ni, ne) = (*ni as usize, *ne as usize);
        if op.operands.len() != 2 + ni + ne {
            return Err(bad("operand count"));
        }
        let get = |k: &str| op.attr(k).map(int_array).unwrap_or_default();
        let dims = get("dims");
        let order: Vec<usize> = get("order").into_iter().map(|x| x as usize).collect();
        let flags = |k: &str| -> Vec<bool> {
            let mut v: Vec<bool> = get(k).into_iter().map(|x| x != 0).collect();
            v.resize(ne, false);
            v
        };
        let mut le = get("le");
        le.resize(ne, 0);
        if dims.len() != ni || order.iter().any(|d| *d >= ne) {
            return Err(bad("dims/order do not match the operands"));
        }
        let mut order = order;
        for d in 0..ne {
            if !order.contains(&d) {
                order.push(d);
            }
        }
        let atomic = match op.attr("atomic") {
            Some(t) => Some(AtomicKind::parse(t).ok_or_else(|| bad("atomic kind"))?),
            None => None,
        };
        Ok(AppyAssign {
            target: op.operands[0],
            value: op.operands[1],
            idx: op.operands[2..2 + ni].to_vec(),
            exts: op.operands[2 + ni..].to_vec(),
            dims,
            order,
            parallel: flags("parallel"),
            simd: flags("simd"),
            le,
            atomic,
            steps: steps_of(op, ni),
        })
    }

    /// Builds an `appy.assign` with these parts, keeping `like`'s other attributes.
    pub fn build(&self, like: &Op) -> Op {
        let mut op = Op::new("appy.assign")
            .with_operands(
                [self.target, self.value]
                    .into_iter()
                    .chain(self.idx.iter().copied())
                    .chain(self.exts.iter().copied()),
            )
            .with_loc(like.loc.clone());
        op.attrs = like.attrs.clone();
        op.set_attr(
            "operandSegmentSizes",
            format!("array<i32: 1, 1, {}, {}>", self.idx.len(), self.exts.len()),
        );
        op.set_attr("dims", i64_array(&self.dims));
        if self.steps.iter().any(|s| *s != 1) {
            op.set_attr("steps", i64_array(&self.steps));
        } else {
            op.remove_attr("steps");
        }
        match self.atomic {
            Some(a) => op.set_attr("atomic", a.attr()),
            None => {
                op.remove_attr("atomic");
            }
        }
        op
    }

    /// The statement dimensions of the target.
    pub fn kept(&self) -> Vec<usize> {
        self.dims.iter().filter(|d| **d >= 0).map(|d| *d as usize).collect()
    }
}
