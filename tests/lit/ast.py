# --emit=ast prints the parsed tree with line:col.
# RUN: appy-opt %s --emit=ast | filecheck %s
import appy


@appy.jit
def f(a, N):
    #pragma parallel for
    for i in range(N):
        a[i] = 2.0 * a[i]

# CHECK: f
# CHECK: For
# CHECK: parallel
