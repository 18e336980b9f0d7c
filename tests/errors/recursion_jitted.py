import appy


@appy.jit
def fact(a, n):
    if n <= 1:
        a[0] = 1.0
    else:
        fact(a, n - 1)
        a[0] = a[0] * n
# SIGNATURE: f64[:];int
