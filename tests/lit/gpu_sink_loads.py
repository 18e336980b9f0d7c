# appy-gpu-sink-loads: an array element read on the host only to be passed to a kernel is
# read by the kernel instead (the host would otherwise wait for the device at every
# time step); a read from before a loop whose kernels write memory stays on the host,
# and so does a read of an array the kernel writes.
# RUN: appy-opt %s --func time_loop --signature 'f64[:,:],f64[:],int' --mvl 256 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads' | filecheck %s --check-prefix=SINK
# RUN: appy-opt %s --func time_loop --signature 'f64[:,:],f64[:],int' --emit=gpu | filecheck %s
# RUN: appy-opt %s --func time_loop --signature 'f64[:,:],f64[:],int' --emit=gpu | appy-opt - | filecheck %s
# RUN: appy-opt %s --func before_loop --signature 'f64[:,:],f64[:],int' --emit=gpu | filecheck %s --check-prefix=KEEP
# RUN: appy-opt %s --func written --signature 'f64[:,:],int' --mvl 256 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads' | filecheck %s --check-prefix=WRITTEN
import appy


@appy.jit
def time_loop(a, f, T):
    N = a.shape[1]
    for t in range(T):
        a[0, :N] = f[t]
        a[1, :N] += a[0, :N]

# The load of f[t] is copied to the start of the first nest, marked, and used there.
# SINK-LABEL: func.func @time_loop
# SINK: scf.for
# SINK: %[[HOST:[0-9]+]] = memref.load %arg1[
# SINK: scf.parallel
# SINK-NEXT: %[[COPY:[0-9]+]] = memref.load %arg1[{{.*}}] {appy.sunk} : memref<?xf64>
# SINK-NOT: %[[HOST]]
# SINK: memref.store %[[COPY]], %arg0
# SINK: appy.parallel
# The second nest reads a[0, :N] only: nothing to sink.
# SINK: scf.parallel
# SINK-NOT: appy.sunk
# SINK: appy.parallel

# CHECK: gpu.func @_appy_time_loop_k0(
# CHECK: memref.load %{{.*}}[%{{.*}}] : memref<?xf64>
# CHECK: func.func @time_loop
# CHECK: scf.for
# CHECK-NOT: memref.load %arg1
# CHECK: gpu.launch_func @_appy_kernels::@_appy_time_loop_k0 {{.*}}%arg1 : memref<?xf64>

@appy.jit
def before_loop(a, f, T):
    N = a.shape[1]
    x = f[0]
    for t in range(T):
        a[0, :N] = x
        f[:N] += 1.0

# The value of f[0] before the loop is read once, on the host.
# KEEP: func.func @before_loop
# KEEP: memref.load %arg1
# KEEP: scf.for
# KEEP: gpu.launch_func @_appy_kernels::@_appy_before_loop_k0 {{.*}} : f64

@appy.jit
def written(a, T):
    M = a.shape[0]
    N = a.shape[1]
    for t in range(T):
        a[:M, :N] = a[:M, :N] * 0.5 + a[0, 0]

# a[0, 0] is read before the statement writes a (NumPy evaluates the right side first);
# in the kernel, one worker could read it after another one wrote it.
# WRITTEN-LABEL: func.func @written
# WRITTEN: memref.load %arg0[
# WRITTEN-NOT: appy.sunk
# WRITTEN: appy.parallel
