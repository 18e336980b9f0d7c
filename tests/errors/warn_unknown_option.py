import appy


@appy.jit(fast_math=True)
def f(a, N):
    a[0] = 1.0
# SIGNATURE: f64[:];int
