import appy


@appy.jit
def f(a, N):
    x = 0.0
    #pragma parallel for
    for i in range(N):
        #pragma simd
        for j in range(N):
            x[0] += a[j]
# SIGNATURE: f64[:];int
