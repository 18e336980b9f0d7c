import appy


@appy.jit
def f(a, N):
    #pragma parallel for private(x)
    for i in range(N):
        a[i] = 0.0
