import appy


@appy.jit
def f(a, N):
    x = a
    x = 1.0
    return x

# SIGNATURE: f64[:];int
