# appy-cpu-exp expands only the ops whose argument varies from one iteration to the
# next. One whose argument is the same in every iteration (np.tanh(c[0]) in a loop over
# i) is left to the C library: it gains nothing from being vectorisable, and LLVM's loop
# vectoriser takes exponential time on a uniform expansion of a uniform expansion (the
# kernel below did not finish compiling in minutes when both were expanded).
# RUN: appy-opt %s --func k --signature 'f64[:],f64[:],int' --emit=cpu | appy-opt - --pass-pipeline='appy-cpu-exp' | filecheck %s
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
