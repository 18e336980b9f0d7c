import appy


@appy.jit
def f(a, b, N):
    x = a[0] @ b[0]
# SIGNATURE: f64[:];f64[:];int
