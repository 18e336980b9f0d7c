import appy


@appy.jit
def f(a, N):
    #pragma simd
    for i in range(N):
        #pragma parallel for
        for j in range(N):
            a[j] = 0.0
# SIGNATURE: f64[:];int
