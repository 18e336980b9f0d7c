import appy


@appy.jit
def f(a, N):
    for x in a:
        pass
# SIGNATURE: f64[:];int
