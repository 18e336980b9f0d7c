import appy


# SIGNATURE: f64[:,:,:];f64[:]
@appy.jit
def f(a, out):
    #pragma parallel for transform(reorder(j, k))
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                s += a[i, j, k]
        out[i] = s
