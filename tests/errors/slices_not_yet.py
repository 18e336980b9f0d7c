import appy


@appy.jit
def f(b, M, N):
    b[:M, :N] = 0.0
# SIGNATURE: f64[:,:];int;int
