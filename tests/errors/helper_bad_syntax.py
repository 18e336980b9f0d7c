import appy


def lookup(x):
    table = {1: 2.0}
    return x


@appy.jit
def f(a):
    #pragma parallel for
    for i in range(a.shape[0]):
        a[i] = lookup(a[i])
# SIGNATURE: f64[:]
