import appy


@appy.jit
def f(a, N):
    s = 0
    for i in range(N):
        s += a[i]
    return s

# SIGNATURE: f64[:];int
# ERROR: type_change.py:8:9: error: `s` holds int values but is assigned a float64 here; appy needs one type per variable
