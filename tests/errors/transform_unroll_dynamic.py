import appy


# SIGNATURE: f64[:,:];f64[:]
@appy.jit
def f(a, out):
    #pragma parallel for transform(tag(j, unr))
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j]
        out[i] = s
