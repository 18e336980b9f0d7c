# The loops a transform addresses: a name may be a glob (`j*`: every loop of source
# variable `j`, which the compiler names j, j_1, ...), and `within=` is Loopy's match
# expression over loops (iname:, writes:, reads:, func:, line:, with and, or, not).
# Here only the `j` loop that writes `c` is split; the other is left as it was. A
# selection that matches no loop is refused with the expression, and so is a malformed
# expression, before anything runs.
# RUN: appy-opt %s --signature 'f64[:,:],f64[:,:],f64[:,:]' --emit=appy | appy-opt - --pass-pipeline='appy-split-iname{iname=j* factor=4 inner-tag=unr within="writes:c and iname:i"}' | filecheck %s
# RUN: appy-opt %s --signature 'f64[:,:],f64[:,:],f64[:,:]' --emit=appy | appy-opt - --pass-pipeline='appy-split-iname{iname=j* factor=4 inner-tag=unr within="not reads:c"}' | filecheck %s --check-prefix=BOTH
# RUN: appy-opt %s --signature 'f64[:,:],f64[:,:],f64[:,:]' --emit=appy | not appy-opt - --pass-pipeline='appy-split-iname{iname=j* factor=4 within="writes:d"}' 2>&1 | filecheck %s --check-prefix=NONE
# RUN: appy-opt %s --signature 'f64[:,:],f64[:,:],f64[:,:]' --emit=appy | not appy-opt - --pass-pipeline='appy-split-iname{iname=j* factor=4 within="id:s1"}' 2>&1 | filecheck %s --check-prefix=BAD
# A refusal names the loop the pattern selected.
# RUN: appy-opt %s --signature 'f64[:,:],f64[:,:],f64[:,:]' --emit=appy | not appy-opt - --pass-pipeline='appy-split-iname{iname=i* factor=4 inner-tag=unr}' 2>&1 | filecheck %s --check-prefix=LOOP
import appy


@appy.jit
def two(a, b, c):
    #pragma parallel for
    for i in range(a.shape[0]):
        #pragma sequential for
        for j in range(a.shape[1]):
            b[i, j] = a[i, j] * 2.0
        #pragma sequential for
        for j in range(a.shape[1]):
            c[i, j] = a[i, j] + 1.0
# CHECK-LABEL: func.func @two
# CHECK: } {appy.inames = ["j"], appy.sequential}
# CHECK: } {appy.inames = ["j_1_inner"], appy.tags = ["unr"]}
# CHECK: } {appy.inames = ["j_1_outer"], appy.sequential, appy.tags = ["for"]}
# CHECK: } {appy.inames = ["j_1_tail"], appy.sequential, appy.tags = ["for"]}
# BOTH: appy.inames = ["j_inner"]
# BOTH: appy.inames = ["j_1_inner"]
# NONE: error: appy-split-iname: no loop named `j*` within `writes:d` in this function (its loops: i, j, j_1)
# BAD: option within `id:` selects statements, which exist from the kernel level on
# LOOP: error: loop `i` is parallel
