import appy


@appy.jit
def f(a, N):
    for i in range(N)
        a[i] = 1.0
