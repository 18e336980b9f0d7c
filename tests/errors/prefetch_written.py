import appy


# SIGNATURE: f64[:];f64[:]
@appy.jit
def f(a, b):
    #pragma parallel for simd transform(prefetch(a))
    for i in range(a.shape[0]):
        b[i] = a[i] * a[i]
        a[i] = 0.5 * b[i]
