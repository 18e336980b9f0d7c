import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"b","kind":"f","dims":["n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float64"},"n":97,"m":13,"k":1,"x":["f32",2.0]},{"dtypes":{"F":"float32"},"n":2,"m":2,"k":-2,"x":["f64",1.5]},{"dtypes":{"F":"float32"},"n":97,"m":13,"k":3,"x":["int",-2]},{"dtypes":{"F":"float64"},"n":0,"m":13,"k":3,"x":["f32",-0.5]}],"data_seed":203474}


@appy.jit
def f(a, b, n, m, k, x):
    r1 = 0.0
    r2 = 0.0
    #pragma parallel for shared(r1, r2)
    for i in range(n - 1):
        a[i] += (i * b[i])
        b[i] = np.ceil(np.tanh(a[i]))
        r1 += ((2.0 * b[i]) * (-(-1.75)))
        r2 = max(r2, a[i])
    a *= 0.5
    r3 = 0.0
    #pragma parallel for shared(r3)
    for i in range(2, n, 3):
        a[i] = np.minimum(np.maximum(a[i] * 0.5 + r1, -100.0), 100.0)
        r3 += ((i ^ i) + (-b[i - 1]))
    return a
