import appy


@appy.jit
def inverse(c, N):
    for i in range(N):
        c[i] = c[i] ** -1
# SIGNATURE: i64[:];int
