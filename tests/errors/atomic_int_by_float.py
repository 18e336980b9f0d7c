import appy


@appy.jit
def f(a, c, N):
    for i in appy.prange(N):
        c[0] += a[i]
# SIGNATURE: f64[:];i64[:];int
