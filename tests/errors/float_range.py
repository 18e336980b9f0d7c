import appy


@appy.jit
def f(a, x):
    for i in range(x):
        a[i] = 0.0
# SIGNATURE: f64[:];float
