import appy


@appy.jit
def f(a, k):
    x = 2 ** k
    a[0] = x
# SIGNATURE: f64[:];int
