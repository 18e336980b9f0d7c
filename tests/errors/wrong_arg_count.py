import appy


@appy.jit
def f(a, N):
    a[0] = 1.0
# SIGNATURE: f64[:]
