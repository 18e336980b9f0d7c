import appy


@appy.jit
def f(a, k):
    a[2 ** k] = 1.0
# SIGNATURE: f64[:];int
