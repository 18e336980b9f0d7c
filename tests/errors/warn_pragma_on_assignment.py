import appy


@appy.jit
def f(a, N):
    #pragma parallel for
    a[0] = 1.0
# SIGNATURE: f64[:];int
