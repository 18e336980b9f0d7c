# appy-gpu-map-threads: a block reduction that runs again in a loop (here a whole-array
# count over a 3-D array: one block all-reduce per row of axis 1) is followed by a
# barrier, so the next run's writes to the reduction's shared buffer wait until every
# thread has read the previous result (compute-sanitizer's racecheck found the race); a
# reduction that runs once per kernel has none.
# RUN: appy-opt %s --func count --signature 'u8[:,:,:]' --emit=gpu | filecheck %s
# RUN: appy-opt %s --func total --signature 'f64[:]' --emit=gpu | filecheck %s --check-prefix=ONCE
import numpy as np
import appy


@appy.jit
def count(out):
    return np.sum(out == 7)


@appy.jit
def total(a):
    return np.sum(a)

# CHECK: gpu.func @_appy_count_k0(
# CHECK: scf.for
# CHECK: gpu.all_reduce add
# CHECK-NEXT: } : (i64) -> i64
# CHECK-NEXT: gpu.barrier
# CHECK: gpu.return

# ONCE: gpu.func @_appy_total_k0(
# ONCE: gpu.all_reduce add
# ONCE-NOT: gpu.barrier
# ONCE: gpu.return
