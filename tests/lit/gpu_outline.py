# The gpu level: appy-gpu-sink-loads, appy-gpu-outline, appy-gpu-map-threads. One kernel
# per top-level parallel loop; lanes are threads, a lane reduction is a block
# all-reduce, the host launches the kernel.
# RUN: appy-opt %s --func row_sum --signature 'f64[:,:],f64[:],int,int' --emit=gpu | filecheck %s
# RUN: appy-opt %s --func row_sum --signature 'f64[:,:],f64[:],int,int' --emit=gpu | appy-opt - | filecheck %s
# appy-gpu-outline alone: the kernel holds the worker's code as it is (lanes loops and
# all), the host computes the grid and launches it.
# RUN: appy-opt %s --func row_sum --signature 'f64[:,:],f64[:],int,int' --mvl 256 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline' | filecheck %s --check-prefix=OUTLINE
# A reduction across workers: one atomic per worker into a one-element buffer, which
# the host combines with the initial value.
# RUN: appy-opt %s --func total --signature 'f64[:,:],int,int' --mvl 256 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline' | filecheck %s --check-prefix=SHARED
import appy


@appy.jit
def row_sum(a, out, M, N):
    #pragma parallel for
    for i in range(M):
        s = 0.0
        #pragma simd
        for j in range(N):
            s += a[i, j]
        out[i] = s

# CHECK: module attributes {gpu.container_module}
# CHECK: gpu.module @_appy_kernels
# CHECK: gpu.func @_appy_row_sum_k0(
# CHECK-SAME: kernel
# CHECK: gpu.block_id x
# CHECK: gpu.thread_id x
# CHECK: scf.for
# CHECK: gpu.all_reduce add
# CHECK: gpu.return
# CHECK: func.func @row_sum
# CHECK: gpu.launch_func @_appy_kernels::@_appy_row_sum_k0 blocks in

# OUTLINE: module attributes {gpu.container_module}
# OUTLINE: gpu.func @_appy_row_sum_k0(
# OUTLINE-SAME: known_block_size = array<i32: 256, 1, 1>
# OUTLINE: gpu.block_id x
# OUTLINE: gpu.thread_id x
# OUTLINE: scf.parallel
# OUTLINE: {appy.inames = ["j_inner"], appy.lanes, appy.tags = ["l.0"]}
# OUTLINE: {appy.chunks, appy.inames = ["j_outer"], appy.tags = ["for"]}
# OUTLINE-NOT: gpu.all_reduce
# OUTLINE: memref.store
# OUTLINE-NOT: scf.if
# OUTLINE: gpu.return
# OUTLINE: func.func @row_sum
# OUTLINE-NOT: scf.parallel
# OUTLINE: arith.ceildivsi
# OUTLINE: %[[N:[0-9]+]] = arith.muli
# OUTLINE: scf.if
# OUTLINE-NEXT: gpu.launch_func @_appy_kernels::@_appy_row_sum_k0 blocks in (%[[N]],

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

# SHARED: gpu.func @_appy_total_k0(
# SHARED-SAME: %[[BUF:arg[0-9]+]]: memref<1xf64>
# SHARED: memref.atomic_rmw addf %{{.*}}, %[[BUF]][%{{.*}}] {appy.worker_partial}
# SHARED-NEXT: gpu.return
# SHARED: func.func @total
# SHARED: %[[ALLOC:.*]] = memref.alloc() : memref<1xf64>
# SHARED: memref.store %{{.*}}, %[[ALLOC]]
# SHARED: gpu.launch_func
# SHARED: memref.load %[[ALLOC]]
# SHARED: arith.addf
# SHARED: memref.dealloc %[[ALLOC]]
