import appy


@appy.jit
def f(a, N):
    #pragma parallel for
    for i in range(N):
        t = a[i]
    return t

# SIGNATURE: f64[:];int
# ERROR: private_after.py:9:12: error: `t` is private to the loop at line 7, column 5; its value is not available after the loop
