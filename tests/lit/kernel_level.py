# The kernel level (appy-kernel-form, Loopy's model written onto the strip-mined loops):
# each kernel is named and lists its domain parameters, each loop has inames, tags and a
# domain (an isl set over the parameters and the enclosing inames; a bound read from
# memory is a parameter `_appy_v<k>`), each statement an id, the inames it is within,
# its dependences and those needing no barrier, and each temporary an address space.
# The GPU lowers from this level to the same code as before (the golden digests).
# RUN: appy-opt %s --func stencil --signature 'f64[:],f64[:],int' --mvl 64 --emit=kernel | filecheck %s --check-prefix=STENCIL
# RUN: appy-opt %s --func spmv --signature 'i64[:],i64[:],f64[:],f64[:],f64[:],int' --mvl 64 --emit=kernel | filecheck %s --check-prefix=SPMV
# RUN: appy-opt %s --func tile --signature 'f64[:],f64[:]' --mvl 64 --emit=kernel | filecheck %s --check-prefix=TILE
# RUN: appy-opt %s --func twice --signature 'f64[:],f64[:],f64[:]' --mvl 64 --emit=kernel | filecheck %s --check-prefix=TWICE
# RUN: appy-opt %s --func twice --signature 'f64[:],f64[:],f64[:]' --mvl 64 --emit=kernel | appy-opt - --emit=gpu | filecheck %s --check-prefix=GPU
# RUN: appy-opt %s --func row_then_lanes --signature 'f64[:,:],f64[:],f64[:,:]' --mvl 64 --emit=kernel | filecheck %s --check-prefix=ROWSYNC
# RUN: appy-opt %s --func rows --signature 'f64[:,:],f64[:,:]' --emit=kernel | filecheck %s --check-prefix=GLOBAL
# RUN: appy-opt %s --func twice --signature 'f64[:],f64[:],f64[:]' --emit=cpu | filecheck %s --check-prefix=CPU
import numpy as np
import appy


@appy.jit
def stencil(a, b, n):
    #pragma parallel for
    for i in range(1, n - 1):
        b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0


@appy.jit
def spmv(ptr, idx, val, x, y, n):
    #pragma parallel for
    for i in range(n):
        s = 0.0
        for k in range(ptr[i], ptr[i + 1]):
            s += val[k] * x[idx[k]]
        y[i] = s


@appy.jit
def total(a, n):
    s = 0.0
    #pragma parallel for shared(s)
    for i in range(n):
        s += a[i] * a[i]
    return s


@appy.jit
def tile(inp, out):
    #pragma parallel for
    for i in range(1, inp.shape[0] - 1, 64):
        buf = appy.buffer(64 + 2)
        buf[:] = inp[i - 1:i + 65]
        out[i:i + 64] = (buf[:-2] + buf[1:-1] + buf[2:]) / 3.0


@appy.jit
def twice(a, b, c):
    #pragma parallel for
    for i in range(a.shape[0]):
        b[i] = 2.0 * a[i]
        c[i] = b[i] + a[i]


@appy.jit
def row_then_lanes(a, b, c):
    #pragma parallel for
    for i in range(a.shape[0]):
        b[i] = a[i, 0]
        #pragma simd
        for j in range(a.shape[1]):
            c[i, j] = a[i, j] * b[i]


@appy.jit
def rows(a, b):
    t = a * 2.0
    #pragma parallel for
    for i in range(a.shape[0]):
        b[i, :] = t[i, :] + 1.0


# STENCIL: memref.store {{.*}} {appy.id = "s0", appy.within = ["i_outer", "i_inner"]}
# STENCIL: appy.domain = "{ [i_inner] : 0 <= i_inner < 64 }", appy.inames = ["i_inner"], appy.lanes, appy.tags = ["l.0"]
# STENCIL: appy.domain = "[n] -> { [i_outer] : 0 <= i_outer < floor((n + 61)/64) }", appy.inames = ["i_outer"], appy.kernel = "_appy_stencil_k0", appy.parallel, appy.params = ["n"], appy.tags = ["g.0"]

# SPMV: memref.alloca() {appy.space = "private"}
# SPMV: memref.store {{.*}} {appy.dep = ["s1"], appy.id = "s2", appy.nosync_with = ["s1@any"], appy.within = ["i", "k_outer", "k_inner"]}
# SPMV: appy.domain = "[_appy_v0, _appy_v1] -> { [k_outer] : _appy_v0 <= k_outer < _appy_v1 and (-_appy_v0 + k_outer) mod 64 = 0 }"
# SPMV: memref.store {{.*}} {appy.dep = ["s0", "s3"], appy.id = "s4", appy.nosync_with = ["s0@any", "s3@any"], appy.within = ["i"]}
# SPMV: appy.domain = "[n] -> { [i] : 0 <= i < n }", appy.inames = ["i"], appy.kernel = "_appy_spmv_k0", appy.parallel, appy.params = ["_appy_v0", "_appy_v1", "n"]

# The buffer is shared memory; the read at other offsets depends on the cooperative
# load and needs a barrier among the group's threads, none between groups (each group
# has its own buffer): nosync_with scope `global` only.
# TILE: memref.alloca() {appy.buffer, appy.space = "local"} : memref<66xf64>
# TILE: memref.store {{.*}} {appy.id = "s0", appy.within = ["i", "_appy_t0_d0_outer", "_appy_t0_d0_inner"]}
# TILE: memref.store {{.*}} {appy.dep = ["s0"], appy.id = "s1", appy.nosync_with = ["s0@global"], appy.within = ["i", "_appy_t1_d0_outer", "_appy_t1_d0_inner"]}

# A group writes b[i], then its lanes read it: no barrier between groups.
# ROWSYNC: memref.store {{.*}} {appy.id = "s0", appy.within = ["i"]}
# ROWSYNC: memref.store {{.*}} {appy.dep = ["s0"], appy.id = "s1", appy.nosync_with = ["s0@global"], appy.within = ["i", "j_outer", "j_inner"]}
# TILE: appy.domain = "[inp_dim0] -> { [i] : 1 <= i < inp_dim0 - 1 and (i - 1) mod 64 = 0 }"

# Each work item reads back only the element it wrote: no barrier.
# TWICE: func.func @twice({{.*}}) attributes {appy.arg_names = ["a", "b", "c"]
# TWICE: memref.store {{.*}} {appy.id = "s0", appy.within = ["i_outer", "i_inner"]}
# TWICE: memref.store {{.*}} {appy.dep = ["s0"], appy.id = "s1", appy.nosync_with = ["s0@any"], appy.within = ["i_outer", "i_inner"]}
# TWICE: appy.domain = "[a_dim0] -> { [i_outer] : 0 <= i_outer < floor((a_dim0 + 63)/64) }"

# GPU: gpu.func @_appy_twice_k0
# GPU-NOT: appy.id
# GPU-NOT: appy.domain

# GLOBAL: memref.alloc({{.*}}) {appy.space = "global"}
# GLOBAL: appy.kernel = "_appy_rows_k

# CPU: omp.wsloop
# CPU-NOT: appy.id
