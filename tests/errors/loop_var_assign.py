import appy


@appy.jit
def f(a, N):
    #pragma parallel for
    for i in range(N):
        i = 3
        a[i] = 0.0
# SIGNATURE: f64[:];int
