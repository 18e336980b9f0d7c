import appy


@appy.jit
def f(a, s, N):
    #pragma parallel for
    for i in range(N):
        #pragma atomic
        s[0] = a[i]
# SIGNATURE: f64[:];f64[:];int
