# appy-cpu-exp expands only the ops whose argument varies from one iteration of the
# innermost loop around them to the next (crates/appy-passes/src/analyses/uniform.rs). One whose
# argument is the same in every iteration (np.tanh(c[0]) in a loop over i) is left to the
# C library: it gains nothing from being vectorisable, and LLVM's loop vectoriser takes
# exponential time on a uniform expansion of a uniform expansion (`k` below did not
# finish compiling in minutes when both were expanded).
# RUN: appy-opt %s --func k --signature 'f64[:],f64[:],int' --emit=cpu | appy-opt - --pass-pipeline='appy-cpu-exp' | filecheck %s
# RUN: appy-opt %s --func nested --signature 'f64[:,:],f64[:],int,int' --emit=cpu | appy-opt - --pass-pipeline='appy-cpu-exp' | filecheck %s --check-prefix=NESTED
# RUN: appy-opt %s --func slots --signature 'f64[:],f64[:],f64[:],int,float' --emit=cpu | appy-opt - --pass-pipeline='appy-cpu-exp' | filecheck %s --check-prefix=SLOTS
import numpy as np
import appy


@appy.jit
def k(a, c, n):
    #pragma parallel for
    for i in range(n):
        a[i] = np.tanh(np.tanh(c[0])) + np.exp(c[i])

# CHECK-LABEL: func.func @k
# The uniform ones stay ops (C library calls later).
# CHECK: %[[C0:[0-9]+]] = memref.load %arg1
# CHECK-NEXT: %[[T1:[0-9]+]] = math.tanh %[[C0]] : f64
# CHECK-NEXT: math.tanh %[[T1]] : f64
# The varying one is expanded: no math.exp is left.
# CHECK: memref.load %arg1
# CHECK-NOT: math.exp
# CHECK: arith.constant 0x4338000000000000 : f64
# CHECK-NOT: math.exp
# CHECK: return


@appy.jit
def nested(A, c, n, m):
    #pragma parallel for
    for i in range(n):
        for j in range(m):
            A[i, j] = np.tanh(np.tanh(c[i])) + np.exp(A[i, j])

# c[i] varies with i but not in the innermost loop, the one LLVM vectorises.
# NESTED-LABEL: func.func @nested
# NESTED: %[[CI:[0-9]+]] = memref.load %arg1
# NESTED-NEXT: %[[T1:[0-9]+]] = math.tanh %[[CI]] : f64
# NESTED-NEXT: math.tanh %[[T1]] : f64
# NESTED-NOT: math.exp
# NESTED: arith.constant 0x4338000000000000 : f64
# NESTED: return


@appy.jit
def slots(a, b, c, n, x):
    t = 0.0
    #pragma parallel for
    for i in range(n):
        u = c[0] * 0.5
        v = c[i] - 1.0
        a[i] = np.exp(np.exp(u if x > 0 else x)) + np.tanh(v)
    for i in range(n):
        b[i] = np.exp(t)
        t = c[i]

# A scalar stored in the loop varies if what is stored does: u (c[0] * 0.5, through a
# conditional expression) does not, v does; t is the last iteration's c[i].
# SLOTS-LABEL: func.func @slots
# SLOTS: math.exp
# SLOTS-NEXT: math.exp
# SLOTS-NOT: math.tanh
# SLOTS: math.copysign
# SLOTS: appy.parallel
# The sequential loop: t's load is expanded.
# SLOTS: scf.for
# SLOTS-NEXT: memref.load %alloca{{.*}}[] : memref<f64>
# SLOTS-NOT: math.exp
# SLOTS: arith.constant 0x4338000000000000 : f64
# SLOTS-NOT: math.exp
# SLOTS: return
