//! Reference implementations of the library calls (`appy.gemm`, `appy.trsv`,
//! `appy.potrf` and matrix-vector products) as plain loops over any memory that can
//! read and write float elements: the host device ([`crate::host_device`]) and the
//! executor's test device compute with them. Sums are in float64, rounded once per
//! result element.

use super::{DevicePtr, GemmCall, GemvCall, PotrfCall, TrsvCall};
use appy_ir::types::DType;

/// Float elements of arrays at device addresses (`f32` and `f64`).
pub trait Elements {
    /// Element `i` of the array at `base`.
    fn get(&self, dt: DType, base: DevicePtr, i: usize) -> f64;
    /// Sets element `i` of the array at `base`.
    fn set(&self, dt: DType, base: DevicePtr, i: usize, v: f64);
}

/// `C = alpha * op(A) @ op(B) + beta * C`.
pub fn gemm(m: &impl Elements, g: &GemmCall) {
    let (dt, (a, lda), (b, ldb), (c, ldc)) = (g.dtype, g.a, g.b, g.c);
    let (lda, ldb, ldc) = (lda as usize, ldb as usize, ldc as usize);
    for i in 0..g.m as usize {
        for j in 0..g.n as usize {
            let mut s = 0.0;
            for p in 0..g.k as usize {
                let x = if g.trans_a {
                    m.get(dt, a, p * lda + i)
                } else {
                    m.get(dt, a, i * lda + p)
                };
                let y = if g.trans_b {
                    m.get(dt, b, j * ldb + p)
                } else {
                    m.get(dt, b, p * ldb + j)
                };
                s += x * y;
            }
            let old = if g.beta == 0.0 { 0.0 } else { g.beta * m.get(dt, c, i * ldc + j) };
            m.set(dt, c, i * ldc + j, g.alpha * s + old);
        }
    }
}

/// `y = alpha * op(A) @ x + beta * y`.
pub fn gemv(m: &impl Elements, g: &GemvCall) {
    let (dt, lda) = (g.dtype, g.lda as usize);
    let (out, inner) = if g.trans { (g.cols, g.rows) } else { (g.rows, g.cols) };
    for i in 0..out as usize {
        let mut s = 0.0;
        for p in 0..inner as usize {
            let aij = if g.trans {
                m.get(dt, g.a, p * lda + i)
            } else {
                m.get(dt, g.a, i * lda + p)
            };
            s += aij * m.get(dt, g.x, p);
        }
        let old = if g.beta == 0.0 { 0.0 } else { g.beta * m.get(dt, g.y, i) };
        m.set(dt, g.y, i, g.alpha * s + old);
    }
}

/// `x = L⁻¹ x`.
pub fn trsv(m: &impl Elements, t: &TrsvCall) {
    let (dt, ld) = (t.dtype, t.ld as usize);
    for i in 0..t.n as usize {
        let mut s = m.get(dt, t.x, i);
        for j in 0..i {
            s -= m.get(dt, t.l, i * ld + j) * m.get(dt, t.x, j);
        }
        m.set(dt, t.x, i, s / m.get(dt, t.l, i * ld + i));
    }
}

/// The Cholesky factorisation of the lower triangle; returns LAPACK's `info`.
pub fn potrf(m: &impl Elements, p: &PotrfCall) -> i32 {
    let (dt, ld, a) = (p.dtype, p.ld, p.a);
    for j in 0..p.n as usize {
        let mut d = m.get(dt, a, j * ld + j);
        for k in 0..j {
            d -= m.get(dt, a, j * ld + k).powi(2);
        }
        if d.is_nan() || d <= 0.0 {
            return j as i32 + 1;
        }
        let d = d.sqrt();
        m.set(dt, a, j * ld + j, d);
        for i in j + 1..p.n as usize {
            let mut s = m.get(dt, a, i * ld + j);
            for k in 0..j {
                s -= m.get(dt, a, i * ld + k) * m.get(dt, a, j * ld + k);
            }
            m.set(dt, a, i * ld + j, s / d);
        }
    }
    0
}
