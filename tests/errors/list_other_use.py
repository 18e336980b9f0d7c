import appy


@appy.jit
def f(a):
    w = [0.25, 0.5, 0.25]
    for x in w:
        a[0] += x
# SIGNATURE: f64[:]
