# Every loop from the source carries its name (appy.inames): its loop variable, made
# unique in the function (a later loop over `i` is `i_1`, then `i_2`). Strip-mining
# names the loops it makes as Loopy's split_iname does: `j` split by the vector length
# becomes `j_outer` (chunks, or workers) and `j_inner` (lanes).
# RUN: appy-opt %s --signature 'f64[:,:],f64[:,:],int,int' --emit=appy | filecheck %s
# RUN: appy-opt %s --signature 'f64[:,:],f64[:,:],int,int' --mvl 128 --emit=loops | filecheck %s --check-prefix=LOOPS
import numpy as np
import appy


@appy.jit
def k(a, b, N, M):
    #pragma parallel for
    for i in range(N):
        #pragma simd
        for j in range(M):
            b[i, j] = a[i, j] * 2.0
    for i in range(N):
        b[i, 0] += 1.0
    #pragma parallel for simd
    for i in range(N):
        a[i, 0] = 0.5
# CHECK-LABEL: func.func @k
# CHECK: } {appy.inames = ["j"], appy.simd}
# CHECK: } {appy.inames = ["i"], appy.parallel}
# CHECK: } {appy.inames = ["i_1"]}
# CHECK: } {appy.inames = ["i_2"], appy.parallel, appy.simd}
# LOOPS-LABEL: func.func @k
# LOOPS: } {appy.inames = ["j_inner"], appy.lanes, appy.tags = ["l.0"]}
# LOOPS: } {appy.chunks, appy.inames = ["j_outer"], appy.tags = ["for"]}
# LOOPS: } {appy.inames = ["i"], appy.parallel}
# LOOPS: } {appy.inames = ["i_1"]}
# LOOPS: } {appy.inames = ["i_2_inner"], appy.lanes, appy.tags = ["l.0"]}
# LOOPS: } {appy.inames = ["i_2_outer"], appy.parallel, appy.tags = ["g.0"]}
