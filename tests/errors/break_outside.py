import appy


@appy.jit
def f(a, N):
    if N > 2:
        break
    a[0] = 1.0
# SIGNATURE: f64[:];int
