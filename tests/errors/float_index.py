import appy


@appy.jit
def f(a, x):
    a[x] = 0.0
# SIGNATURE: f64[:];float
