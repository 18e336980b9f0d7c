import appy


@appy.jit
def f(a, N):
    i = 0
    while i < N:
        i += 1

