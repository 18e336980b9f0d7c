import appy


# SIGNATURE: f64[:]
@appy.jit
def f(a):
    buf = appy.buffer(8)
    buf[:] = a[:8]
    a[:8] = buf * 2.0
