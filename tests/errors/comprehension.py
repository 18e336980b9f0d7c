import appy


@appy.jit
def f(a, N):
    b = [a[i] for i in range(N)]
