// The `appy` dialect, defined with IRDL: the ops the `appy` level needs beyond upstream
// MLIR (this project's `Ops.td`). Loops and reductions are upstream `scf` ops carrying
// appy's annotations as discardable attributes (`appy.parallel`, `appy.simd`,
// `appy.sequential`, and after strip-mining `appy.lanes`, `appy.chunks`).
// Loaded by `appy_ir::mlir::Ctx::new` (`APPY_IRDL`).
irdl.dialect @appy {
  // `appy.MVL`: the maximum vector length, symbolic at the appy level; appy-strip-mine
  // replaces it by the chosen constant, so one appy-level function serves every MVL.
  irdl.operation @mvl {
    %i64 = irdl.is i64
    irdl.results(value: %i64)
  }
  // The tensor level (seed 001 §4): statements in sliced index notation, as SSA values
  // that are functions of the statement's dimensions (numbered 0..k-1 per statement).
  // `appy.view %array(%i...) {dims, steps}`: one i64 operand per array axis, either the
  // slice's lower bound (dims[a] = the statement dimension) or a scalar index (dims[a] =
  // -1); a sliced axis with `steps[a] = s` reads `lower + s * i` (1 when absent).
  irdl.operation @view {
    %mem = irdl.base "!builtin.memref"
    %i64 = irdl.is i64
    %t = irdl.base "!builtin.tensor"
    irdl.operands(source: %mem, index: variadic %i64)
    irdl.results(result: %t)
  }
  // `appy.print(%values...) {pieces}`: prints a line from the host code; `pieces` is the
  // text and the value fields, encoded by `appy_ir::pyfmt::Piece`; each value is the 64
  // bits of its representation (a float32 in the low 32).
  irdl.operation @print {
    %i64 = irdl.is i64
    irdl.operands(values: variadic %i64)
  }
  // `appy.iota {dims = [d]}`: the index of statement dimension d (i64), for `np.arange`.
  irdl.operation @iota {
    %t = irdl.base "!builtin.tensor"
    irdl.results(result: %t)
  }
  // `appy.ew {op = "arith.addf", ...}`: the scalar op `op` applied element-wise; its one
  // to three operands are tensors or scalars (broadcast); the other attributes are the
  // scalar op's.
  irdl.operation @ew {
    %a = irdl.any
    %b = irdl.any
    %c = irdl.any
    %t = irdl.base "!builtin.tensor"
    irdl.operands(a: %a, b: optional %b, c: optional %c)
    irdl.results(result: %t)
  }
  // `appy.reduce {kind = "sum"|"prod"|"max"|"min", dims}`: reduces the listed dimensions.
  irdl.operation @reduce {
    %t = irdl.base "!builtin.tensor"
    %any = irdl.any
    irdl.operands(input: %t)
    irdl.results(result: %any)
  }
  // `appy.gemm C(ci, cj) = alpha * op(A)(ai, aj) @ op(B)(bi, bj) + beta * C` over M x N x
  // K (a matrix product delegated to a library: cuBLAS on the GPU); operands C, A, B,
  // the six view offsets, M, N, K, alpha, beta; attributes `trans_a`, `trans_b`
  // (1 or 0). With `vec = 1` it is a matrix-vector product (C and B are vectors,
  // N = 1): the same op.
  irdl.operation @gemm {
    %mc = irdl.base "!builtin.memref"
    %ma = irdl.base "!builtin.memref"
    %mb = irdl.base "!builtin.memref"
    %i64 = irdl.is i64
    %f = irdl.any
    irdl.operands(c: %mc, a: %ma, b: %mb, index: variadic %i64, alpha: %f, beta: %f)
  }
  // `appy.trsv(L, x, b, n)`: x[:n] = b[:n], then x = L⁻¹ x with the lower triangle of
  // L[:n, :n] (forward substitution, delegated to a library: cuBLAS on the GPU).
  irdl.operation @trsv {
    %ml = irdl.base "!builtin.memref"
    %mx = irdl.base "!builtin.memref"
    %mb = irdl.base "!builtin.memref"
    %i64 = irdl.is i64
    irdl.operands(l: %ml, x: %mx, b: %mb, n: %i64)
  }
  // `appy.potrf(A, n)`: the lower triangle of A[:n, :n] becomes its Cholesky factor L
  // (A = L Lᵀ); the rest of A is untouched (cuSOLVER on the GPU). On the CPU it has a
  // result, whether it succeeded (A is untouched when it did not: the loops then run).
  irdl.operation @potrf {
    %m = irdl.base "!builtin.memref"
    %i64 = irdl.is i64
    %i1 = irdl.is i1
    irdl.operands(a: %m, n: %i64)
    irdl.results(ok: optional %i1)
  }
  // `appy.assign %target(%i...) = %value` over extents %e (one per statement dimension);
  // the loop order and per-dimension properties of the tensor pragma are attributes.
  irdl.operation @assign {
    %mem = irdl.base "!builtin.memref"
    %any = irdl.any
    %i64 = irdl.is i64
    irdl.operands(target: %mem, value: %any, index: variadic %i64, extents: variadic %i64)
  }
}
