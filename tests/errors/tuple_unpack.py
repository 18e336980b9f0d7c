import appy


@appy.jit
def f(a, N):
    x, y = a.shape
# SIGNATURE: f64[:];int
