# appy-split-iname (Loopy's split_iname) on a named loop of the `appy` level. A
# sequential loop `j` splits into full chunks (`j_outer`, tagged `for`) of `factor`
# iterations (`j_inner`, tagged as asked) and the rest (`j_tail`, tagged `for`); a
# parallel loop `i` splits into groups (`g.0`) of threads (`l.0`). Illegal requests are
# refused at the loop's line, with what is supported.
# RUN: appy-opt %s --signature 'f64[:,:],f64[:],f64[:]' --emit=appy | appy-opt - --pass-pipeline='appy-split-iname{iname=j factor=4 inner-tag=unr}' | filecheck %s
# RUN: appy-opt %s --signature 'f64[:,:],f64[:],f64[:]' --emit=appy | appy-opt - --pass-pipeline='appy-split-iname{iname=i factor=64 outer-tag=g.0 inner-tag=l.0}' | filecheck %s --check-prefix=PAR
# RUN: appy-opt %s --signature 'f64[:,:],f64[:],f64[:]' --emit=appy | not appy-opt - --pass-pipeline='appy-split-iname{iname=i factor=4 inner-tag=unr}' 2>&1 | filecheck %s --check-prefix=BAD
# RUN: appy-opt %s --signature 'f64[:,:],f64[:],f64[:]' --emit=appy | not appy-opt - --pass-pipeline='appy-split-iname{iname=j factor=4 inner-tag=ilp}' 2>&1 | filecheck %s --check-prefix=ILP
# RUN: appy-opt %s --signature 'f64[:,:],f64[:],f64[:]' --emit=appy | not appy-opt - --pass-pipeline='appy-split-iname{iname=q factor=4}' 2>&1 | filecheck %s --check-prefix=NONE
import numpy as np
import appy


@appy.jit
def mv(A, x, y):
    #pragma parallel for
    for i in range(A.shape[0]):
        s = 0.0
        #pragma sequential for
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] = s
# CHECK-LABEL: func.func @mv
# CHECK: %[[F:.*]] = arith.constant 4 : index
# CHECK: %[[CHUNK:.*]] = arith.muli %{{.*}}, %[[F]] : index
# CHECK: scf.for %[[BASE:.*]] = %{{.*}} to %[[MID:.*]] step %[[CHUNK]]
# CHECK: scf.for %{{.*}} = %{{.*}} to %[[F]] step
# CHECK: } {appy.inames = ["j_inner"], appy.tags = ["unr"]}
# CHECK: } {appy.inames = ["j_outer"], appy.sequential, appy.tags = ["for"]}
# CHECK: scf.for %{{.*}} = %[[MID]] to
# CHECK: } {appy.inames = ["j_tail"], appy.sequential, appy.tags = ["for"]}
# PAR: %[[W:.*]] = arith.ceildivsi
# PAR: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[W]])
# PAR: %[[C64:.*]] = arith.constant 64 : index
# PAR: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[C64]])
# PAR: } {appy.inames = ["i_inner"], appy.lanes, appy.tags = ["l.0"]}
# PAR: } {appy.inames = ["i_outer"], appy.parallel, appy.tags = ["g.0"]}
# BAD: loop `i` is parallel: it splits with outer-tag=g.0 inner-tag=l.0 only (asked: outer for, inner unr)
# ILP: the iterations of loop `j` are not independent as `ilp` requires (it updates a scalar defined outside it in every iteration): unroll it with `unr` instead
# NONE: appy-split-iname: no loop named `q` in this function (its loops: i, j)
