import appy


@appy.jit
def f(a, N):
    with open("x") as fh:
        pass
