import appy


@appy.jit
def f(a, N):
    #pragma parallel for
    for i in range(N):
        a[i] = 1.0

# SIGNATURE: f64[:,:];int
