import appy


@appy.jit
def f(a, N):
    if N > 0:
        return a[0]
    a[0] = 1.0
# SIGNATURE: f64[:];int
