# appy-tensor-to-loops on seed 001 Listing 8: one fused loop nest (a parallel loop
# over rows, a simd reduction over columns), alpha * A * x computed per element and
# never stored: no temporary array.
# RUN: appy-opt %s --signature 'f64,f64[:,:],f64[:],f64[:]' --emit=appy | appy-opt - --pass-pipeline='appy-tensor-to-loops' | filecheck %s --check-prefix=NEST
# RUN: appy-opt %s --signature 'f64,f64[:,:],f64[:],f64[:]' --mvl 256 --emit=loops | filecheck %s --check-prefix=LOOPS
# RUN: appy-opt %s --signature 'f64,f64[:,:],f64[:],f64[:]' --mvl 256 --emit=loops | appy-opt - | filecheck %s --check-prefix=LOOPS
import numpy as np
import appy
from appy import mv


@appy.jit(auto_simd=True)
def kernel(alpha, A, x, y):
    M, N = A.shape
    #pragma :M=>parallel :N=>reduction(sum:y)
    y[:M] = mv(alpha * A[:M, :N], x[:N])

# NEST-LABEL: func.func @kernel
# NEST-NOT: "appy.
# NEST: scf.parallel
# NEST: scf.parallel {{.*}} init
# NEST: memref.load %arg1
# NEST: arith.mulf %arg0
# NEST: memref.load %arg2
# NEST: arith.mulf
# NEST: scf.reduce
# NEST: arith.addf
# NEST: } {appy.inames = ["_appy_t0_d1"], appy.simd}
# NEST: memref.store {{.*}}, %arg3
# NEST: } {appy.inames = ["_appy_t0_d0"], appy.parallel}
# NEST-NOT: memref.alloc(

# LOOPS-LABEL: func.func @kernel
# LOOPS-NOT: memref.alloc(
# LOOPS: scf.parallel
# LOOPS: scf.for {{.*}} iter_args
# LOOPS: scf.parallel {{.*}} to (%c256
# LOOPS: arith.mulf %arg0
# LOOPS: appy.lanes
# LOOPS: appy.chunks
# LOOPS: memref.store {{.*}}, %arg3
# LOOPS: } {appy.inames = ["_appy_t0_d0"], appy.parallel}
# LOOPS-NOT: scf.parallel
# LOOPS: return
