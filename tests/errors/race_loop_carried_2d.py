import appy


@appy.jit
def rows(a, M, N):
    #pragma parallel for
    for i in range(M - 1):
        for j in range(N):
            a[i + 1, j] = a[i, j] * 2.0

# SIGNATURE: f64[:,:];int;int
