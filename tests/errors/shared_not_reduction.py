import appy


@appy.jit
def f(a, N):
    s = 0.0
    #pragma parallel for shared(s)
    for i in range(N):
        s = a[i]
    return s

# SIGNATURE: f64[:];int
# ERROR: shared_not_reduction.py:9:9: error: `s` is listed in shared(...) but is not updated by a single reduction operator (+, *, max, min) in this loop
