import appy


@appy.jit
def f(a, s, N):
    for i in appy.prange(N):
        s[0] = s[0] / 2.0 + a[i]
# SIGNATURE: f64[:];f64[:];int
