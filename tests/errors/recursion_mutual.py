import appy


def even(a, n):
    if n > 0:
        odd(a, n - 1)
    a[0] += 1.0


def odd(a, n):
    if n > 0:
        even(a, n - 1)
    a[0] += 2.0


@appy.jit
def f(a, N):
    even(a, N)
# SIGNATURE: f64[:];int
