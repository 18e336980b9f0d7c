import appy


@appy.jit
def f(a, N):
    a[0] = True
# SIGNATURE: bool[:];int
