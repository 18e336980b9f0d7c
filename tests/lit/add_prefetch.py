# appy-add-prefetch (Loopy's add_prefetch into local memory): the reads of an array
# that a group's threads make at neighbouring offsets are loaded once, by one lanes
# loop of the group, into a scratchpad (`appy.buffer`, shared memory on the GPU) of the
# footprint's size (MVL + max offset - min offset), and read from there. From the
# source: `transform(prefetch(a))`; as a pass on the `loops` level:
# `appy-add-prefetch{array=N iname=LOOP}`. A written array, and a loop with no
# qualifying read, are refused.
# RUN: appy-opt %s --func st --signature 'f64[:],f64[:]' --mvl 64 --emit=loops | filecheck %s
# RUN: appy-opt %s --func st --signature 'f64[:],f64[:]' --mvl 64 --emit=gpu | filecheck %s --check-prefix=GPU
# RUN: appy-opt %s --func rows --signature 'f32[:,:],f32[:,:]' --mvl 32 --emit=loops | filecheck %s --check-prefix=ROWS
# RUN: appy-opt %s --func plain --signature 'f64[:],f64[:]' --mvl 64 --emit=loops | appy-opt - --pass-pipeline='appy-add-prefetch{array=0 iname=i_outer}' | filecheck %s --check-prefix=PASS
# RUN: appy-opt %s --func plain --signature 'f64[:],f64[:]' --mvl 64 --emit=loops | not appy-opt - --pass-pipeline='appy-add-prefetch{array=1 iname=i_outer}' 2>&1 | filecheck %s --check-prefix=WRITTEN
# RUN: appy-opt %s --func plain --signature 'f64[:],f64[:]' --mvl 64 --emit=loops | not appy-opt - --pass-pipeline='appy-add-prefetch{array=0 iname=i_inner}' 2>&1 | filecheck %s --check-prefix=NOTPAR
# RUN: appy-opt %s --func gather --signature 'f64[:],i64[:],f64[:]' --mvl 64 --emit=loops | not appy-opt - --pass-pipeline='appy-add-prefetch{array=0 iname=i_outer}' 2>&1 | filecheck %s --check-prefix=NONE
# RUN: appy-opt %s --func st --signature 'f64[:],f64[:]' --emit=cpu | filecheck %s --check-prefix=CPU
import numpy as np
import appy


@appy.jit
def st(a, out):
    #pragma parallel for simd transform(prefetch(a))
    for i in range(1, a.shape[0] - 1):
        out[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0


@appy.jit
def rows(A, B):
    #pragma parallel for transform(prefetch(A))
    for i in range(1, A.shape[0] - 1):
        #pragma simd
        for j in range(1, A.shape[1] - 1):
            B[i, j] = A[i, j - 1] + A[i, j + 1] + A[i - 1, j] - A[i - 1, j + 1] + A[i + 1, j]


@appy.jit
def plain(a, out):
    #pragma parallel for simd
    for i in range(2, a.shape[0]):
        out[i] = a[i - 2] * a[i]


@appy.jit
def gather(a, idx, out):
    #pragma parallel for simd
    for i in range(a.shape[0]):
        out[i] = a[idx[i]]
# The tile of a[i-1 .. i+1] is 64 + 2 elements, at the top of the worker; one lanes
# loop loads it (element k by thread k mod 64, inside the array), then the reads use it.
# CHECK-LABEL: func.func @st
# CHECK: scf.parallel
# CHECK-NEXT: %[[A:.*]] = memref.alloca() {appy.buffer} : memref<66xf64>
# CHECK-NEXT: %[[T:.*]] = memref.cast %[[A]] : memref<66xf64> to memref<?xf64>
# CHECK: scf.parallel (%[[L:.*]]) =
# CHECK-NEXT: scf.for %[[K:.*]] = %[[L]] to %c66 step
# CHECK: arith.cmpi ult
# CHECK: %[[V:.*]] = memref.load %arg0[%{{.*}}] : memref<?xf64>
# CHECK-NEXT: memref.store %[[V]], %[[T]][%[[K]]] : memref<?xf64>
# CHECK: appy.inames = ["_appy_prefetch0"], appy.lanes, appy.tags = ["l.0"]
# CHECK: memref.load %[[T]]
# CHECK: memref.load %[[T]]
# CHECK: memref.load %[[T]]
# CHECK: appy.inames = ["i_inner"]
# CHECK-NOT: appy.transforms
# GPU: gpu.func @_appy_st_k0({{.*}}) workgroup(%[[W:.*]] : memref<66xf64, #gpu.address_space<workgroup>>) kernel
# GPU: memref.store %{{.*}}, %[[W]][%{{.*}}] : memref<66xf64, #gpu.address_space<workgroup>>
# GPU: gpu.barrier
# GPU-NOT: gpu.barrier
# GPU: memref.load %[[W]]
# Row i-1 over j .. j+1 (32 + 1) and row i over j-1 .. j+1 (32 + 2), both loaded by one
# lanes loop inside the chunk loop; row i+1, read at one offset (no reuse), is not.
# ROWS-LABEL: func.func @rows
# ROWS: memref.alloca() {appy.buffer} : memref<33xf32>
# ROWS: memref.alloca() {appy.buffer} : memref<34xf32>
# ROWS-NOT: appy.buffer
# ROWS: scf.for
# ROWS: scf.parallel
# ROWS: scf.for
# ROWS: scf.for
# ROWS: appy.inames = ["_appy_prefetch1"]
# PASS: memref.alloca() {appy.buffer} : memref<66xf64>
# PASS: scf.for %{{.*}} = %{{.*}} to %c66
# WRITTEN: error: add-prefetch: parameter 1 cannot be prefetched in this loop: the loop writes it here
# NOTPAR: error: add-prefetch: loop `i_inner` is not a parallel loop
# NONE: error: add-prefetch: no read of parameter 0 in loop `i_outer` can be shared by a group's threads
# The CPU has no shared memory: the request is dropped.
# CPU-NOT: appy.buffer
# CPU-NOT: appy.transforms
# CPU: func.func @st
