import appy


@appy.jit
def f(a, N):
    #pragma parallel for
    for i in range(N):
        a[i] = 1.0

# SIGNATURE: f64[:,:];int
# ERROR: rank_mismatch.py:8:9: error: array has 2 dimension(s) but 1 index(es) were given; appy needs one index per dimension
