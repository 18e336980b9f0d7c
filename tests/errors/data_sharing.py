import appy


@appy.jit
def f(a, N):
    s = 0.0
    #pragma parallel for
    for i in range(N):
        s += a[i]
    return s

# SIGNATURE: f64[:];int
