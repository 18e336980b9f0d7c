# appy-gpu-map-threads: the worker's code in each kernel runs on the threads of its
# block: a lane is a thread, a lane reduction a block all-reduce, thread 0 does the
# worker's stores and its update of a reduction across workers; with MVL above 256
# threads, each thread runs MVL / 256 lanes in a loop.
# RUN: appy-opt %s --func total --signature 'f64[:,:],int,int' --mvl 256 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-gpu-map-threads' | filecheck %s
# RUN: appy-opt %s --func total --signature 'f64[:,:],int,int' --mvl 1024 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-gpu-map-threads' | filecheck %s --check-prefix=WIDE
# RUN: appy-opt %s --func scale --signature 'f64[:,:],f64[:],int,int' --mvl 256 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-gpu-map-threads' | filecheck %s --check-prefix=STORE
import appy


@appy.jit
def total(a, M, N):
    s = 0.0
    #pragma parallel for shared(s)
    for i in range(M):
        t = 0.0
        #pragma simd
        for j in range(N):
            t += a[i, j]
        s += t
    return s

# CHECK: gpu.func @_appy_total_k0(
# CHECK-SAME: %[[BUF:arg[0-9]+]]: memref<1xf64>
# CHECK: %[[TID:thread_id_x]] = gpu.thread_id x
# CHECK-NOT: appy.lanes
# CHECK: scf.for {{.*}} iter_args
# CHECK: {appy.chunks, appy.inames = ["j_outer"]}
# CHECK-NEXT: %[[R:[0-9]+]] = gpu.all_reduce add
# CHECK: %[[IS0:[0-9]+]] = arith.cmpi eq, %[[TID]], %[[C0:c0[_0-9]*]]
# CHECK-NEXT: scf.if %[[IS0]] {
# CHECK-NEXT: memref.atomic_rmw addf %{{.*}}, %[[BUF]][%[[C0]]] : (f64, memref<1xf64>) -> f64
# CHECK-NOT: appy.worker_partial
# CHECK: gpu.return

# Four lanes per thread: a loop of 4 over lanes tid, tid + 256, ...
# WIDE: gpu.func @_appy_total_k0(
# WIDE-SAME: known_block_size = array<i32: 256, 1, 1>
# WIDE: %[[TID:thread_id_x]] = gpu.thread_id x
# WIDE: scf.for %{{.*}} = %{{.*}} to %[[C4:c4[_0-9]*]] step
# WIDE: arith.muli %{{.*}}, %[[C256:c256[_0-9]*]]
# WIDE-NEXT: arith.addi %[[TID]],
# WIDE: gpu.all_reduce add

@appy.jit
def scale(a, out, M, N):
    #pragma parallel for
    for i in range(M):
        out[i] = a[i, 0]
        a[i, :N] = a[i, :N] / out[i]

# The worker's store runs on thread 0 between barriers; the lanes loop reads the
# stored value.
# STORE: gpu.func @_appy_scale_k0(
# STORE: %[[TID:thread_id_x]] = gpu.thread_id x
# STORE: %[[IS0:[0-9]+]] = arith.cmpi eq, %[[TID]],
# STORE-NEXT: gpu.barrier
# STORE-NEXT: scf.if %[[IS0]] {
# STORE-NEXT: memref.store
# STORE: gpu.barrier
# STORE-NOT: appy.lanes
# STORE: gpu.return
