//! The execution of a host program's ops ([`appy_ir::host::HostOp`]) over dense value
//! slots.

use super::library::GemmArgs;
use super::residency::Mem;
use super::scalar::{int_bin, int_cast, int_to_float, round, wrap};
use super::{Executor, HV};
use crate::device::Device;
use crate::error::{RunError, RunResult};
use crate::hostmath;
use appy_ir::attrs::{AtomicKind, Scalar};
use appy_ir::host::{BitcastOp, Block, Extent, FloatBinOp, HostOp, IntBinOp, Slot};
use appy_ir::pyfmt::{self, Piece};
use appy_ir::types::DType;

impl<D: Device> Executor<'_, D> {
    pub(super) fn get(&self, s: Slot) -> RunResult<HV> {
        match self.env[s as usize] {
            HV::Undef => Err(RunError::Bundle(format!("host program: slot {s} is used before it is defined"))),
            v => Ok(v),
        }
    }
    fn int(&self, s: Slot) -> RunResult<i64> {
        match self.get(s)? {
            HV::I(i) => Ok(i),
            HV::F(f) => Ok(f as i64),
            _ => Err(RunError::Bundle("expected an integer".into())),
        }
    }
    fn float(&self, s: Slot) -> RunResult<f64> {
        match self.get(s)? {
            HV::F(f) => Ok(f),
            HV::I(i) => Ok(i as f64),
            _ => Err(RunError::Bundle("expected a float".into())),
        }
    }
    fn mem(&self, s: Slot) -> RunResult<usize> {
        match self.get(s)? {
            HV::Mem(m) => Ok(m),
            _ => Err(RunError::Bundle("expected a memref".into())),
        }
    }
    fn set(&mut self, s: Slot, v: HV) {
        self.env[s as usize] = v;
    }

    /// Runs a block's ops; returns the slots its terminator passes on.
    pub(super) fn block<'p>(&mut self, b: &'p Block) -> RunResult<&'p [Slot]> {
        for op in &b.ops {
            self.op(op)?;
        }
        Ok(&b.yields)
    }

    /// Copies the values of slots `from` to slots `to` (which they may overlap).
    fn pass(&mut self, from: &[Slot], to: &[Slot]) -> RunResult<()> {
        match (from, to) {
            ([], _) | (_, []) => Ok(()),
            ([f], [t, ..]) => {
                let v = self.get(*f)?;
                self.set(*t, v);
                Ok(())
            }
            _ => {
                let vals = from.iter().map(|s| self.get(*s)).collect::<RunResult<Vec<_>>>()?;
                for (t, v) in to.iter().zip(vals) {
                    self.set(*t, v);
                }
                Ok(())
            }
        }
    }

    /// The flat element index of `indices` into memref `id`.
    fn flat(&self, id: usize, indices: &[Slot]) -> RunResult<usize> {
        let mut flat = 0usize;
        for (k, s) in indices.iter().enumerate() {
            flat = flat * self.mems[id].shape[k] + self.int(*s)? as usize;
        }
        Ok(flat)
    }

    fn op(&mut self, op: &HostOp) -> RunResult<()> {
        match op {
            HostOp::Const { dst, value } => {
                let v = match *value {
                    Scalar::Int(i) => HV::I(i),
                    Scalar::Float(f) => HV::F(f),
                };
                self.set(*dst, v);
            }
            HostOp::IntBin { op, bits, dst, a, b } => {
                let r = int_bin(*op, *bits, self.int(*a)?, self.int(*b)?)?;
                self.set(*dst, HV::I(r));
            }
            HostOp::FloatBin { op, f32, dst, a, b } => {
                let r = hostmath::binary(*op, self.float(*a)?, self.float(*b)?);
                self.set(*dst, HV::F(round(*f32, r)));
            }
            HostOp::FloatUn { op, f32, dst, a } => {
                let r = hostmath::unary(*op, self.float(*a)?);
                self.set(*dst, HV::F(round(*f32, r)));
            }
            HostOp::FloatClass { op, dst, a } => {
                let r = hostmath::predicate(*op, self.float(*a)?);
                self.set(*dst, HV::I(r as i64));
            }
            HostOp::Fma { f32, dst, a, b, c } => {
                let r = self.float(*a)?.mul_add(self.float(*b)?, self.float(*c)?);
                self.set(*dst, HV::F(round(*f32, r)));
            }
            HostOp::FPowI { f32, dst, a, b } => {
                let r = self.float(*a)?.powi(self.int(*b)? as i32);
                self.set(*dst, HV::F(round(*f32, r)));
            }
            HostOp::AbsI { bits, dst, a } => {
                let r = wrap(self.int(*a)?.wrapping_abs(), *bits);
                self.set(*dst, HV::I(r));
            }
            HostOp::CmpI { pred, dst, a, b } => {
                let r = pred.eval(self.int(*a)?, self.int(*b)?);
                self.set(*dst, HV::I(r as i64));
            }
            HostOp::CmpF { pred, dst, a, b } => {
                let r = pred.eval(self.float(*a)?, self.float(*b)?);
                self.set(*dst, HV::I(r as i64));
            }
            HostOp::Select { dst, cond, t, f } => {
                let v = if self.int(*cond)? & 1 != 0 { self.get(*t)? } else { self.get(*f)? };
                self.set(*dst, v);
            }
            HostOp::IntCast { op, from, to, dst, a } => {
                let r = int_cast(*op, *from, *to, self.int(*a)?);
                self.set(*dst, HV::I(r));
            }
            HostOp::IntToFloat {
                unsigned,
                from,
                f32,
                dst,
                a,
            } => {
                let r = int_to_float(*unsigned, *from, *f32, self.int(*a)?);
                self.set(*dst, HV::F(r));
            }
            HostOp::FloatToInt { bits, unsigned, dst, a } => {
                let x = self.float(*a)?;
                let r = wrap(if *unsigned { x as u64 as i64 } else { x as i64 }, *bits);
                self.set(*dst, HV::I(r));
            }
            HostOp::ExtF { dst, a } => {
                let r = self.float(*a)?;
                self.set(*dst, HV::F(r));
            }
            HostOp::TruncHalf { half, dst, a } => {
                let r = half.round(self.float(*a)?);
                self.set(*dst, HV::F(r));
            }
            HostOp::TruncF { dst, a } => {
                let r = self.float(*a)? as f32 as f64;
                self.set(*dst, HV::F(r));
            }
            HostOp::Bitcast { op, dst, a } => {
                let v = match op {
                    BitcastOp::F64ToI64 => HV::I(self.float(*a)?.to_bits() as i64),
                    BitcastOp::F32ToI32 => HV::I((self.float(*a)? as f32).to_bits() as i32 as i64),
                    BitcastOp::I64ToF64 => HV::F(f64::from_bits(self.int(*a)? as u64)),
                    BitcastOp::I32ToF32 => HV::F(f32::from_bits(self.int(*a)? as u32) as f64),
                };
                self.set(*dst, v);
            }
            HostOp::Print { pieces, values } => {
                let kinds = pieces.iter().filter_map(|p| match p {
                    Piece::Value(k, _) => Some(*k),
                    Piece::Text(_) => None,
                });
                let mut vals = Vec::with_capacity(values.len());
                for (k, v) in kinds.zip(values) {
                    vals.push(pyfmt::from_bits(k, self.int(*v)?));
                }
                use std::io::Write;
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(pyfmt::print_line(pieces, &vals).as_bytes());
                let _ = out.flush();
            }
            HostOp::If {
                cond,
                then,
                orelse,
                results,
            } => {
                let yields = if self.int(*cond)? & 1 != 0 {
                    self.block(then)?
                } else if let Some(e) = orelse {
                    self.block(e)?
                } else {
                    &[]
                };
                self.pass(yields, results)?;
            }
            HostOp::For {
                lb,
                ub,
                step,
                inits,
                iv,
                iter_args,
                body,
                results,
            } => {
                let (lb, ub, st) = (self.int(*lb)?, self.int(*ub)?, self.int(*step)?);
                self.pass(inits, iter_args)?;
                let mut i = lb;
                while i < ub {
                    self.check_interrupt()?;
                    self.set(*iv, HV::I(i));
                    let yields = self.block(body)?;
                    self.pass(yields, iter_args)?;
                    i += st;
                }
                // The loop's results are its carried values (its inits when it ran
                // no iteration).
                self.pass(iter_args, results)?;
            }
            HostOp::While {
                inits,
                before_args,
                before,
                after_args,
                after,
                results,
            } => {
                self.pass(inits, before_args)?;
                loop {
                    self.check_interrupt()?;
                    let y = self.block(before)?;
                    let (c, passed) = y
                        .split_first()
                        .ok_or_else(|| RunError::Bundle("`scf.condition` without a condition".into()))?;
                    if self.int(*c)? & 1 == 0 {
                        self.pass(passed, results)?;
                        break;
                    }
                    self.pass(passed, after_args)?;
                    let y = self.block(after)?;
                    self.pass(y, before_args)?;
                }
            }
            HostOp::Alloc { dst, dtype, shape, stack } => {
                let mut dims = Vec::with_capacity(shape.len());
                for e in shape {
                    dims.push(match e {
                        Extent::Static(n) => *n,
                        Extent::Dynamic(s) => self.int(*s)?.max(0) as usize,
                    });
                }
                // Sizes computed by the program from its arguments: checked.
                let bytes = crate::array::bytes_of(*dtype, &dims)?;
                let elems = bytes / dtype.size();
                if *stack {
                    self.mems.push(Mem::slot(*dtype, dims, elems));
                } else if self.split() {
                    let id = self.alloc_spread(*dtype, dims, bytes.max(1))?;
                    self.set(*dst, HV::Mem(id));
                    return Ok(());
                } else {
                    let bytes = bytes.max(1);
                    let ptr = self.dev.alloc(bytes)?;
                    self.mems.push(Mem::device(ptr, bytes, *dtype, dims));
                }
                let id = self.mems.len() - 1;
                self.set(*dst, HV::Mem(id));
            }
            HostOp::Dealloc { mem } => {
                let id = self.mem(*mem)?;
                self.dealloc(id)?;
            }
            HostOp::Dim { dst, mem, index } => {
                let id = self.mem(*mem)?;
                let d = self.int(*index)? as usize;
                let n = self.mems[id].shape.get(d).copied().unwrap_or(0) as i64;
                self.set(*dst, HV::I(n));
            }
            HostOp::Load { dst, mem, indices } => {
                let id = self.mem(*mem)?;
                let flat = self.flat(id, indices)?;
                let v = self.read_elem(id, flat)?;
                self.set(*dst, v);
            }
            HostOp::Store { value, mem, indices } => {
                let id = self.mem(*mem)?;
                let flat = self.flat(id, indices)?;
                let v = self.get(*value)?;
                self.write_elem(id, flat, v)?;
            }
            HostOp::AtomicRmw {
                kind,
                dst,
                value,
                mem,
                indices,
            } => {
                let id = self.mem(*mem)?;
                let flat = self.flat(id, indices)?;
                let cur = self.read_elem(id, flat)?;
                let v = self.get(*value)?;
                let new = atomic(*kind, self.mems[id].dtype, cur, v)?;
                self.write_elem(id, flat, new)?;
                self.set(*dst, cur);
            }
            HostOp::Launch { kernel, grid, block, args } => {
                let k = *kernel as usize;
                if k >= self.kernels.len() {
                    return Err(RunError::Bundle(format!("kernel {k} not loaded")));
                }
                let grid = [self.int(grid[0])?, self.int(grid[1])?, self.int(grid[2])?];
                let block = [self.int(block[0])?, self.int(block[1])?, self.int(block[2])?];
                let mut vals = std::mem::take(&mut self.scratch);
                vals.clear();
                for a in args {
                    vals.push(self.get(*a)?);
                }
                let r = self.launch(k, grid, block, &vals);
                self.scratch = vals;
                r?;
            }
            HostOp::Gemm {
                mems,
                offsets,
                sizes,
                alpha,
                beta,
                trans_a,
                trans_b,
                vec,
            } => {
                let mut idx = [0i64; 6];
                for (k, s) in offsets.iter().enumerate() {
                    idx[k] = self.int(*s)?;
                }
                let g = GemmArgs {
                    mems: [self.mem(mems[0])?, self.mem(mems[1])?, self.mem(mems[2])?],
                    idx,
                    m: self.int(sizes[0])?,
                    n: self.int(sizes[1])?,
                    k: self.int(sizes[2])?,
                    alpha: self.float(*alpha)?,
                    beta: self.float(*beta)?,
                    trans_a: *trans_a,
                    trans_b: *trans_b,
                    vec: *vec,
                };
                self.gemm(g)?;
            }
            HostOp::Trsv { mems, n } => {
                let m = [self.mem(mems[0])?, self.mem(mems[1])?, self.mem(mems[2])?];
                let n = self.int(*n)?;
                self.trsv(m, n)?;
            }
            HostOp::Potrf { a, n } => {
                let a = self.mem(*a)?;
                let n = self.int(*n)?;
                self.potrf(a, n)?;
            }
            HostOp::GpuId { op, .. } => {
                return Err(RunError::Bundle(format!(
                    "the GPU runner cannot execute `{}` in host code",
                    op.name()
                )));
            }
            HostOp::Other { name, .. } => {
                return Err(RunError::Bundle(format!("the GPU runner cannot execute `{name}` in host code")));
            }
        }
        Ok(())
    }
}

/// The new value of an element of type `dt` holding `cur` after `memref.atomic_rmw`
/// of kind `kind` with operand `v`: the kind's `arith` op applied to both.
pub(super) fn atomic(kind: AtomicKind, dt: DType, cur: HV, v: HV) -> RunResult<HV> {
    let bad = || RunError::Bundle(format!("unsupported host atomic kind {}", kind as i64));
    if kind == AtomicKind::Assign {
        return Ok(v);
    }
    let name = kind.arith_op().ok_or_else(bad)?;
    match (cur, v) {
        (HV::F(a), HV::F(b)) => {
            let op = FloatBinOp::from_name(name).ok_or_else(bad)?;
            Ok(HV::F(round(dt == DType::F32, hostmath::binary(op, a, b))))
        }
        (HV::I(a), HV::I(b)) => {
            let op = IntBinOp::from_name(name).ok_or_else(bad)?;
            let bits = if dt == DType::Bool { 1 } else { dt.size() as u8 * 8 };
            Ok(HV::I(int_bin(op, bits, a, b)?))
        }
        _ => Err(bad()),
    }
}
