import appy


@appy.jit
def f(a, N):
    s = 0.0
    #pragma parallel for
    for i in range(N):
        s += a[i]
    return s

# SIGNATURE: f64[:];int
# ERROR: data_sharing.py:9:9: error: scalar `s` is defined outside this parallel loop and assigned inside it; each worker would get its own copy and the value after the loop is undefined
