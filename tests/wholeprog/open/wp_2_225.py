import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"b","kind":"f","dims":["n"],"group":"F"},{"name":"p","kind":"i","dims":["n"],"group":"I"},{"name":"q","kind":"i","dims":["n"],"group":"I"}],"sigs":[{"dtypes":{"F":"float64","I":"int64"},"n":97,"m":1,"k":3,"x":["int",-1]},{"dtypes":{"F":"float32","I":"int32"},"n":97,"m":13,"k":-1,"x":["f64",-1.25]},{"dtypes":{"F":"float32","I":"int32"},"n":31,"m":13,"k":-1,"x":["f64",0.3]},{"dtypes":{"F":"float64","I":"int64"},"n":7,"m":5,"k":3,"x":["int",1]}],"data_seed":200231}


@appy.jit
def f(a, b, p, q, n, m, k, x):
    if n > 0:
        p[n // 2] = q[n - 1]
    for t in range(1):
        r1 = 0.0
        r2 = 0.0
        #pragma parallel for shared(r1, r2)
        for i in range(2, n - 1, 2):
            t3 = 64
            if -1.0 < np.tanh(p[i]) <= 1.0:
                p[i] = (((q[i] - i) - (-100))) % 1000
            else:
                p[i] = ((t3 ** 0) + t3)
            r1 += ((k if not (3.0 < x) else q[i]) - p[i])
            r2 += (q[n - 1] + (p[i] << 0))
        r4 = 0
        #pragma parallel for shared(r4)
        for i in range(n - 1):
            b[i] = abs(((-100) & 7))
            if not (1.5 >= b[i]):
                r4 += k
        tmp5 = p
        p = q
        q = tmp5
    s0 = x
    if k % 2 == 0:
        for i in range(1, n):
            b[i] = np.fmod(b[i - 1] * 0.5 + (-i), 50.0)
    elif k < -2:
        if x < 0.5:
            if n > 0:
                p[n - 1] = (11 - (-100))
        elif k < -2:
            if n > 0:
                p[n - 1] = (k * k)
    #pragma simd
    for i in range(0, n - 1, 3):
        b[i] = p[0]
    s1 = ((k - s0) + k)
    s2 = np.sum(q)
    return s0
