# le(c): a dimension of at most c ≤ MVL elements is one vector: the simd loop becomes
# a single lanes loop (no chunk loop), its values stay in registers.
# RUN: appy-opt %s --signature 'f64[:,:],f64[:],int,int' --mvl 256 --emit=loops | filecheck %s
import numpy as np
import appy


@appy.jit
def small_rows(x, y, M, N):
    #pragma :M=>parallel :N=>simd,le(64)
    y[:M] = np.max(x[:M, :N], axis=1)

# CHECK-LABEL: func.func @small_rows
# CHECK: scf.parallel
# CHECK-NOT: appy.chunks
# CHECK: arith.maximumf
# CHECK: } {appy.inames = ["_appy_t0_d1"], appy.lanes, appy.le
# CHECK-NOT: appy.chunks
# CHECK: } {appy.inames = ["_appy_t0_d0"], appy.parallel}
