import appy


# SIGNATURE: f64[:];int
@appy.jit
def f(a, k):
    #pragma parallel for
    for i in range(0, a.shape[0], k):
        buf = appy.buffer(k)
        buf[:] = a[i:i + k]
        a[i:i + k] = buf * 2.0
