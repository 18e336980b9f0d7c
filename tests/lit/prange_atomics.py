# `prange` makes updates of elements several iterations share atomic
# (`sema/prange.rs`): `s[0] = s[0] + x` and `s[0] = x + s[0]` as `+=`; `s[0] - x` as
# `-=` (an atomic add of `-x`); builtin `max` as `maxnumf` (a NaN `x` is skipped, as in
# Python), `np.maximum` as `maximumf`; `h[idx[i]]` and `s[i // 2]` too, while `s[i]`
# (a different element per iteration) stays a plain store. On the GPU they are atomics
# in the kernel; on the CPU, in the OpenMP region (privatised when an array takes one
# kind of update).
# RUN: appy-opt %s --func forms --signature 'f64[:],f64[:],int' --emit=appy | filecheck %s
# RUN: appy-opt %s --func shared_indices --signature 'f64[:],f64[:],i64[:],i64[:],int' --emit=appy | filecheck %s --check-prefix=IDX
# RUN: appy-opt %s --func forms --signature 'f32[:],f32[:],int' --emit=gpu | filecheck %s --check-prefix=GPU
# RUN: appy-opt %s --func forms --signature 'f64[:],f64[:],int' --emit=cpu | filecheck %s --check-prefix=CPU
import numpy as np
import appy


@appy.jit
def forms(a, s, N):
    for i in appy.prange(N):
        s[0] = s[0] + a[i]
        s[1] = a[i] + s[1]
        s[2] = s[2] - a[i]
        s[3] = max(s[3], a[i])
        s[4] = np.minimum(a[i], s[4])


@appy.jit
def shared_indices(a, s, idx, h, N):
    for i in appy.prange(N):
        h[idx[i]] += 1
        s[i // 2] += a[i]
        a[i] = a[i] * 2.0

# CHECK-LABEL: func.func @forms
# CHECK: scf.parallel
# CHECK: memref.atomic_rmw addf
# CHECK: memref.atomic_rmw addf
# CHECK: arith.negf
# CHECK-NEXT: memref.atomic_rmw addf
# CHECK: memref.atomic_rmw maxnumf
# CHECK: memref.atomic_rmw minimumf
# CHECK-NOT: memref.store
# CHECK: appy.parallel, appy.prange

# IDX-LABEL: func.func @shared_indices
# IDX: memref.atomic_rmw addi
# IDX: memref.atomic_rmw addf
# IDX: memref.store
# IDX: appy.parallel, appy.prange

# GPU: gpu.func
# GPU: memref.atomic_rmw addf
# GPU: memref.atomic_rmw maxnumf
# GPU: memref.atomic_rmw minimumf
# GPU: gpu.launch_func

# CPU: omp.parallel
# CPU: omp.wsloop
# CPU: memref.atomic_rmw addf
# CPU: memref.atomic_rmw maxnumf
# CPU: omp.terminator
