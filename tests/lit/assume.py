# appy-assume (Loopy's assume): loop `j`'s trip count is a multiple of K. The loop
# records it (`appy.multiple`), and a split by a factor dividing K has no rest loop
# (`j_tail`). From the source, `transform(assume(j, multiple=8))` also checks the fact at
# run time (a trip count modulo 8, reported through the status buffer). Constant bounds
# that contradict the fact are refused.
# RUN: appy-opt %s --func rowsum --signature 'f64[:,:],f64[:]' --emit=appy | appy-opt - --pass-pipeline='appy-assume{iname=j multiple=8},appy-split-iname{iname=j factor=4 inner-tag=unr}' | filecheck %s
# RUN: appy-opt %s --func rowsum --signature 'f64[:,:],f64[:]' --emit=appy | appy-opt - --pass-pipeline='appy-assume{iname=j multiple=6},appy-split-iname{iname=j factor=4 inner-tag=unr}' | filecheck %s --check-prefix=TAIL
# RUN: appy-opt %s --func checked --signature 'f64[:,:],f64[:]' --emit=loops | filecheck %s --check-prefix=SRC
# RUN: appy-opt %s --func fixed --signature 'f64[:],f64[:]' --emit=appy | not appy-opt - --pass-pipeline='appy-assume{iname=j multiple=4}' 2>&1 | filecheck %s --check-prefix=CONST
import numpy as np
import appy


@appy.jit
def rowsum(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        s = 0.0
        #pragma sequential for
        for j in range(a.shape[1]):
            s += a[i, j]
        out[i] = s


@appy.jit
def checked(a, out):
    #pragma parallel for transform(assume(j, multiple=8), split(j, 4, inner=unr))
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j]
        out[i] = s


@appy.jit
def fixed(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(10):
            s += a[j]
        out[i] = s
# CHECK-LABEL: func.func @rowsum
# CHECK: appy.inames = ["j_outer"]
# CHECK-NOT: j_tail
# CHECK-NOT: appy.multiple
# TAIL: appy.inames = ["j_outer"]
# TAIL: appy.inames = ["j_tail"]
# SRC-LABEL: func.func @checked
# SRC: %[[R:.*]] = arith.remsi %{{.*}}, %c8_i64 : i64
# SRC: %[[BAD:.*]] = arith.cmpi ne, %[[R]], %c0_i64 : i64
# SRC: scf.if %[[BAD]] {
# SRC: memref.atomic_rmw maxs
# SRC: appy.inames = ["j_outer"]
# SRC-NOT: j_tail
# CONST: error: assume: loop `j` runs 10 iterations, not a multiple of 4
