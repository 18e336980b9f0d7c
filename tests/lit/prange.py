# The high-level interface (seed 000): a `prange` loop is parallel; a scalar updated
# with one reduction operator becomes a reduction; `a[j] += b[i, j]` (loop i's index not
# in the store) becomes an atomic update; the vectorizable inner loop gets simd
# automatically (`appy.auto_simd`).
# RUN: appy-opt %s --func col_sums --signature 'f64[:],f64[:,:],int,int' --emit=appy | filecheck %s
# RUN: appy-opt %s --func vsum --signature 'f64[:],int' --emit=appy | filecheck %s --check-prefix=RED
import appy
from appy import prange


@appy.jit
def col_sums(a, b, M, N):
    for i in prange(M):
        for j in range(N):
            a[j] += b[i, j]


@appy.jit
def vsum(a, N):
    s = 0.0
    for i in prange(N):
        s += a[i]
    return s

# CHECK: scf.parallel
# CHECK: scf.parallel
# CHECK: memref.atomic_rmw addf
# CHECK: appy.auto_simd, appy.inames = ["j"], appy.simd
# CHECK: appy.inames = ["i"], appy.parallel, appy.prange
# RED: scf.parallel {{.*}} init
# RED: scf.reduce
# RED: arith.addf
# RED: appy.inames = ["i"], appy.parallel, appy.prange
