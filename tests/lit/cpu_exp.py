# appy-cpu-exp: on the CPU, float64 np.exp, np.expm1 and np.tanh are computed inline by
# branch-free arith operations (which LLVM's loop vectoriser vectorises), not by calls
# of the C library (which keep the loop scalar). float32 ones are left to
# appy-cpu-wide-math: the C library's float64 function, rounded.
# RUN: appy-opt %s --func k --signature 'f64[:],f64[:],f64[:],int' --emit=cpu | appy-opt - --pass-pipeline='appy-cpu-exp' | filecheck %s --check-prefix=PASS
# RUN: appy-opt %s --func k --signature 'f64[:],f64[:],f64[:],int' --emit=llvm | filecheck %s
# RUN: appy-opt %s --func k --signature 'f32[:],f32[:],f32[:],int' --emit=llvm | filecheck %s --check-prefix=F32
import numpy as np
import appy


@appy.jit
def k(x, y, z, N):
    #pragma simd
    for i in range(N):
        y[i] = np.exp(x[i])
        z[i] = np.tanh(x[i]) + np.expm1(x[i])

# exp: x clamped (NaN passes), k = round(x/ln2) by the 1.5*2^52 shifter, x - k ln2 by
# two constants, the polynomial with contract, 2^(k-1) built in the exponent bits.
# PASS-LABEL: func.func @k
# PASS: %[[X:[0-9]+]] = memref.load %arg0
# PASS: arith.cmpf ogt, %[[X]], %{{.*}} : f64
# PASS: arith.constant 1.4426950408889634 : f64
# PASS: %[[SH:cst[_0-9]*]] = arith.constant 0x4338000000000000 : f64
# PASS: %[[T:[0-9]+]] = arith.addf %{{[0-9]+}}, %[[SH]] : f64
# PASS: arith.subf %[[T]], %[[SH]] : f64
# PASS: arith.andi %{{.*}}, %c-134217728_i64 : i64
# PASS: arith.mulf {{.*}} fastmath<contract> : f64
# PASS: arith.addf {{.*}} fastmath<contract> : f64
# PASS: %[[LOW:[0-9]+]] = arith.cmpf olt, %[[XC:[0-9]+]], %{{.*}} : f64
# PASS: %[[F:[0-9]+]] = arith.select %[[LOW]], {{.*}} : f64
# PASS: %[[BIAS:[0-9]+]] = arith.select %[[LOW]], {{.*}} : i64
# PASS-NEXT: %[[TB:[0-9]+]] = arith.bitcast %[[T]] : f64 to i64
# PASS-NEXT: %c52_i64 = arith.constant 52 : i64
# PASS-NEXT: %[[K52:[0-9]+]] = arith.shli %[[TB]], %c52_i64 : i64
# PASS-NEXT: %[[EB:[0-9]+]] = arith.addi %[[K52]], %[[BIAS]] : i64
# PASS-NEXT: %[[SC:[0-9]+]] = arith.bitcast %[[EB]] : i64 to f64
# PASS-NEXT: %[[MF:[0-9]+]] = arith.mulf %{{[0-9]+}}, %[[F]] : f64
# PASS-NEXT: %[[E:[0-9]+]] = arith.mulf %[[MF]], %[[SC]] : f64
# PASS-NEXT: memref.store %[[E]], %arg1
# tanh: |x|, expm1(2|x|) as a pair, the quotient and its correction, x's sign.
# PASS: %[[X2:[0-9]+]] = memref.load %arg0
# PASS-NEXT: math.absf %[[X2]] : f64
# PASS: arith.divf
# PASS: arith.divf
# PASS: math.copysign {{.*}}, %[[X2]] : f64
# expm1: x's sign too (expm1(-0) = -0).
# PASS: math.copysign {{.*}}, %[[X2]] : f64
# PASS-NOT: math.exp
# PASS-NOT: math.tanh
# PASS: return

# No C library call, declaration or intrinsic is left for them.
# CHECK-NOT: @exp
# CHECK-NOT: @expm1
# CHECK-NOT: @tanh
# CHECK-NOT: llvm.intr.exp
# CHECK-LABEL: llvm.func @k(
# CHECK-NOT: llvm.call @exp
# CHECK-NOT: llvm.call @tanh
# CHECK-NOT: llvm.intr.exp
# CHECK: llvm.intr.copysign
# CHECK-NOT: llvm.call @exp
# CHECK-NOT: llvm.intr.exp
# CHECK: llvm.return

# float32: the C library's float64 functions (appy-cpu-wide-math), correctly rounded.
# F32: llvm.func @exp(f64) -> f64
# F32: llvm.func @tanh(f64) -> f64
# F32: llvm.func @expm1(f64) -> f64
# F32-LABEL: llvm.func @k(
# F32: llvm.call @_appy_wide_exp
# F32: llvm.call @_appy_wide_tanh
# F32: llvm.call @_appy_wide_expm1
# F32: llvm.func internal @_appy_wide_exp(
# F32-NEXT: llvm.call @exp(
