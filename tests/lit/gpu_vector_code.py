# Seed 002's code generation on the GPU (`appy-opt --vector-code`, APPY_GPU_VECTOR=1):
# appy-gpu-map-threads{contiguous=1 mark=1} gives each thread consecutive lanes (at MVL
# 1024 and 256 threads, lanes 4*tid .. 4*tid+3) in a marked loop;
# appy-gpu-unroll-and-jam unrolls that loop and jams the sequential `k` loop inside it
# (one k loop, four accumulators); appy-gpu-vector-loads makes the four loads of
# B[k, j..j+3] one 16-byte vector load and the four stores of C one vector store, in a
# version of the kernel that runs when the arrays are aligned for it (the original code
# otherwise).
# RUN: appy-opt %s --func mm --signature 'f32[:,:],f32[:,:],f32[:,:]' --mvl 1024 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-gpu-map-threads{contiguous=1 mark=1}' | filecheck %s --check-prefix=MARK
# RUN: appy-opt %s --func mm --signature 'f32[:,:],f32[:,:],f32[:,:]' --mvl 1024 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-gpu-map-threads{contiguous=1 mark=1},appy-gpu-unroll-and-jam' | filecheck %s --check-prefix=JAM
# RUN: appy-opt %s --func mm --signature 'f32[:,:],f32[:,:],f32[:,:]' --mvl 1024 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-gpu-map-threads{contiguous=1 mark=1},appy-gpu-unroll-and-jam{max-regs=8}' | filecheck %s --check-prefix=BUDGET
# RUN: appy-opt %s --func mm --signature 'f32[:,:],f32[:,:],f32[:,:]' --mvl 1024 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-gpu-map-threads{contiguous=1 mark=1},appy-gpu-unroll-and-jam,appy-gpu-redundant-loads' | filecheck %s --check-prefix=RLE
# RUN: appy-opt %s --func mm --signature 'f32[:,:],f32[:,:],f32[:,:]' --mvl 1024 --vector-code --emit=gpu | filecheck %s --check-prefix=VEC
# RUN: appy-opt %s --func mv --signature 'f64[:,:],f64[:],f64[:]' --mvl 1024 --vector-code --emit=gpu | filecheck %s --check-prefix=MV
# RUN: appy-opt %s --func mm --signature 'f32[:,:],f32[:,:],f32[:,:]' --mvl 1024 --vector-code --emit=ptx | filecheck %s --check-prefix=PTX
# RUN: appy-opt %s --func mm --signature 'f32[:,:],f32[:,:],f32[:,:]' --mvl 1024 --vector-code --emit=ptx | filecheck %s --check-prefix=PTXST
import appy


@appy.jit
def mm(A, B, C):
    #pragma parallel for
    for i in range(A.shape[0]):
        #pragma simd
        for j in range(B.shape[1]):
            acc = 0.0
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


@appy.jit
def mv(A, x, y):
    #pragma parallel for
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] = s

# MARK: %[[TID:.*]] = gpu.thread_id x
# MARK: %[[C4:c4.*]] = arith.constant 4 : index
# MARK: scf.for %[[K:.*]] = %{{.*}} to %[[C4]] step
# MARK-NEXT: %[[FIRST:.*]] = arith.muli %[[TID]], %[[C4]]
# MARK-NEXT: arith.addi %[[FIRST]], %[[K]]
# MARK: } {appy.thread_lanes}

# Where all four lanes are in range (the bound checks of the lanes, and-ed): one k loop
# for the four lanes, A[i, k] loaded per lane (appy-gpu-redundant-loads keeps one),
# B[k, j..j+3] next to each other; otherwise the loop as it was.
# JAM-NOT: appy.thread_lanes
# JAM: arith.andi
# JAM: scf.if %{{.*}} {
# JAM: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
# JAM: memref.load %{{.*}}[%{{.*}}, %[[X:.*]]] : memref<?x?xf32>
# JAM-NEXT: memref.load %{{.*}}[%{{.*}}, %[[X]]] : memref<?x?xf32>
# JAM-NEXT: memref.load %{{.*}}[%{{.*}}, %[[X]]] : memref<?x?xf32>
# JAM-NEXT: memref.load %{{.*}}[%{{.*}}, %[[X]]] : memref<?x?xf32>
# JAM-NEXT: memref.load %{{.*}}[%[[X]], %{{.*}}] : memref<?x?xf32>
# JAM-NEXT: memref.load %{{.*}}[%[[X]], %{{.*}}] : memref<?x?xf32>
# JAM-NEXT: memref.load %{{.*}}[%[[X]], %{{.*}}] : memref<?x?xf32>
# JAM-NEXT: memref.load %{{.*}}[%[[X]], %{{.*}}] : memref<?x?xf32>
# JAM-NOT: scf.for
# JAM: } else {
# JAM: scf.for %{{.*}} = %{{.*}} to %c4

# appy-gpu-redundant-loads: one load of A[i, k] per k for the four lanes (no write
# between them); the accumulators' slots are private and do not count as writes.
# RLE: scf.if %{{.*}} {
# RLE: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
# RLE: memref.load %arg5[%{{.*}}, %[[X:.*]]] : memref<?x?xf32>
# RLE-NEXT: memref.load %arg6[%[[X]], %{{.*}}] : memref<?x?xf32>
# RLE-NEXT: memref.load %arg6
# RLE-NEXT: memref.load %arg6
# RLE-NEXT: memref.load %arg6
# RLE-NOT: memref.load %arg5
# RLE: } else {

# Over the register budget: unrolled, not jammed: four k loops one after another.
# BUDGET-NOT: appy.thread_lanes
# BUDGET: scf.if
# BUDGET: scf.for %[[K0:.*]] = %arg0 to %arg4
# BUDGET: scf.for %{{.*}} = %arg0 to %arg4
# BUDGET: scf.for %{{.*}} = %arg0 to %arg4
# BUDGET: scf.for %{{.*}} = %arg0 to %arg4
# BUDGET: } else {

# The kernel checks that B and C are aligned for 16-byte accesses and that the loop's
# start is a multiple of 4; then one vector load of B per k and one vector store of C.
# VEC: memref.extract_aligned_pointer_as_index %arg6
# VEC: arith.remui
# VEC: memref.extract_aligned_pointer_as_index %arg7
# VEC: arith.remsi %arg0, %c4
# VEC: scf.if
# VEC: scf.for
# VEC: memref.load %arg5
# VEC-NEXT: vector.load %arg6[%{{.*}}] {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
# VEC-NEXT: vector.extract %{{.*}}[0]
# VEC-NEXT: vector.extract %{{.*}}[1]
# VEC-NEXT: vector.extract %{{.*}}[2]
# VEC-NEXT: vector.extract %{{.*}}[3]
# VEC-NOT: memref.load %arg6
# VEC: vector.from_elements
# VEC-NEXT: vector.store %{{.*}}, %arg7[%{{.*}}] {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
# VEC: } else {
# VEC-NOT: vector.load
# VEC: gpu.return

# The matrix-vector product: a row's and x's elements two at a time (float64).
# MV: scf.if
# MV: vector.load %arg3[{{.*}}] {alignment = 16 : i64} : memref<?x?xf64>, vector<2xf64>
# MV: vector.load %arg3[{{.*}}] {alignment = 16 : i64} : memref<?x?xf64>, vector<2xf64>
# MV: vector.load %arg4[{{.*}}] {alignment = 16 : i64} : memref<?xf64>, vector<2xf64>
# MV: vector.load %arg4[{{.*}}] {alignment = 16 : i64} : memref<?xf64>, vector<2xf64>
# MV: } else {

# PTX: ld.global.v4.{{[bf]}}32
# PTXST: st.global.v4.{{[bf]}}32
