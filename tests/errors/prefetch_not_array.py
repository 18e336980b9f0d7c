import appy


# SIGNATURE: f64[:];f64
@appy.jit
def f(a, s):
    #pragma parallel for simd transform(prefetch(s))
    for i in range(a.shape[0]):
        a[i] = s * a[i]
