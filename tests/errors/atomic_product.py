import appy


@appy.jit
def product(a, s, N):
    for i in appy.prange(N):
        s[0] *= a[i]
# SIGNATURE: f64[:];f64[:];int
