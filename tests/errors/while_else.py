import appy


@appy.jit
def f(a, N):
    i = 0
    while i < N:
        i += 1
    else:
        a[0] = 1.0
# SIGNATURE: f64[:];int
