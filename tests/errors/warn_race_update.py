import appy


@appy.jit
def histogram(idx, hist, s, x, N):
    #pragma parallel for
    for i in range(N):
        hist[idx[i]] += 1
        s[0] = s[0] + x[i]

# SIGNATURE: i64[:];i64[:];f64[:];f64[:];int
