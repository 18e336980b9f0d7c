//! Lowering a `gpu`-level module's host function and kernels to a [`HostProgram`].

use super::*;
use crate::bundle::KernelInfo;
use crate::diag::IrError;
use crate::ir::{Module, Op, Value};
use crate::ops::{
    AtomicRmw, CmpF, CmpI, Constant, Gemm, LaunchFunc, MemrefAlloc, MemrefLoad, MemrefStore, Potrf, ScfFor, ScfIf, ScfWhile, Trsv,
};
use std::collections::HashMap;

/// Numbers values densely and decodes ops.
struct Lowering<'m> {
    m: &'m Module,
    slots: HashMap<Value, Slot>,
    kernels: &'m HashMap<&'m str, u32>,
}

/// The width of an integer (or `index`) type: 1, 8, 16, 32 or 64.
fn bits_of(ty: &str) -> u8 {
    match ty {
        "i1" => 1,
        "i8" => 8,
        "i16" => 16,
        "i32" | "f32" => 32,
        _ => 64,
    }
}

impl Lowering<'_> {
    fn slot(&mut self, v: Value) -> Slot {
        let n = self.slots.len() as Slot;
        *self.slots.entry(v).or_insert(n)
    }
    fn slots(&mut self, vs: &[Value]) -> Vec<Slot> {
        vs.iter().map(|v| self.slot(*v)).collect()
    }
    fn ty(&self, v: Value) -> &str {
        self.m.ty(v)
    }
    fn is_f32(&self, v: Value) -> bool {
        self.ty(v) == "f32"
    }

    fn block(&mut self, ops: &[Op]) -> Block {
        let mut out = Block::default();
        for op in ops {
            if matches!(op.name.as_str(), "func.return" | "scf.yield" | "gpu.return" | "scf.condition") {
                out.yields = self.slots(&op.operands);
                break;
            }
            // A cast between static and dynamic shapes of one buffer (canonicalisation
            // makes `memref.alloc` with constant sizes static, then casts back): the
            // result is the operand's slot.
            if op.name == "memref.cast" && op.operands.len() == 1 && op.results.len() == 1 {
                let s = self.slot(op.operands[0]);
                self.slots.insert(op.results[0], s);
                continue;
            }
            out.ops.push(self.op(op));
        }
        out
    }

    fn other(&mut self, op: &Op) -> HostOp {
        let results = self.slots(&op.results);
        let regions = op
            .regions
            .iter()
            .map(|r| {
                r.blocks
                    .iter()
                    .map(|b| {
                        let args = self.slots(&b.args);
                        (args, self.block(&b.ops))
                    })
                    .collect()
            })
            .collect();
        HostOp::Other {
            name: op.name.clone(),
            operands: Some(self.slots(&op.operands)),
            results,
            regions,
        }
    }

    fn op(&mut self, op: &Op) -> HostOp {
        self.typed(op).unwrap_or_else(|| self.other(op))
    }

    /// The typed op, or `None` for an op kept as [`HostOp::Other`].
    fn typed(&mut self, op: &Op) -> Option<HostOp> {
        let o = &op.operands;
        let n = op.name.as_str();
        let dst = op.results.first().copied();
        let un = |s: &mut Self| -> Option<(Slot, Slot)> { Some((s.slot(dst?), s.slot(*o.first()?))) };
        let bin = |s: &mut Self| -> Option<(Slot, Slot, Slot)> {
            if o.len() != 2 {
                return None;
            }
            Some((s.slot(dst?), s.slot(o[0]), s.slot(o[1])))
        };
        if let Some(c) = Constant::of(op, self.m) {
            return Some(HostOp::Const {
                dst: self.slot(c.result),
                value: c.value,
            });
        }
        if let Some(op_) = IntBinOp::from_name(n) {
            let bits = bits_of(self.ty(dst?));
            let (dst, a, b) = bin(self)?;
            return Some(HostOp::IntBin { op: op_, bits, dst, a, b });
        }
        if let Some(op_) = FloatBinOp::from_name(n) {
            let f32 = self.is_f32(dst?);
            let (dst, a, b) = bin(self)?;
            return Some(HostOp::FloatBin { op: op_, f32, dst, a, b });
        }
        if let Some(op_) = FloatUnOp::from_name(n) {
            let f32 = self.is_f32(dst?);
            let (dst, a) = un(self)?;
            return Some(HostOp::FloatUn { op: op_, f32, dst, a });
        }
        if let Some(op_) = FloatClassOp::from_name(n) {
            let (dst, a) = un(self)?;
            return Some(HostOp::FloatClass { op: op_, dst, a });
        }
        if let Some(op_) = IntCastOp::from_name(n) {
            let (from, to) = (bits_of(self.ty(*o.first()?)), bits_of(self.ty(dst?)));
            let (dst, a) = un(self)?;
            return Some(HostOp::IntCast { op: op_, from, to, dst, a });
        }
        if let Some(op_) = GpuIdOp::from_name(n) {
            return Some(HostOp::GpuId {
                op: op_,
                dst: self.slot(dst?),
            });
        }
        if let Some(c) = CmpI::of(op) {
            return Some(HostOp::CmpI {
                pred: c.pred,
                dst: self.slot(dst?),
                a: self.slot(c.lhs),
                b: self.slot(c.rhs),
            });
        }
        if let Some(c) = CmpF::of(op) {
            return Some(HostOp::CmpF {
                pred: c.pred,
                dst: self.slot(dst?),
                a: self.slot(c.lhs),
                b: self.slot(c.rhs),
            });
        }
        Some(match n {
            "math.fma" if o.len() == 3 => HostOp::Fma {
                f32: self.is_f32(dst?),
                dst: self.slot(dst?),
                a: self.slot(o[0]),
                b: self.slot(o[1]),
                c: self.slot(o[2]),
            },
            "math.fpowi" => {
                let f32 = self.is_f32(dst?);
                let (dst, a, b) = bin(self)?;
                HostOp::FPowI { f32, dst, a, b }
            }
            "math.absi" => {
                let bits = bits_of(self.ty(dst?));
                let (dst, a) = un(self)?;
                HostOp::AbsI { bits, dst, a }
            }
            "arith.select" if o.len() == 3 => HostOp::Select {
                dst: self.slot(dst?),
                cond: self.slot(o[0]),
                t: self.slot(o[1]),
                f: self.slot(o[2]),
            },
            "arith.sitofp" | "arith.uitofp" => {
                let (from, f32) = (bits_of(self.ty(*o.first()?)), self.is_f32(dst?));
                let (dst, a) = un(self)?;
                HostOp::IntToFloat {
                    unsigned: n == "arith.uitofp",
                    from,
                    f32,
                    dst,
                    a,
                }
            }
            "arith.fptosi" | "arith.fptoui" => {
                let bits = bits_of(self.ty(dst?));
                let (dst, a) = un(self)?;
                HostOp::FloatToInt {
                    bits,
                    unsigned: n == "arith.fptoui",
                    dst,
                    a,
                }
            }
            "arith.extf" => {
                let (dst, a) = un(self)?;
                HostOp::ExtF { dst, a }
            }
            "arith.truncf" => {
                let half = crate::types::DType::from_mlir(self.ty(dst?)).and_then(crate::types::DType::half);
                let (dst, a) = un(self)?;
                match half {
                    Some(half) => HostOp::TruncHalf { half, dst, a },
                    None => HostOp::TruncF { dst, a },
                }
            }
            "arith.bitcast" => {
                let op_ = BitcastOp::of(self.ty(*o.first()?), self.ty(dst?))?;
                let (dst, a) = un(self)?;
                HostOp::Bitcast { op: op_, dst, a }
            }
            "appy.print" => HostOp::Print {
                pieces: op.attr("pieces").and_then(crate::pyfmt::parse_pieces)?,
                values: self.slots(o),
            },
            "scf.if" => {
                let v = ScfIf::of(op)?;
                HostOp::If {
                    cond: self.slot(v.cond),
                    then: self.block(v.then),
                    orelse: v.orelse.map(|e| self.block(e)),
                    results: self.slots(v.results),
                }
            }
            "scf.for" => {
                let v = ScfFor::of(op)?;
                HostOp::For {
                    lb: self.slot(v.lb),
                    ub: self.slot(v.ub),
                    step: self.slot(v.step),
                    inits: self.slots(v.inits),
                    iv: self.slot(v.iv),
                    iter_args: self.slots(v.iter_args),
                    body: self.block(v.body),
                    results: self.slots(v.results),
                }
            }
            "scf.while" => {
                let v = ScfWhile::of(op)?;
                HostOp::While {
                    inits: self.slots(v.inits),
                    before_args: self.slots(v.before_args),
                    before: self.block(v.before),
                    after_args: self.slots(v.after_args),
                    after: self.block(v.after),
                    results: self.slots(v.results),
                }
            }
            "memref.alloc" | "memref.alloca" => {
                let v = MemrefAlloc::of(op, self.m)?;
                let mut sizes = v.sizes.iter();
                let shape =
                    v.ty.shape
                        .iter()
                        .map(|d| match d {
                            Some(n) => Some(Extent::Static(*n)),
                            None => sizes.next().map(|s| Extent::Dynamic(self.slot(*s))),
                        })
                        .collect::<Option<Vec<_>>>()?;
                HostOp::Alloc {
                    dst: self.slot(v.result),
                    dtype: v.ty.elem,
                    shape,
                    stack: v.stack,
                }
            }
            "memref.dealloc" if o.len() == 1 => HostOp::Dealloc { mem: self.slot(o[0]) },
            "memref.dim" if o.len() == 2 => HostOp::Dim {
                dst: self.slot(dst?),
                mem: self.slot(o[0]),
                index: self.slot(o[1]),
            },
            "memref.load" => {
                let v = MemrefLoad::of(op)?;
                HostOp::Load {
                    dst: self.slot(v.result),
                    mem: self.slot(v.memref),
                    indices: self.slots(v.indices),
                }
            }
            "memref.store" => {
                let v = MemrefStore::of(op)?;
                HostOp::Store {
                    value: self.slot(v.value),
                    mem: self.slot(v.memref),
                    indices: self.slots(v.indices),
                }
            }
            "memref.atomic_rmw" => {
                let v = AtomicRmw::of(op)?;
                HostOp::AtomicRmw {
                    kind: v.kind,
                    dst: self.slot(v.result),
                    value: self.slot(v.value),
                    mem: self.slot(v.memref),
                    indices: self.slots(v.indices),
                }
            }
            "gpu.launch_func" => {
                let v = LaunchFunc::of(op)?;
                let kernel = *self.kernels.get(v.kernel)?;
                HostOp::Launch {
                    kernel,
                    grid: v.grid.map(|g| self.slot(g)),
                    block: v.block.map(|b| self.slot(b)),
                    args: self.slots(v.args),
                }
            }
            "appy.gemm" => {
                let g = Gemm::of(op)?;
                HostOp::Gemm {
                    mems: g.mems.map(|v| self.slot(v)),
                    offsets: g.offsets.map(|v| self.slot(v)),
                    sizes: g.sizes.map(|v| self.slot(v)),
                    alpha: self.slot(g.alpha),
                    beta: self.slot(g.beta),
                    trans_a: g.trans_a,
                    trans_b: g.trans_b,
                    vec: g.vec,
                }
            }
            "appy.trsv" => {
                let t = Trsv::of(op)?;
                HostOp::Trsv {
                    mems: t.mems.map(|v| self.slot(v)),
                    n: self.slot(t.n),
                }
            }
            "appy.potrf" => {
                let p = Potrf::of(op)?;
                HostOp::Potrf {
                    a: self.slot(p.a),
                    n: self.slot(p.n),
                }
            }
            _ => return None,
        })
    }
}

/// Lowers the host function of a `gpu`-level module (and the bodies of its kernels
/// `kernels`, for the access analysis) to a [`HostProgram`].
pub fn lower(m: &Module, kernels: &[KernelInfo]) -> Result<HostProgram, IrError> {
    let func = m
        .body()
        .iter()
        .find(|o| o.name == "func.func" && !o.regions.is_empty())
        .ok_or_else(|| IrError::new("the module has no host function"))?;
    let index: HashMap<&str, u32> = kernels.iter().enumerate().map(|(k, i)| (i.name.as_str(), k as u32)).collect();
    let mut l = Lowering {
        m,
        slots: HashMap::new(),
        kernels: &index,
    };
    let entry = func.regions[0]
        .blocks
        .first()
        .ok_or_else(|| IrError::at(func, "the host function has no body"))?;
    let params = l.slots(&entry.args);
    let body = l.block(&entry.ops);
    let slots = l.slots.len() as u32;
    let quoted: HashMap<String, &Op> = m
        .body()
        .iter()
        .filter(|o| o.name == "gpu.module")
        .flat_map(|g| g.regions.iter().flat_map(|r| r.blocks.iter()).flat_map(|b| b.ops.iter()))
        .filter(|f| f.name == "gpu.func")
        .filter_map(|f| Some((f.attr("sym_name")?.trim_matches('"').to_string(), f)))
        .collect();
    let kernels = kernels
        .iter()
        .map(|k| {
            let mut kl = Lowering {
                m,
                slots: HashMap::new(),
                kernels: &index,
            };
            let ir = quoted.get(&k.name).and_then(|f| f.regions.first()?.blocks.first());
            let args = ir.map(|b| kl.slots(&b.args)).unwrap_or_default();
            let body = ir.map(|b| kl.block(&b.ops));
            KernelProgram {
                name: k.name.clone(),
                params: k.params.iter().map(|t| Param::of(t)).collect(),
                slots: kl.slots.len() as u32,
                args,
                body,
            }
        })
        .collect();
    Ok(HostProgram {
        slots,
        params,
        body,
        kernels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{Builder, IPred};
    use crate::ir::Region;

    #[test]
    fn names_round_trip() {
        for op in [IntBinOp::DivUI, IntBinOp::AddI, IntBinOp::IPowI] {
            assert_eq!(IntBinOp::from_name(op.name()), Some(op));
        }
        assert_eq!(FloatUnOp::from_name("math.sqrt"), Some(FloatUnOp::Sqrt));
        assert_eq!(FloatBinOp::from_name("math.sqrt"), None);
    }

    /// Values get dense slots; ops are decoded with their widths; an op the runner
    /// does not know is kept with its name.
    #[test]
    fn lowers_a_host_function() {
        let mut b = Builder::new();
        let a = b.m.value("i32");
        b.begin();
        let c = b.int(3, "i32");
        let s = b.bin("arith.divui", a, c);
        let p = b.cmpi(IPred::Ult, s, c);
        b.op0("test.unknown", &[p], &[]);
        b.push(Op::new("func.return").with_operands([s]));
        let ops = b.end();
        b.m.body_mut()
            .push(Op::new("func.func").with_region(Region::single(crate::ir::Block { args: vec![a], ops })));
        let prog = lower(&b.m, &[]).unwrap();
        assert_eq!(prog.params, vec![0]);
        assert_eq!(prog.slots, 4);
        assert_eq!(prog.body.yields, vec![2]);
        assert_eq!(
            prog.body.ops[1],
            HostOp::IntBin {
                op: IntBinOp::DivUI,
                bits: 32,
                dst: 2,
                a: 0,
                b: 1
            }
        );
        assert!(matches!(
            &prog.body.ops[2],
            HostOp::CmpI {
                pred: CmpIPredicate::Ult,
                ..
            }
        ));
        assert!(matches!(&prog.body.ops[3], HostOp::Other { name, .. } if name == "test.unknown"));
    }
}
