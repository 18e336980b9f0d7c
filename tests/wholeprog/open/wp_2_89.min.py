import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float64"},"n":257,"m":2,"k":-1,"x":["float",0.75]}],"data_seed":200095}


@appy.jit
def f(a, n, m, k, x):
    r2 = 0.0
    for i in range(n):
        a[i] = np.tanh(i * k)
        r2 += np.floor((k - a[i]))
    return r2
