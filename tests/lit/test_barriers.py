# appy-test-barriers: where appy-gpu-map-threads puts barriers, on its own. A lanes loop
# that writes memory other threads read gets a barrier on each side; one whose threads
# only touch their own elements (appy.nosync) gets none; a worker's store (done by
# thread 0) gets barriers on both sides.
# RUN: appy-opt %s --func shift --signature 'f64[:,:],f64[:,:],f64[:],int,int' --mvl 256 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-test-barriers' | filecheck %s
# RUN: appy-opt %s --func own --signature 'f64[:,:],f64[:,:],int,int' --mvl 256 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-test-barriers' | filecheck %s --check-prefix=NOSYNC
# The mapping places gpu.barrier ops exactly there.
# RUN: appy-opt %s --func shift --signature 'f64[:,:],f64[:,:],f64[:],int,int' --mvl 256 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-gpu-map-threads' | filecheck %s --check-prefix=MAPPED
import appy


@appy.jit
def shift(a, b, c, M, N):
    #pragma parallel for
    for i in range(M):
        a[i, :N] = a[i, :N] * 2.0
        b[i, 1:N] = a[i, :N - 1]
        c[i] = b[i, 1]

# CHECK: gpu.func @_appy_shift_k0(
# CHECK: {appy.barriers = "both", appy.inames = ["_appy_t0_d0_inner"], appy.lanes, appy.tags = ["l.0"]}
# CHECK-NEXT: {appy.chunks, appy.inames = ["_appy_t0_d0_outer"], appy.tags = ["for"]}
# CHECK: {appy.barriers = "both", appy.inames = ["_appy_t1_d0_inner"], appy.lanes, appy.tags = ["l.0"]}
# CHECK-NEXT: {appy.chunks, appy.inames = ["_appy_t1_d0_outer"], appy.tags = ["for"]}
# CHECK: memref.store {{.*}} {appy.barriers = "both"}
# CHECK: gpu.return

# MAPPED: gpu.func @_appy_shift_k0(
# MAPPED: scf.for
# MAPPED: gpu.barrier
# MAPPED: memref.store %{{.*}}, %arg3
# MAPPED: gpu.barrier
# MAPPED-NEXT: } {appy.chunks, appy.inames = ["_appy_t0_d0_outer"]}
# MAPPED: scf.for
# MAPPED: gpu.barrier
# MAPPED: memref.store %{{.*}}, %arg5
# MAPPED: gpu.barrier
# MAPPED-NEXT: } {appy.chunks, appy.inames = ["_appy_t1_d0_outer"]}
# MAPPED: gpu.barrier
# MAPPED-NEXT: scf.if
# MAPPED-NEXT: memref.store %{{.*}}, %arg7
# MAPPED-NEXT: }
# MAPPED-NEXT: gpu.barrier
# MAPPED-NEXT: gpu.return

@appy.jit
def own(a, b, M, N):
    #pragma parallel for
    for i in range(M):
        a[i, :N] = a[i, :N] * 2.0
        b[i, :N] = a[i, :N] + 1.0

# NOSYNC: gpu.func @_appy_own_k0(
# NOSYNC-NOT: appy.barriers
# NOSYNC: {appy.inames = ["_appy_t{{[0-9]}}_d0_inner"], appy.lanes, appy.nosync, appy.tags = ["l.0"]}
# NOSYNC-NOT: appy.barriers
# NOSYNC: gpu.return
