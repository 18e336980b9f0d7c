import appy


@appy.jit
def f(a):
    w = [0.25, 0.5, 0.25]
    a[0] = w[3]
# SIGNATURE: f64[:]
