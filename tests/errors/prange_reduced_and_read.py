import appy


@appy.jit
def running_sum(a, s, out, N):
    for i in appy.prange(N):
        s[0] += a[i]
        out[i] = s[0]
# SIGNATURE: f64[:];f64[:];f64[:];int
