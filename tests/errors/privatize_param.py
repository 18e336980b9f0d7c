import appy


# SIGNATURE: f64[:];f64[:]
@appy.jit
def f(a, t):
    #pragma parallel for transform(privatize(t))
    for i in range(a.shape[0]):
        t[i] = 2.0 * a[i]
        a[i] = t[i] + 1.0
