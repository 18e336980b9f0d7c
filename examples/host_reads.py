"""Array elements read between kernels: on the GPU, a value read only to be passed to a
kernel is read by the kernel itself (the host does not wait for the device); a value read
before a loop or a statement that overwrites it keeps the old value."""
import numpy as np
import appy


@appy.jit
def time_loop(a, f, T):
    # Each step broadcasts f[t] into row 0 and accumulates it into row 1.
    N = a.shape[1]
    for t in range(T):
        a[0, :N] = f[t]
        a[1, :N] += a[0, :N] * f[t + 1]


@appy.jit
def before_loop(a, f, T):
    # x is f[0] before the loop, although the loop keeps changing f.
    N = a.shape[1]
    x = f[0]
    for t in range(T):
        a[0, :N] += x
        f[:N] += 1.0


@appy.jit
def read_then_write(a, T):
    # a[0, 0] is read before each statement writes a (NumPy evaluates the right side
    # first): on the GPU, no worker may read it after another one wrote it.
    M = a.shape[0]
    N = a.shape[1]
    for t in range(T):
        a[:M, :N] = a[:M, :N] * 0.5 + a[0, 0]
