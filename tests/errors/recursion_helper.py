import appy


def fill(a, n):
    if n > 0:
        a[n - 1] = 1.0
        fill(a, n - 1)


@appy.jit
def f(a, N):
    fill(a, N)
# SIGNATURE: f64[:];int
