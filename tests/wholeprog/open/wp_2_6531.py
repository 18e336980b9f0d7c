import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"p","kind":"i","dims":["n"],"group":"I"},{"name":"A","kind":"f","dims":["m","n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float64","I":"int64"},"n":130,"m":3,"k":3,"x":["f64",0.3]},{"dtypes":{"F":"float32","I":"int32"},"n":130,"m":3,"k":-2,"x":["float",1.5]},{"dtypes":{"F":"float64","I":"int64"},"n":130,"m":2,"k":1,"x":["int",1]},{"dtypes":{"F":"float64","I":"int64"},"n":1,"m":3,"k":-4,"x":["f64",-2]}],"data_seed":206537}


@appy.jit
def f(a, p, A, n, m, k, x):
    #pragma simd
    for i in range(1, a.shape[0], 2):
        a[i] = np.floor(np.tanh(i))
    s0 = np.cos((k * x))
    #pragma simd
    for i in range(1, len(a)):
        p[i] = (i) % 1000
    return s0
