//! cuBLAS and cuSOLVER on the runner's stream: the library calls of `appy.gemm`,
//! `appy.trsv` and `appy.potrf` (the executor checks and moves their operands first).

use super::Gpu;
use crate::device::{Device, GemmCall, GemvCall, PotrfCall, TrsvCall};
use crate::error::{RunError, RunResult};
use appy_ir::types::DType;
use cudarc::cublas::{result as blas, sys as bsys};
use cudarc::cusolver::sys as ssys;
use cudarc::driver::result;

fn op_of(t: bool) -> bsys::cublasOperation_t {
    if t {
        bsys::cublasOperation_t::CUBLAS_OP_T
    } else {
        bsys::cublasOperation_t::CUBLAS_OP_N
    }
}

impl Gpu {
    /// The cuBLAS handle, created on first use.
    pub(super) fn blas_handle(&self) -> RunResult<bsys::cublasHandle_t> {
        self.blas
            .get_or_init(|| {
                let h = blas::create_handle().map_err(|e| RunError::Unavailable(format!("cuBLAS is not available: {e:?}")))?;
                unsafe { blas::set_stream(h, self.stream.cu_stream() as bsys::cudaStream_t) }
                    .map_err(|e| RunError::Library(format!("cuBLAS: {e:?}")))?;
                Ok(h)
            })
            .clone()
    }

    /// The cuSOLVER handle, created on first use.
    fn solver_handle(&self) -> RunResult<ssys::cusolverDnHandle_t> {
        self.solver
            .get_or_init(|| unsafe {
                if !ssys::is_culib_present() {
                    return Err(RunError::Unavailable(
                        "cuSOLVER is not available (libcusolver could not be loaded)".to_string(),
                    ));
                }
                let mut h = std::ptr::null_mut();
                let st = ssys::cusolverDnCreate(&mut h);
                if st != ssys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
                    return Err(RunError::Unavailable(format!("cuSOLVER is not available: {st:?}")));
                }
                let st = ssys::cusolverDnSetStream(h, self.stream.cu_stream() as ssys::cudaStream_t);
                if st != ssys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
                    return Err(RunError::Library(format!("cuSOLVER: {st:?}")));
                }
                Ok(h)
            })
            .clone()
    }

    /// cuBLAS gemm on row-major operands (column-major: computes `Cᵀ = op(B)ᵀ op(A)ᵀ`).
    pub(super) fn blas_gemm(&self, g: &GemmCall) -> RunResult<()> {
        let handle = self.blas_handle()?;
        let ((pa, lda), (pb, ldb), (pc, ldc)) = (g.a, g.b, g.c);
        let r = unsafe {
            match g.dtype {
                DType::F32 => {
                    let (al, be) = (g.alpha as f32, g.beta as f32);
                    blas::sgemm(
                        handle,
                        op_of(g.trans_b),
                        op_of(g.trans_a),
                        g.n,
                        g.m,
                        g.k,
                        &al,
                        pb as *const f32,
                        ldb,
                        pa as *const f32,
                        lda,
                        &be,
                        pc as *mut f32,
                        ldc,
                    )
                }
                DType::F64 => blas::dgemm(
                    handle,
                    op_of(g.trans_b),
                    op_of(g.trans_a),
                    g.n,
                    g.m,
                    g.k,
                    &g.alpha,
                    pb as *const f64,
                    ldb,
                    pa as *const f64,
                    lda,
                    &g.beta,
                    pc as *mut f64,
                    ldc,
                ),
                other => return Err(RunError::Program(format!("matrix products of {other:?} are not supported"))),
            }
        };
        r.map_err(|e| RunError::Library(format!("cuBLAS gemm failed: {e:?}")))
    }

    /// cuBLAS gemv: row-major A (rows x cols, ld) is column-major Aᵀ, so `y = A x` is
    /// gemv(T) and `y = Aᵀ x` is gemv(N).
    pub(super) fn blas_gemv(&self, g: &GemvCall) -> RunResult<()> {
        let handle = self.blas_handle()?;
        let op = op_of(!g.trans);
        let (cm, cn) = (g.cols, g.rows);
        let r = unsafe {
            match g.dtype {
                DType::F32 => {
                    let (al, be) = (g.alpha as f32, g.beta as f32);
                    blas::sgemv(
                        handle,
                        op,
                        cm,
                        cn,
                        &al,
                        g.a as *const f32,
                        g.lda,
                        g.x as *const f32,
                        1,
                        &be,
                        g.y as *mut f32,
                        1,
                    )
                }
                DType::F64 => blas::dgemv(
                    handle,
                    op,
                    cm,
                    cn,
                    &g.alpha,
                    g.a as *const f64,
                    g.lda,
                    g.x as *const f64,
                    1,
                    &g.beta,
                    g.y as *mut f64,
                    1,
                ),
                other => return Err(RunError::Program(format!("matrix-vector products of {other:?} are not supported"))),
            }
        };
        r.map_err(|e| RunError::Library(format!("cuBLAS gemv failed: {e:?}")))
    }

    /// cuBLAS trsv on the column-major `Lᵀ`: upper, transposed.
    pub(super) fn blas_trsv(&self, t: &TrsvCall) -> RunResult<()> {
        let handle = self.blas_handle()?;
        let (up, tr, nu) = (
            bsys::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
            bsys::cublasOperation_t::CUBLAS_OP_T,
            bsys::cublasDiagType_t::CUBLAS_DIAG_NON_UNIT,
        );
        let st = unsafe {
            match t.dtype {
                DType::F64 => bsys::cublasDtrsv_v2(handle, up, tr, nu, t.n, t.l as *const f64, t.ld, t.x as *mut f64, 1),
                DType::F32 => bsys::cublasStrsv_v2(handle, up, tr, nu, t.n, t.l as *const f32, t.ld, t.x as *mut f32, 1),
                other => return Err(RunError::Program(format!("triangular solves of {other:?} are not supported"))),
            }
        };
        if st != bsys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(RunError::Library(format!("cuBLAS trsv failed: {st:?}")));
        }
        Ok(())
    }

    /// cuSOLVER potrf. The row-major lower triangle is the column-major upper one, but
    /// cuSOLVER's lower factorisation is 2.5x faster (measured on H200 for n = 900, see
    /// BENCHMARKS.md), so the block is transposed into a column-major copy (cuBLAS geam),
    /// factorised there (lower), and transposed back: the upper triangle goes back as it
    /// was. Returns potrf's info.
    pub(super) fn solver_potrf(&self, p: &PotrfCall) -> RunResult<i32> {
        let blas = self.blas_handle()?;
        let h = self.solver_handle()?;
        let n = p.n as usize;
        // Scratch: the column-major copy, then cuSOLVER's workspace and its info word.
        let t_bytes = n * n * p.dtype.size();
        let t = self.alloc(t_bytes)?;
        let mut bufs = vec![(t, t_bytes)];
        let r = self.potrf_on_copy(blas, h, p, t, &mut bufs);
        for (ptr, b) in bufs {
            self.release(ptr, b);
        }
        r
    }

    /// Transposes row-major `A[:n, :n]` into the column-major buffer `t`, factorises it
    /// (cuSOLVER, lower), transposes it back; returns potrf's info. Scratch buffers it
    /// allocates are pushed to `bufs`.
    fn potrf_on_copy(
        &self,
        blas: bsys::cublasHandle_t,
        h: ssys::cusolverDnHandle_t,
        p: &PotrfCall,
        t: u64,
        bufs: &mut Vec<(u64, usize)>,
    ) -> RunResult<i32> {
        let (dt, pa, n) = (p.dtype, p.a, p.n);
        let (tr, nt) = (bsys::cublasOperation_t::CUBLAS_OP_T, bsys::cublasOperation_t::CUBLAS_OP_N);
        let ld = p.ld as i32;
        // C (column-major, ldc) = op(src)ᵀ: a transpose between the two layouts. With beta
        // = 0, geam does not read B (checked on the GPU: inf and -0.0 come back unchanged).
        let geam = |src: u64, lds: i32, dst: u64, ldd: i32| -> RunResult<()> {
            let st = unsafe {
                match dt {
                    DType::F64 => {
                        let (one, zero) = (1.0f64, 0.0f64);
                        bsys::cublasDgeam(
                            blas,
                            tr,
                            nt,
                            n,
                            n,
                            &one,
                            src as *const f64,
                            lds,
                            &zero,
                            src as *const f64,
                            lds,
                            dst as *mut f64,
                            ldd,
                        )
                    }
                    _ => {
                        let (one, zero) = (1.0f32, 0.0f32);
                        bsys::cublasSgeam(
                            blas,
                            tr,
                            nt,
                            n,
                            n,
                            &one,
                            src as *const f32,
                            lds,
                            &zero,
                            src as *const f32,
                            lds,
                            dst as *mut f32,
                            ldd,
                        )
                    }
                }
            };
            if st == bsys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                Ok(())
            } else {
                Err(RunError::Library(format!("cuBLAS geam (transpose) failed: {st:?}")))
            }
        };
        let ok = |st: ssys::cusolverStatus_t, what: &str| {
            if st == ssys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
                Ok(())
            } else {
                Err(RunError::Library(format!("cuSOLVER {what} failed: {st:?}")))
            }
        };
        geam(pa, ld, t, n)?;
        let lo = ssys::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER;
        let mut lwork: i32 = 0;
        unsafe {
            match dt {
                DType::F64 => ok(
                    ssys::cusolverDnDpotrf_bufferSize(h, lo, n, t as *mut f64, n, &mut lwork),
                    "potrf_bufferSize",
                )?,
                _ => ok(
                    ssys::cusolverDnSpotrf_bufferSize(h, lo, n, t as *mut f32, n, &mut lwork),
                    "potrf_bufferSize",
                )?,
            }
        }
        let ws_bytes = (lwork.max(1) as usize) * dt.size();
        let ws = self.alloc(ws_bytes)?;
        bufs.push((ws, ws_bytes));
        let info = self.alloc(4)?;
        bufs.push((info, 4));
        let st = unsafe {
            match dt {
                DType::F64 => ssys::cusolverDnDpotrf(h, lo, n, t as *mut f64, n, ws as *mut f64, lwork, info as *mut i32),
                _ => ssys::cusolverDnSpotrf(h, lo, n, t as *mut f32, n, ws as *mut f32, lwork, info as *mut i32),
            }
        };
        ok(st, "potrf")?;
        geam(t, n, pa, ld)?;
        let mut dev_info = [0u8; 4];
        self.stream.synchronize().map_err(|e| RunError::driver("synchronisation", e))?;
        unsafe { result::memcpy_dtoh_sync(&mut dev_info, info) }.map_err(|e| RunError::driver("copy from device", e))?;
        Ok(i32::from_le_bytes(dev_info))
    }
}
