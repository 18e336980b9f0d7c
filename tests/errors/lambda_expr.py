import appy


@appy.jit
def f(a, N):
    g = lambda x: x + 1
