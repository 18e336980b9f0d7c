import appy


@appy.jit
def f(a, N):
    #pragma parallel for
    for i in range(N):
        a[i] = b[i]
# SIGNATURE: f64[:];int
