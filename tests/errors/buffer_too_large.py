import appy


# SIGNATURE: f64[:]
@appy.jit
def f(a):
    #pragma parallel for
    for i in range(0, a.shape[0], 8192):
        buf = appy.buffer(8192)
        buf[:] = a[i:i + 8192]
        a[i:i + 8192] = buf * 2.0
