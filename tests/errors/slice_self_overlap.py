import appy


@appy.jit
def f(a, N):
    a[1:N] = 0.5 * (a[:N-1] + a[1:N])
# SIGNATURE: f64[:];int
