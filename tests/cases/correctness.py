"""Programs that are correct and that an analysis once refused: each must compile
without an error or a warning and agree with NumPy."""
import numpy as np
import appy


# Red-black Gauss-Seidel: each iteration of the parallel loop writes its row at one
# colour's columns, and reads the rows above and below only at the other colour's
# (`j ≡ 1 + i + color` modulo 2), so the rows are independent.
# test: A:f64[n,n] f:f64[n,n] sweeps:int=3 | n=1,2,7,31,100
@appy.jit
def red_black_sweep(A, f, sweeps):
    N = A.shape[0]
    for t in range(sweeps):
        for color in range(2):
            #pragma parallel for
            for i in range(1, N - 1):
                for j in range(1 + (i + color) % 2, N - 1, 2):
                    A[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1] - f[i, j])


# Shifts by every count from 0 to 70: from the width on, NumPy gives 0 to the left and
# the sign (0 or -1) to the right (MLIR's shifts are undefined there; int32 `>> 40` gave
# garbage, found by the whole-program fuzzer).
# test: p:i32[n]@-1000..1000 q:i64[n]@-1000..1000 o32:i32[n,m] o64:i64[n,m] | n=1,7,31 m=71
@appy.jit
def shifts_by_any_count(p, q, o32, o64):
    #pragma parallel for
    for i in range(p.shape[0]):
        for s in range(o32.shape[1]):
            o32[i, s] = (p[i] >> s) ^ (p[i] << s)
            o64[i, s] = (q[i] >> s) ^ (q[i] << s)


# A local array swapped with an argument in a time loop and returned, for even and odd
# step counts and none: the compiled code must free the local buffer exactly when it is
# not the one returned (it was freed and returned: a double free).
# test: a:f64[n] steps:int=n-1 | n=1,2,3,8
@appy.jit
def swap_local_with_argument(a, steps):
    w = np.empty_like(a)
    #pragma parallel for
    for i in range(a.shape[0]):
        w[i] = 2.0 * a[i]
    for t in range(steps):
        a, w = w, a
    return w
