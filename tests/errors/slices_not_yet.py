import appy


@appy.jit
def f(a, N):
    a[:N] = 0.0
# SIGNATURE: f64[:];int
