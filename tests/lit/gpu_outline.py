# appy-gpu-outline: one kernel per top-level parallel loop; lanes are threads, a lane
# reduction is a block all-reduce, the host launches the kernel.
# RUN: appy-opt %s --signature 'f64[:,:],f64[:],int,int' --emit=gpu | filecheck %s
# RUN: appy-opt %s --signature 'f64[:,:],f64[:],int,int' --emit=gpu | appy-opt - | filecheck %s
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
