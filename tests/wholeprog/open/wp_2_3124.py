import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"b","kind":"f","dims":["n"],"group":"F"},{"name":"p","kind":"i","dims":["n"],"group":"I"}],"sigs":[{"dtypes":{"F":"float64","I":"int64"},"n":97,"m":13,"k":2,"x":["f32",0.3]},{"dtypes":{"F":"float32","I":"int32"},"n":0,"m":3,"k":-3,"x":["f64",0.3]},{"dtypes":{"F":"float32","I":"int32"},"n":257,"m":13,"k":-1,"x":["int",-2]},{"dtypes":{"F":"float64","I":"int64"},"n":7,"m":5,"k":3,"x":["f32",0.3]}],"data_seed":203130}


@appy.jit
def f(a, b, p, n, m, k, x):
    al1 = b
    #pragma parallel for
    for i in range(n):
        b[i] = a[i]
    s0 = abs((k if not (k >= 2) else (-1)))
    r2 = 0.0
    #pragma parallel for shared(r2)
    for i in range(n):
        t3 = 0.0
        #pragma simd
        for j in range(m - 1, -1, -3):
            t3 += i
        a[i] = np.minimum(np.maximum(t3, -100.0), 100.0)
        r2 = max(r2, (i ** 1))
    for t in range(2):
        r4 = 0.0
        for i in appy.prange(0, n, 2):
            t5 = np.power((abs(0.5) ** 0.5), 3)
            a[i] = np.tanh((int(a[i]) - (s0 ** 0)))
            r4 += ((0 + i) * (0.1 % (-0.5)))
        if n > 5:
            #pragma parallel for
            for i in range(0, n, 3):
                t6 = (abs(i) * 0.5)
                b[i] = ((p[0] + k) + (3.0 - 1e-3))
    return r2
