import appy


@appy.jit
def f(a, N):
    try:
        a[0] = 1.0
    except Exception:
        pass
