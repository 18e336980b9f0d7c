import appy


# SIGNATURE: f64[:]
@appy.jit
def f(a):
    #pragma parallel for transform(tag(i, l.7))
    for i in range(a.shape[0]):
        a[i] = 1.0
