# appy-cpu-fuse: on the CPU, consecutive parallel loops over the same range that touch
# the arrays one writes and the other accesses only at the same index are one loop (one
# OpenMP region); a loop reading a neighbour of what the previous one wrote is not
# fused.
# RUN: appy-opt %s --func same_index --signature 'f64[:],f64[:],int' --emit=cpu | filecheck %s
# RUN: appy-opt %s --func neighbour --signature 'f64[:],f64[:],int' --emit=cpu | filecheck %s --check-prefix=SHIFT
import appy


@appy.jit
def same_index(a, b, N):
    #pragma parallel for simd
    for i in range(N):
        b[i] = a[i] + 1.0
    #pragma parallel for simd
    for i in range(N):
        a[i] = b[i] * 2.0


@appy.jit
def neighbour(a, b, N):
    #pragma parallel for
    for i in range(N - 1):
        b[i] = a[i] + 1.0
    #pragma parallel for
    for i in range(N - 1):
        a[i] = b[i + 1] * 2.0

# CHECK-LABEL: func.func @same_index
# CHECK: omp.parallel
# CHECK: memref.store {{.*}}, %arg1
# CHECK: memref.load %arg1
# CHECK: memref.store {{.*}}, %arg0
# CHECK-NOT: omp.parallel
# CHECK: return

# SHIFT-LABEL: func.func @neighbour
# SHIFT: omp.parallel
# SHIFT: omp.parallel
