import appy


@appy.jit
def f(a, N):
    #pragma parallel for
    for i in range(N):
        t = a[i]
    return t

# SIGNATURE: f64[:];int
