# appy-cpu-minmax: on the CPU, a max reduction carried by a loop becomes maxnumf (which
# LLVM vectorises) plus an i1 flag of the NaNs seen; after the loop the result is NaN
# when the flag is set, so the value is maximumf's (NumPy's NaN-propagating max). The
# loop body has no select or condition, so maxnumf gets nnan,nsz (the flag covers NaNs).
# RUN: appy-opt %s --func row_max --signature 'f64[:,:],f64[:],int,int' --emit=cpu | filecheck %s
# RUN: appy-opt %s --func row_max --signature 'f64[:,:],f64[:],int,int' --emit=cpu | appy-opt - | filecheck %s
import numpy as np
import appy


@appy.jit
def row_max(a, out, M, N):
    #pragma parallel for
    for i in range(M):
        m = float('-inf')
        #pragma simd
        for j in range(N):
            m = np.maximum(m, a[i, j])
        out[i] = m

# CHECK-LABEL: func.func @row_max
# CHECK: %[[INIT:[0-9]+]] = memref.load
# CHECK-NEXT: %[[NAN0:[0-9]+]] = arith.cmpf uno, %[[INIT]], %[[INIT]] : f64
# CHECK: %[[R:[0-9]+]]:2 = scf.for {{.*}} iter_args(%[[ACC:arg[0-9]+]] = %[[INIT]], %[[FLAG:arg[0-9]+]] = %[[NAN0]]) -> (f64, i1)
# CHECK: %[[M:[0-9]+]] = arith.maxnumf %[[ACC]], %[[X:[0-9]+]] fastmath<reassoc,nnan,nsz> : f64
# CHECK: %[[U:[0-9]+]] = arith.cmpf uno, %[[X]], %[[X]] : f64
# CHECK: %[[F:[0-9]+]] = arith.ori %[[FLAG]], %[[U]] : i1
# CHECK: scf.yield %[[M]], %[[F]] : f64, i1
# CHECK: %[[NAN:[a-z0-9_]+]] = arith.constant 0x7FF8000000000000 : f64
# CHECK: arith.select %[[R]]#1, %[[NAN]], %[[R]]#0 : f64
