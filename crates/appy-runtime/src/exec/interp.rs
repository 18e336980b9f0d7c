//! The interpretation of host code's ops.

use super::library::GemmArgs;
use super::residency::Mem;
use super::{Executor, HV};
use crate::device::Device;
use crate::error::{RunError, RunResult};
use appy_ir::ir::{Op, Value};
use appy_ir::types::parse_memref;

fn bits_of(ty: &str) -> u32 {
    match ty {
        "i1" => 1,
        "i32" | "f32" => 32,
        _ => 64,
    }
}

fn wrap(v: i64, bits: u32) -> i64 {
    match bits {
        1 => v & 1,
        32 => v as i32 as i64,
        _ => v,
    }
}

impl<D: Device> Executor<'_, D> {
    fn get(&self, v: Value) -> RunResult<HV> {
        self.env
            .get(&v)
            .copied()
            .ok_or_else(|| RunError::Bundle(format!("host interpreter: value %v{} undefined", v.0)))
    }
    fn int(&self, v: Value) -> RunResult<i64> {
        match self.get(v)? {
            HV::I(i) => Ok(i),
            HV::F(f) => Ok(f as i64),
            HV::Mem(_) => Err(RunError::Bundle("expected an integer".into())),
        }
    }
    fn float(&self, v: Value) -> RunResult<f64> {
        match self.get(v)? {
            HV::F(f) => Ok(f),
            HV::I(i) => Ok(i as f64),
            HV::Mem(_) => Err(RunError::Bundle("expected a float".into())),
        }
    }
    fn mem(&self, v: Value) -> RunResult<usize> {
        match self.get(v)? {
            HV::Mem(m) => Ok(m),
            _ => Err(RunError::Bundle("expected a memref".into())),
        }
    }
    fn ty(&self, v: Value) -> &str {
        self.b.host.ty(v)
    }

    /// Runs ops; returns `Some(values)` at a terminator that yields/returns.
    pub(super) fn block(&mut self, ops: &[Op]) -> RunResult<Option<Vec<HV>>> {
        for op in ops {
            match op.name.as_str() {
                "func.return" | "scf.yield" => {
                    let vals = op.operands.iter().map(|v| self.get(*v)).collect::<RunResult<Vec<_>>>()?;
                    return Ok(Some(vals));
                }
                _ => self.op(op)?,
            }
        }
        Ok(None)
    }

    fn set(&mut self, op: &Op, v: HV) {
        self.env.insert(op.results[0], v);
    }

    fn op(&mut self, op: &Op) -> RunResult<()> {
        let n = op.name.as_str();
        let o = &op.operands;
        match n {
            "arith.constant" => {
                let text = op.attr("value").ok_or_else(|| RunError::Bundle("constant without value".into()))?;
                let (val, ty) = text.rsplit_once(" : ").unwrap_or((text, self.ty(op.results[0])));
                let ty = ty.trim();
                let v = if ty.starts_with('f') {
                    let f = if let Some(h) = val.strip_prefix("0x") {
                        let bits = u64::from_str_radix(h, 16).map_err(|_| RunError::Bundle(format!("bad float constant {val}")))?;
                        if ty == "f32" {
                            f32::from_bits(bits as u32) as f64
                        } else {
                            f64::from_bits(bits)
                        }
                    } else {
                        val.trim()
                            .parse::<f64>()
                            .map_err(|_| RunError::Bundle(format!("bad float constant {val}")))?
                    };
                    HV::F(f)
                } else {
                    match val.trim() {
                        "true" => HV::I(1),
                        "false" => HV::I(0),
                        s => HV::I(
                            s.parse::<i64>()
                                .map_err(|_| RunError::Bundle(format!("bad integer constant {s}")))?,
                        ),
                    }
                };
                self.set(op, v);
            }
            "arith.addi" | "arith.subi" | "arith.muli" | "arith.divsi" | "arith.remsi" | "arith.ceildivsi" | "arith.floordivsi"
            | "arith.maxsi" | "arith.minsi" | "arith.andi" | "arith.ori" | "arith.xori" | "arith.shli" | "arith.shrsi" | "arith.divui"
            | "arith.remui" | "arith.shrui" | "arith.maxui" | "arith.minui" | "arith.ceildivui" | "math.ipowi" => {
                let (a, b) = (self.int(o[0])?, self.int(o[1])?);
                let bits = bits_of(self.ty(op.results[0]));
                let zero_div = matches!(
                    n,
                    "arith.divsi"
                        | "arith.remsi"
                        | "arith.ceildivsi"
                        | "arith.floordivsi"
                        | "arith.divui"
                        | "arith.remui"
                        | "arith.ceildivui"
                ) && b == 0;
                if zero_div {
                    return Err(RunError::Program("integer division by zero".into()));
                }
                // Unsigned ops read the operands' bits as unsigned numbers of their width.
                let unsigned = |x: i64| match bits {
                    1 => (x & 1) as u64,
                    32 => x as u32 as u64,
                    _ => x as u64,
                };
                let (ua, ub) = (unsigned(a), unsigned(b));
                let r = match n {
                    "arith.divui" => (ua / ub) as i64,
                    "arith.remui" => (ua % ub) as i64,
                    "arith.ceildivui" => ua.div_ceil(ub) as i64,
                    "arith.maxui" => ua.max(ub) as i64,
                    "arith.minui" => ua.min(ub) as i64,
                    "arith.shrui" => ua.checked_shr(ub as u32).unwrap_or(0) as i64,
                    "arith.addi" => a.wrapping_add(b),
                    "arith.subi" => a.wrapping_sub(b),
                    "arith.muli" => a.wrapping_mul(b),
                    "arith.divsi" => a.wrapping_div(b),
                    "arith.remsi" => a.wrapping_rem(b),
                    "arith.ceildivsi" => {
                        let q = a.wrapping_div(b);
                        if (a % b != 0) && ((a < 0) == (b < 0)) { q + 1 } else { q }
                    }
                    "arith.floordivsi" => a.div_euclid(b) - if b < 0 && a.rem_euclid(b) != 0 { 1 } else { 0 },
                    "arith.maxsi" => a.max(b),
                    "arith.minsi" => a.min(b),
                    "arith.andi" => a & b,
                    "arith.ori" => a | b,
                    "arith.xori" => a ^ b,
                    "arith.shli" => a.wrapping_shl(b as u32),
                    "arith.shrsi" => a.wrapping_shr(b as u32),
                    _ => {
                        if b < 0 {
                            0
                        } else {
                            a.wrapping_pow(b as u32)
                        }
                    }
                };
                self.set(op, HV::I(wrap(r, bits)));
            }
            "arith.addf" | "arith.subf" | "arith.mulf" | "arith.divf" | "arith.remf" | "arith.maximumf" | "arith.minimumf"
            | "arith.maxnumf" | "arith.minnumf" | "math.powf" | "math.atan2" | "math.copysign" => {
                let (a, b) = (self.float(o[0])?, self.float(o[1])?);
                let r = crate::hostmath::binary(n, a, b).ok_or_else(|| RunError::Bundle(format!("{n} is not supported in host code")))?;
                let r = if self.ty(op.results[0]) == "f32" { r as f32 as f64 } else { r };
                self.set(op, HV::F(r));
            }
            "math.fma" => {
                let (a, b, c) = (self.float(o[0])?, self.float(o[1])?, self.float(o[2])?);
                let r = a.mul_add(b, c);
                let r = if self.ty(op.results[0]) == "f32" { r as f32 as f64 } else { r };
                self.set(op, HV::F(r));
            }
            "math.fpowi" => {
                let (a, b) = (self.float(o[0])?, self.int(o[1])?);
                self.set(op, HV::F(a.powi(b as i32)));
            }
            n if crate::hostmath::unary(n, 0.0).is_some() => {
                let a = self.float(o[0])?;
                let r = crate::hostmath::unary(n, a).expect("checked above");
                let r = if self.ty(op.results[0]) == "f32" { r as f32 as f64 } else { r };
                self.set(op, HV::F(r));
            }
            n if crate::hostmath::predicate(n, 0.0).is_some() => {
                let a = self.float(o[0])?;
                let r = crate::hostmath::predicate(n, a).expect("checked above");
                self.set(op, HV::I(r as i64));
            }
            "math.absi" => {
                let a = self.int(o[0])?;
                self.set(op, HV::I(a.wrapping_abs()));
            }
            "arith.cmpi" => {
                let (a, b) = (self.int(o[0])?, self.int(o[1])?);
                let p: i64 = op
                    .attr("predicate")
                    .and_then(|s| s.split(' ').next()?.parse().ok())
                    .ok_or_else(|| RunError::Bundle("bad cmpi".into()))?;
                let r = match p {
                    0 => a == b,
                    1 => a != b,
                    2 => a < b,
                    3 => a <= b,
                    4 => a > b,
                    5 => a >= b,
                    6 => (a as u64) < (b as u64),
                    7 => (a as u64) <= (b as u64),
                    8 => (a as u64) > (b as u64),
                    _ => (a as u64) >= (b as u64),
                };
                self.set(op, HV::I(r as i64));
            }
            "arith.cmpf" => {
                let (a, b) = (self.float(o[0])?, self.float(o[1])?);
                let p: i64 = op
                    .attr("predicate")
                    .and_then(|s| s.split(' ').next()?.parse().ok())
                    .ok_or_else(|| RunError::Bundle("bad cmpf".into()))?;
                let uno = a.is_nan() || b.is_nan();
                let r = match p {
                    0 => false,
                    1 => !uno && a == b,
                    2 => !uno && a > b,
                    3 => !uno && a >= b,
                    4 => !uno && a < b,
                    5 => !uno && a <= b,
                    6 => !uno && a != b,
                    7 => !uno,
                    8 => uno || a == b,
                    9 => uno || a > b,
                    10 => uno || a >= b,
                    11 => uno || a < b,
                    12 => uno || a <= b,
                    13 => uno || a != b,
                    14 => uno,
                    _ => true,
                };
                self.set(op, HV::I(r as i64));
            }
            "arith.bitcast" => {
                let (from, to) = (self.ty(o[0]).to_string(), self.ty(op.results[0]).to_string());
                let v = match (from.as_str(), to.as_str()) {
                    ("f64", "i64") => HV::I(self.float(o[0])?.to_bits() as i64),
                    ("f32", "i32") => HV::I((self.float(o[0])? as f32).to_bits() as i32 as i64),
                    ("i64", "f64") => HV::F(f64::from_bits(self.int(o[0])? as u64)),
                    ("i32", "f32") => HV::F(f32::from_bits(self.int(o[0])? as u32) as f64),
                    _ => {
                        return Err(RunError::Bundle(format!(
                            "arith.bitcast from {from} to {to} is not supported in host code"
                        )));
                    }
                };
                self.set(op, v);
            }
            "arith.select" => {
                let c = self.int(o[0])?;
                let v = if c & 1 != 0 { self.get(o[1])? } else { self.get(o[2])? };
                self.set(op, v);
            }
            "arith.index_cast" | "arith.index_castui" | "arith.extsi" | "arith.extui" | "arith.trunci" => {
                let a = self.int(o[0])?;
                let from = bits_of(self.ty(o[0]));
                let to = bits_of(self.ty(op.results[0]));
                let v = if n == "arith.extui" && from == 1 {
                    a & 1
                } else if n == "arith.extui" && from == 32 {
                    a as u32 as i64
                } else {
                    wrap(a, to)
                };
                self.set(op, HV::I(v));
            }
            "arith.sitofp" | "arith.uitofp" => {
                let a = self.int(o[0])?;
                let a = if n == "arith.uitofp" && bits_of(self.ty(o[0])) == 1 {
                    (a & 1) as f64
                } else {
                    a as f64
                };
                let r = if self.ty(op.results[0]) == "f32" { a as f32 as f64 } else { a };
                self.set(op, HV::F(r));
            }
            "arith.fptosi" => {
                let a = self.float(o[0])?;
                self.set(op, HV::I(wrap(a as i64, bits_of(self.ty(op.results[0])))));
            }
            "arith.extf" => {
                let a = self.float(o[0])?;
                self.set(op, HV::F(a));
            }
            "arith.truncf" => {
                let a = self.float(o[0])?;
                self.set(op, HV::F(a as f32 as f64));
            }
            "scf.if" => {
                let c = self.int(o[0])? & 1 != 0;
                let region = if c { &op.regions[0] } else { &op.regions[1] };
                let vals = match region.blocks.first() {
                    Some(b) => self.block(&b.ops)?.unwrap_or_default(),
                    None => vec![],
                };
                for (r, v) in op.results.iter().zip(vals) {
                    self.env.insert(*r, v);
                }
            }
            "scf.for" => {
                let (lb, ub, st) = (self.int(o[0])?, self.int(o[1])?, self.int(o[2])?);
                let mut carried: Vec<HV> = o[3..].iter().map(|v| self.get(*v)).collect::<RunResult<_>>()?;
                let blk = op.body(0);
                let mut i = lb;
                while i < ub {
                    self.check_interrupt()?;
                    self.env.insert(blk.args[0], HV::I(i));
                    for (a, v) in blk.args[1..].iter().zip(&carried) {
                        self.env.insert(*a, *v);
                    }
                    carried = self.block(&blk.ops)?.unwrap_or_default();
                    i += st;
                }
                for (r, v) in op.results.iter().zip(carried) {
                    self.env.insert(*r, v);
                }
            }
            "memref.alloc" | "memref.alloca" => {
                let ty = self.ty(op.results[0]).to_string();
                let (dtype, rank) = parse_memref(&ty).ok_or_else(|| RunError::Bundle(format!("unsupported memref type {ty}")))?;
                let inner = ty.trim_start_matches("memref<").trim_end_matches('>');
                let parts: Vec<&str> = inner.split('x').collect();
                let mut dyn_i = 0;
                let mut shape = vec![];
                for p in &parts[..rank] {
                    if *p == "?" {
                        shape.push(self.int(o[dyn_i])?.max(0) as usize);
                        dyn_i += 1;
                    } else {
                        shape.push(p.parse::<usize>().map_err(|_| RunError::Bundle(format!("bad memref type {ty}")))?);
                    }
                }
                // Sizes computed by the program from its arguments: checked.
                let bytes = crate::array::bytes_of(dtype, &shape).map_err(RunError::Program)?;
                let elems = bytes / dtype.size();
                if n == "memref.alloca" {
                    self.mems.push(Mem::slot(dtype, shape, elems));
                } else {
                    let bytes = bytes.max(1);
                    let ptr = self.dev.alloc(bytes)?;
                    self.mems.push(Mem::device(ptr, bytes, dtype, shape));
                }
                let id = self.mems.len() - 1;
                self.set(op, HV::Mem(id));
            }
            "memref.dealloc" => {
                let id = self.mem(o[0])?;
                self.dealloc(id)?;
            }
            "memref.dim" => {
                let id = self.mem(o[0])?;
                let d = self.int(o[1])? as usize;
                self.set(op, HV::I(self.mems[id].shape.get(d).copied().unwrap_or(0) as i64));
            }
            "memref.load" | "memref.store" | "memref.atomic_rmw" => {
                let (mi, idx_from) = if n == "memref.load" { (0, 1) } else { (1, 2) };
                let id = self.mem(o[mi])?;
                let mut flat = 0usize;
                for (k, v) in o[idx_from..].iter().enumerate() {
                    flat = flat * self.mems[id].shape[k] + self.int(*v)? as usize;
                }
                let cur = self.read_elem(id, flat)?;
                match n {
                    "memref.load" => self.set(op, cur),
                    "memref.store" => {
                        let v = self.get(o[0])?;
                        self.write_elem(id, flat, v)?;
                    }
                    _ => {
                        let v = self.get(o[0])?;
                        let kind: i64 = op.attr("kind").and_then(|s| s.split(' ').next()?.parse().ok()).unwrap_or(0);
                        let new = match (kind, cur, v) {
                            (0, HV::F(a), HV::F(b)) => HV::F(a + b),
                            (1, HV::I(a), HV::I(b)) => HV::I(a + b),
                            (4, HV::F(a), HV::F(b)) => HV::F(a.max(b)),
                            (6, HV::I(a), HV::I(b)) => HV::I(a.max(b)),
                            (8, HV::F(a), HV::F(b)) => HV::F(a.min(b)),
                            (10, HV::I(a), HV::I(b)) => HV::I(a.min(b)),
                            (12, HV::F(a), HV::F(b)) => HV::F(a * b),
                            (13, HV::I(a), HV::I(b)) => HV::I(a * b),
                            _ => return Err(RunError::Bundle(format!("unsupported host atomic kind {kind}"))),
                        };
                        self.write_elem(id, flat, new)?;
                        self.set(op, cur);
                    }
                }
            }
            "gpu.launch_func" => {
                let kernel = op.attr("kernel").ok_or_else(|| RunError::Bundle("launch without kernel".into()))?;
                let kname = kernel.rsplit("::@").next().unwrap_or(kernel).trim_start_matches('@');
                let k = self
                    .b
                    .kernels
                    .iter()
                    .position(|x| x.name == kname)
                    .filter(|k| *k < self.kernels.len())
                    .ok_or_else(|| RunError::Bundle(format!("kernel {kname} not loaded")))?;
                let grid = [self.int(o[0])?, self.int(o[1])?, self.int(o[2])?];
                let block = [self.int(o[3])?, self.int(o[4])?, self.int(o[5])?];
                let args = o[6..].iter().map(|v| self.get(*v)).collect::<RunResult<Vec<_>>>()?;
                self.launch(k, grid, block, &args)?;
            }
            "appy.gemm" => {
                if o.len() != 14 {
                    return Err(RunError::Bundle("malformed appy.gemm".into()));
                }
                let mems = [self.mem(o[0])?, self.mem(o[1])?, self.mem(o[2])?];
                let mut idx = [0i64; 6];
                for (k, v) in o[3..9].iter().enumerate() {
                    idx[k] = self.int(*v)?;
                }
                let flag = |name: &str| op.attr(name).is_some_and(|v| v.trim().starts_with('1'));
                let g = GemmArgs {
                    mems,
                    idx,
                    m: self.int(o[9])?,
                    n: self.int(o[10])?,
                    k: self.int(o[11])?,
                    alpha: self.float(o[12])?,
                    beta: self.float(o[13])?,
                    trans_a: flag("trans_a"),
                    trans_b: flag("trans_b"),
                    vec: flag("vec"),
                };
                self.gemm(g)?;
            }
            "appy.trsv" => {
                if o.len() != 4 {
                    return Err(RunError::Bundle(format!("malformed {}", op.name)));
                }
                let mems = [self.mem(o[0])?, self.mem(o[1])?, self.mem(o[2])?];
                let n = self.int(o[3])?;
                self.trsv(mems, n)?;
            }
            "appy.print" => {
                let pieces = op
                    .attr("pieces")
                    .and_then(appy_ir::pyfmt::parse_pieces)
                    .ok_or_else(|| RunError::Bundle("malformed appy.print".into()))?;
                let kinds: Vec<appy_ir::pyfmt::Kind> = pieces
                    .iter()
                    .filter_map(|p| match p {
                        appy_ir::pyfmt::Piece::Value(k, _) => Some(*k),
                        _ => None,
                    })
                    .collect();
                let mut vals = vec![];
                for (k, v) in kinds.iter().zip(o) {
                    vals.push(appy_ir::pyfmt::from_bits(*k, self.int(*v)?));
                }
                use std::io::Write;
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(appy_ir::pyfmt::print_line(&pieces, &vals).as_bytes());
                let _ = out.flush();
            }
            "appy.potrf" => {
                if o.len() != 2 {
                    return Err(RunError::Bundle(format!("malformed {}", op.name)));
                }
                let a = self.mem(o[0])?;
                let n = self.int(o[1])?;
                self.potrf(a, n)?;
            }
            other => return Err(RunError::Bundle(format!("the GPU runner cannot execute `{other}` in host code"))),
        }
        Ok(())
    }
}
