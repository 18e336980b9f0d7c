import appy


@appy.jit
def prefix(a, out, N):
    #pragma parallel for
    for i in range(1, N):
        out[i] = out[i - 1] + a[i]

# SIGNATURE: f64[:];f64[:];int
