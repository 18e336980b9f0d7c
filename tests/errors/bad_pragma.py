import appy


@appy.jit
def f(a, N):
    #pragma parallel fr
    for i in range(N):
        a[i] = 0.0

