import appy


@appy.jit
def f(a, N):
    #pragma parallel for
    for i in range(N):
        if a[i] < 0.0:
            break
        a[i] = 1.0
# SIGNATURE: f64[:];int
