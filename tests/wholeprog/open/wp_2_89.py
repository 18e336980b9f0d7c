import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float64"},"n":257,"m":2,"k":-1,"x":["float",0.75]},{"dtypes":{"F":"float32"},"n":97,"m":1,"k":-3,"x":["float",2.0]},{"dtypes":{"F":"float32"},"n":0,"m":5,"k":3,"x":["float",1.5]},{"dtypes":{"F":"float64"},"n":2,"m":3,"k":-4,"x":["float",-0.5]}],"data_seed":200095}


@appy.jit
def f(a, n, m, k, x):
    r1 = 0.0
    r2 = 0.0
    #pragma parallel for shared(r1, r2)
    for i in range(n):
        if i % 4 == 1:
            a[i] = np.tanh(((i * k) - (i - k)))
        elif x == i:
            a[i] = (i / (abs(((-0.5) // 3.0)) + 0.5))
        else:
            a[i] = k
        r1 = max(r1, ((x - x) + (a[i] // 2.0)))
        r2 += np.floor((k - a[i]))
    if n > 0:
        a[n // 2] = k
    r2 = r2 * 0.5 + (abs(x) ** 0.5)
    for i in appy.prange(n):
        a[i] = ((i // (-(abs((-1)) + 2))) / (abs((-i)) + 0.5))
    return r2, a
