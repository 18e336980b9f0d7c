import appy


@appy.jit
def f(a):
    for i in appy.prange(a.shape[0]):
        if a[i] < 0.0:
            return i
        a[i] = 1.0
    return -1
# SIGNATURE: f64[:]
