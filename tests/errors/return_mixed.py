import appy


@appy.jit
def f(a, N):
    if N > 2:
        return a[0], a[1]
    return a[0]
# SIGNATURE: f64[:];int
