# The step schedule (seed 003's FlatAPT) of the gpu level's host function: its kernels,
# library calls, host loops and the host's own array operations as a data-flow graph
# (dependences through the arrays each node reads and writes, and through the values
# it computes), in steps of nodes that depend on nothing in their own step. The two
# kernels that read `a` and write `b` and `c` are independent; the time loop reads
# both; the dot product's buffer is allocated, filled, summed into and read back in
# order.
# RUN: appy-opt %s --func f --signature 'f64[:],f64[:],f64[:],f64[:],int' --emit=schedule | filecheck %s
import appy


@appy.jit
def f(a, b, c, d, n):
    #pragma parallel for
    for i in range(n):
        b[i] = a[i] * 2.0
    #pragma parallel for
    for i in range(n):
        c[i] = a[i] + 1.0
    for t in range(3):
        #pragma parallel for
        for i in range(n):
            d[i] = b[i] + c[i] * t
    e = a @ d
    return e
# CHECK: // step schedule of @f: {{[0-9]+}} nodes in 5 steps, at most 3 at once
# CHECK-NEXT: step 0:
# CHECK-NEXT: kernel _appy_f_k0 (reads: a; writes: b)
# CHECK-NEXT: kernel _appy_f_k1 (reads: a; writes: c)
# CHECK-NEXT: host memref.alloc (reads: ; writes: alloc0)
# CHECK-NEXT: step 1:
# CHECK-NEXT: loop over _appy_f_k2 (reads: b, c; writes: d)
# CHECK-NEXT: host memref.store (reads: ; writes: alloc0)
# CHECK-NEXT: step 2:
# CHECK-NEXT: kernel _appy_f_k3 (reads: a, alloc0, d; writes: alloc0)
# CHECK-NEXT: step 3:
# CHECK-NEXT: host memref.load (reads: alloc0; writes: )
# CHECK-NEXT: step 4:
# CHECK-NEXT: host memref.dealloc (reads: ; writes: alloc0)


# A kernel that uses a reduction's result reads its buffer (the host never reads it back),
# so it comes after the kernel that sums into the buffer, and the buffer is freed after it.
# RUN: appy-opt %s --func norm --signature 'f64[:],f64[:],int' --emit=schedule | filecheck %s --check-prefix=FLOW
@appy.jit
def norm(a, b, n):
    s = 0.0
    #pragma parallel for shared(s)
    for i in range(n):
        s += a[i]
    #pragma parallel for
    for i in range(n):
        b[i] = a[i] / s
# FLOW: step 2:
# FLOW-NEXT: kernel _appy_norm_k0 (reads: a, alloc0; writes: alloc0)
# FLOW-NEXT: step 3:
# FLOW-NEXT: kernel _appy_norm_k1 (reads: a, alloc0; writes: b)
# FLOW-NEXT: step 4:
# FLOW-NEXT: host memref.dealloc (reads: ; writes: alloc0)
