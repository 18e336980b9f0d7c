//! Library ops of host code (`appy.gemm`, `appy.trsv`, `appy.potrf`): their operands'
//! bounds are checked and their boxes made current on the device, then the device's
//! library call runs ([`Device::gemm`] ...).

use super::Executor;
use crate::device::{Device, GemmCall, GemvCall, PotrfCall, TrsvCall};
use crate::error::{RunError, RunResult};
use crate::regions::IndexBox;
use appy_ir::types::DType;

/// The evaluated operands of an `appy.gemm`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GemmArgs {
    /// Memref ids of C, A, B.
    pub mems: [usize; 3],
    /// Row and column offsets of C, A, B.
    pub idx: [i64; 6],
    /// m, n, k.
    pub m: i64,
    pub n: i64,
    pub k: i64,
    pub alpha: f64,
    pub beta: f64,
    pub trans_a: bool,
    pub trans_b: bool,
    pub vec: bool,
}

fn bx(r: i64, c: i64, rows: i64, cols: i64) -> IndexBox {
    IndexBox {
        lo: vec![r, c],
        hi: vec![r + rows, c + cols],
    }
}

impl<D: Device> Executor<'_, D> {
    /// `appy.gemm`: `C = alpha * op(A) @ op(B) + beta * C` on row-major sub-matrices.
    pub(crate) fn gemm(&mut self, g: GemmArgs) -> RunResult<()> {
        let ([c, a, b], idx, (m, n, k)) = (g.mems, g.idx, (g.m, g.n, g.k));
        if m <= 0 || n <= 0 {
            return Ok(());
        }
        if g.vec {
            return self.gemv(g);
        }
        let cbox = bx(idx[0], idx[1], m, n);
        let abox = if g.trans_a {
            bx(idx[2], idx[3], k, m)
        } else {
            bx(idx[2], idx[3], m, k)
        };
        let bbox = if g.trans_b {
            bx(idx[4], idx[5], n, k)
        } else {
            bx(idx[4], idx[5], k, n)
        };
        self.library_operands("matrix product", &[(c, &cbox, "C"), (a, &abox, "A"), (b, &bbox, "B")], k > 0)?;
        let dt = self.mems[c].dtype;
        let es = dt.size() as u64;
        let at = |id: usize, r: i64, col: i64| -> (u64, i32) {
            let ld = self.mems[id].shape[1] as u64;
            (self.mems[id].ptr + (r as u64 * ld + col as u64) * es, ld.max(1) as i32)
        };
        let call = GemmCall {
            dtype: dt,
            trans_a: g.trans_a,
            trans_b: g.trans_b,
            m: m as i32,
            n: n as i32,
            k: k as i32,
            alpha: g.alpha,
            beta: g.beta,
            a: at(a, idx[2], idx[3]),
            b: at(b, idx[4], idx[5]),
            c: at(c, idx[0], idx[1]),
        };
        self.dev.gemm(&call)?;
        self.timing.launches += 1;
        Ok(())
    }

    /// `y = alpha * op(A) @ x + beta * y` (`appy.gemm` with `vec`): y and x vectors.
    fn gemv(&mut self, g: GemmArgs) -> RunResult<()> {
        let ([y, a, x], idx, (m, k)) = (g.mems, g.idx, (g.m, g.k));
        let ybox = IndexBox {
            lo: vec![idx[0]],
            hi: vec![idx[0] + m],
        };
        let xbox = IndexBox {
            lo: vec![idx[4]],
            hi: vec![idx[4] + k],
        };
        let (rows, cols) = if g.trans_a { (k, m) } else { (m, k) };
        let abox = bx(idx[2], idx[3], rows, cols);
        self.library_operands("matrix-vector product", &[(y, &ybox, "y"), (a, &abox, "A"), (x, &xbox, "x")], k > 0)?;
        let dt = self.mems[y].dtype;
        let es = dt.size() as u64;
        let ld = self.mems[a].shape[1].max(1) as i32;
        let call = GemvCall {
            dtype: dt,
            trans: g.trans_a,
            rows: rows as i32,
            cols: cols as i32,
            alpha: g.alpha,
            beta: g.beta,
            a: self.mems[a].ptr + (idx[2] as u64 * ld as u64 + idx[3] as u64) * es,
            lda: ld,
            x: self.mems[x].ptr + idx[4] as u64 * es,
            y: self.mems[y].ptr + idx[0] as u64 * es,
        };
        self.dev.gemv(&call)?;
        self.timing.launches += 1;
        Ok(())
    }

    /// The operands of a library call (output first): each box must lie inside its
    /// array; the boxes are made current on the device (the inputs only when `read`),
    /// and the output's box is marked written.
    fn library_operands(&mut self, what: &str, ops: &[(usize, &IndexBox, &str)], read: bool) -> RunResult<()> {
        if self.tiled {
            return Err(RunError::Program(format!(
                "{what} (a library call) cannot run under a device memory budget (APPY_DEVICE_BUDGET)"
            )));
        }
        for &(id, bx, name) in ops {
            let sh = &self.mems[id].shape;
            if sh.len() != bx.lo.len() || bx.lo.iter().any(|v| *v < 0) || bx.hi.iter().zip(sh).any(|(h, s)| *h > *s as i64) {
                return Err(RunError::Program(format!(
                    "{what}: the slice of {name} is out of the array's bounds {sh:?}"
                )));
            }
        }
        let [(out, obox, _), ins @ ..] = ops else { return Ok(()) };
        if read {
            for &(id, bx, _) in ins {
                self.make_valid(id, bx, None)?;
            }
        }
        self.make_valid(*out, obox, Some(obox))
    }

    /// `n` as the libraries' `int`.
    fn library_n(n: i64, what: &str, lib: &str) -> RunResult<i32> {
        i32::try_from(n).map_err(|_| RunError::Program(format!("{what}: n = {n} is too large for {lib}")))
    }

    /// `appy.trsv(L, x, b, n)`: `x[:n] = b[:n]`, then `x = L⁻¹ x` with the lower triangle
    /// of the row-major `L[:n, :n]`.
    pub(crate) fn trsv(&mut self, [l, x, b]: [usize; 3], n: i64) -> RunResult<()> {
        if n <= 0 {
            return Ok(());
        }
        let n32 = Self::library_n(n, "triangular solve", "cuBLAS")?;
        let lbox = bx(0, 0, n, n);
        let vbox = IndexBox { lo: vec![0], hi: vec![n] };
        if b == x {
            self.library_operands("triangular solve", &[(x, &vbox, "x"), (l, &lbox, "L")], true)?;
        } else {
            self.library_operands("triangular solve", &[(x, &vbox, "x"), (l, &lbox, "L"), (b, &vbox, "b")], true)?;
        }
        let dt = self.mems[x].dtype;
        if self.mems[l].dtype != dt || self.mems[b].dtype != dt {
            return Err(RunError::Program(
                "triangular solve: L, x and b must have the same element type".into(),
            ));
        }
        let bytes = n as usize * dt.size();
        let (pl, px, pb) = (self.mems[l].ptr, self.mems[x].ptr, self.mems[b].ptr);
        if b != x {
            self.dev.dtod(px, pb, bytes)?;
        }
        let ld = self.mems[l].shape[1].max(1) as i32;
        self.dev.trsv(&TrsvCall {
            dtype: dt,
            n: n32,
            l: pl,
            ld,
            x: px,
        })?;
        self.timing.launches += 1;
        Ok(())
    }

    /// `appy.potrf(A, n)`: the lower triangle of the row-major `A[:n, :n]` becomes its
    /// Cholesky factor. When a leading minor is not positive definite, the sequential
    /// loop would produce NaN from that column on; so does this (the library stops
    /// there).
    pub(crate) fn potrf(&mut self, a: usize, n: i64) -> RunResult<()> {
        if n <= 0 {
            return Ok(());
        }
        let n32 = Self::library_n(n, "Cholesky factorisation", "cuSOLVER")?;
        let abox = bx(0, 0, n, n);
        self.library_operands("Cholesky factorisation", &[(a, &abox, "A")], true)?;
        let dt = self.mems[a].dtype;
        if !matches!(dt, DType::F32 | DType::F64) {
            return Err(RunError::Program(format!("Cholesky factorisations of {dt:?} are not supported")));
        }
        let es = dt.size();
        let ld = self.mems[a].shape[1].max(1);
        let pa = self.mems[a].ptr;
        let n = n32 as usize;
        let info = self.dev.potrf(&PotrfCall {
            dtype: dt,
            n: n32,
            a: pa,
            ld,
        })?;
        self.timing.launches += 1;
        if info < 0 {
            return Err(RunError::Library(format!("cuSOLVER potrf: argument {} is invalid", -info)));
        }
        if info > 0 {
            // Column j0 has a pivot ≤ 0 (or NaN): the loop's sqrt gives NaN there, and every
            // later entry of the lower triangle depends on it.
            let j0 = info as usize - 1;
            tracing::warn!(
                "Cholesky factorisation: the leading minor of order {info} is not positive definite; entries from column {j0} on are NaN"
            );
            let rows = n - j0;
            let mut host = vec![0u8; rows * ld * es];
            let base = pa + (j0 * ld * es) as u64;
            self.dev.dtoh(&mut host, base)?;
            for r in j0..n {
                for c in j0..=r {
                    let at = ((r - j0) * ld + c) * es;
                    match dt {
                        DType::F64 => host[at..at + 8].copy_from_slice(&f64::NAN.to_le_bytes()),
                        _ => host[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes()),
                    }
                }
            }
            self.dev.htod(base, &host)?;
        }
        Ok(())
    }
}
