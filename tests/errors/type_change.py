import appy


@appy.jit
def f(a, N):
    x = a
    x = 1.0
    return x

# SIGNATURE: f64[:];int
# ERROR: type_change.py:7:5: error: `x` is an array; it cannot be rebound to a scalar
