# appy-gpu-one-strip (part of seed 002's code generation, `appy-opt --vector-code`):
# softmax's three statements each walk row i in strips of the vector length; the kernel
# is versioned on rows of one strip (every strip loop's bound equal to the vector
# length), where the strip loops run once and are inlined, the lanes' bound checks
# (true for every one of the 256 threads, known_block_size) are gone, and
# appy-gpu-redundant-loads keeps the first statement's load of the row: the sum and the
# output read it from registers. The block reductions between them do not end what is
# known, as nothing before them writes memory other threads could read. Rows of
# another length run the original code (the else branch). At the default vector
# length (1024: four lanes a thread) the row is one 16-byte vector load.
# RUN: appy-opt %s --func softmax --signature 'f32[:,:],f32[:,:]' --mvl 512 --emit=loops | appy-opt - --pass-pipeline='appy-gpu-sink-loads,appy-gpu-outline,appy-gpu-map-threads{contiguous=1 mark=1},appy-gpu-one-strip' | filecheck %s --check-prefix=VERSION
# RUN: appy-opt %s --func softmax --signature 'f32[:,:],f32[:,:]' --mvl 512 --vector-code --emit=gpu | filecheck %s --check-prefix=ROW
# RUN: appy-opt %s --func softmax --signature 'f32[:,:],f32[:,:]' --mvl 1024 --vector-code --emit=gpu | filecheck %s --check-prefix=VEC
# RUN: appy-opt %s --func rowsum --signature 'f32[:,:],f32[:]' --mvl 512 --vector-code --emit=gpu | filecheck %s --check-prefix=ONE
import numpy as np
import appy


@appy.jit
def softmax(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        m = np.max(x[i, :])
        s = np.sum(np.exp(x[i, :] - m))
        out[i, :] = np.exp(x[i, :] - m) / s


# One statement: nothing to keep, the kernel is left as it is.
@appy.jit
def rowsum(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        out[i] = np.sum(x[i, :])

# VERSION-LABEL: gpu.func @_appy_softmax_k0
# VERSION: arith.cmpi eq, %{{.*}}, %[[S:c512[_0-9]*]] : index
# VERSION: scf.if
# VERSION-NOT: scf.for {{.*}} step %{{.*}}iter_args
# VERSION: scf.for {{.*}} to %c2{{.*}} step
# VERSION-NOT: scf.if
# VERSION: memref.load %arg{{[0-9]+}}[
# VERSION: gpu.all_reduce  maximumf
# VERSION: } else {
# VERSION: {appy.chunks

# ROW-LABEL: gpu.func @_appy_softmax_k0
# ROW: scf.if
# ROW: %[[A:[0-9]+]] = memref.load %arg3[%{{[0-9]+}}, %{{[0-9]+}}] : memref<?x?xf32>
# ROW-NEXT: %[[B:[0-9]+]] = memref.load %arg3[
# ROW: gpu.all_reduce  maximumf
# ROW-NOT: memref.load %arg3
# ROW: arith.subf %[[A]],
# ROW-NOT: memref.load %arg3
# ROW: gpu.all_reduce  add
# ROW-NOT: memref.load %arg3
# ROW: arith.subf %[[A]],
# ROW: memref.store
# ROW: } else {
# ROW: {appy.chunks

# VEC-LABEL: gpu.func @_appy_softmax_k0
# VEC: arith.cmpi eq, %arg2, %c1024 : index
# VEC: %[[V:[0-9]+]] = vector.load %arg3[
# VEC: gpu.all_reduce  maximumf
# VEC-NOT: vector.load %arg3
# VEC: gpu.all_reduce  add
# VEC-NOT: vector.load %arg3
# VEC: vector.store

# ONE-LABEL: gpu.func @_appy_rowsum_k0
# ONE-NOT: arith.cmpi eq, %arg{{[0-9]+}}, %c512
# ONE: {appy.chunks
