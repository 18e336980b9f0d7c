# appy-tag-inames (Loopy's tag_inames) sets how named sequential loops run, and
# appy-unroll generates the code of `unr`: the loop over `k` (constant trip count 3)
# becomes three copies of its body, each with `k` a constant. A loop whose trip count
# is not a constant cannot be unrolled, a parallel loop is not retagged, and `ilp` needs
# independent iterations: each is refused at the loop's line.
# RUN: appy-opt %s --signature 'f64[:],f64[:]' --emit=appy | appy-opt - --pass-pipeline='appy-tag-inames{tags=k:unr}' | filecheck %s --check-prefix=TAG
# RUN: appy-opt %s --signature 'f64[:],f64[:]' --emit=appy | appy-opt - --pass-pipeline='appy-tag-inames{tags=k:unr},appy-unroll' | filecheck %s --check-prefix=UNR
# RUN: appy-opt %s --signature 'f64[:],f64[:]' --emit=appy | not appy-opt - --pass-pipeline='appy-tag-inames{tags=j:unr}' 2>&1 | filecheck %s --check-prefix=TRIP
# RUN: appy-opt %s --signature 'f64[:],f64[:]' --emit=appy | not appy-opt - --pass-pipeline='appy-tag-inames{tags=i:for}' 2>&1 | filecheck %s --check-prefix=PAR
# RUN: appy-opt %s --signature 'f64[:],f64[:]' --emit=appy | not appy-opt - --pass-pipeline='appy-tag-inames{tags=k:ilp}' 2>&1 | filecheck %s --check-prefix=ILP
# RUN: appy-opt %s --signature 'f64[:],f64[:]' --emit=appy | not appy-opt - --pass-pipeline='appy-tag-inames{tags=k:l.0}' 2>&1 | filecheck %s --check-prefix=LOCAL
import numpy as np
import appy


@appy.jit
def w(a, b):
    #pragma parallel for
    for i in range(1, a.shape[0] - 1):
        t = 0.0
        #pragma sequential for
        for k in range(3):
            t += (k + 1.0) * a[i - 1 + k]
        #pragma sequential for
        for j in range(a.shape[0]):
            t += 0.0 * a[j]
        b[i] = t
# TAG: } {appy.inames = ["k"], appy.sequential, appy.tags = ["unr"]}
# UNR-LABEL: func.func @w
# UNR-NOT: appy.inames = ["k"]
# UNR: arith.index_cast %c0{{_[0-9]+}} : index to i64
# UNR: memref.load %arg0
# UNR: arith.index_cast %c1{{_[0-9]+}} : index to i64
# UNR: memref.load %arg0
# UNR: arith.index_cast %c2{{(_[0-9]+)?}} : index to i64
# UNR: memref.load %arg0
# UNR: } {appy.inames = ["j"], appy.sequential}
# TRIP: error: loop `j` cannot be unrolled: its trip count is not a constant. Split it first and unroll the inner loop: `split(j, 4, inner=unr)` in a pragma's transform(...), appy-split-iname{iname=j factor=4 inner-tag=unr} in a pipeline
# PAR: loop `i` is parallel: it gets groups and threads by appy-split-iname{iname=i outer-tag=g.0 inner-tag=l.0}; appy-tag-inames tags sequential loops
# ILP: the iterations of loop `k` are not independent as `ilp` requires (it updates a scalar defined outside it in every iteration): unroll it with `unr` instead
# LOCAL: loop `k` is sequential: running it as l.0 needs its iterations to be independent
