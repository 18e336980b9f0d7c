import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"p","kind":"i","dims":["n"],"group":"I"},{"name":"q","kind":"i","dims":["n"],"group":"I"},{"name":"A","kind":"f","dims":["m","n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float64","I":"int64"},"n":31,"m":5,"k":-1,"x":["int",2]},{"dtypes":{"F":"float32","I":"int32"},"n":7,"m":2,"k":-1,"x":["float",-1.25]},{"dtypes":{"F":"float64","I":"int32"},"n":1,"m":1,"k":-1,"x":["f32",0.75]},{"dtypes":{"F":"float64","I":"int64"},"n":7,"m":2,"k":-2,"x":["int",-2]}],"data_seed":204746}


@appy.jit
def f(a, p, q, A, n, m, k, x):
    for t in range(1):
        r1 = 0.0
        r2 = 0
        #pragma parallel for simd shared(r1, r2)
        for i in range(1, n - 3):
            a[i] = (a[i] * 0.5 + (k % (-13))) / (1.0 + abs(a[i] * 0.5 + (k % (-13))))
            r1 += float(((-1) / 3.0))
            r2 += p[n - 1 - i]
        #pragma parallel for simd
        for i in range(2, n, 2):
            t3 = (abs((a[i] * a[i])) ** 0.5)
            if (a[i] // 3.0) != r2:
                a[i] = np.sin((-A[i % m, i]))
            elif -1.0 < k <= 1.0:
                a[i] = i
            else:
                a[i] = 0.1
        r4 = 0.0
        r5 = 0.0
        #pragma parallel for shared(r4, r5)
        for i in range(n - 1, -1, -1):
            if ((i * A[i % m, (i * 3 + 1) % n]) < (3.0 if not (A[i % m, n - 1] > A[i % m, n - 1 - i]) else x)) and (not (q[(i * 3 + 1) % n] == r1)):
                p[i] = (2 ** 1)
            elif not (i != 0.0):
                p[i] = (np.minimum((q[-1] + p[i]), (q[i] // (-5)))) % 1000
            else:
                p[i] = (((r2 << 3) << 1)) % (-997)
            a[i] = np.fmod(a[i] * 0.5 + 0.1, 50.0)
            r4 += np.minimum((abs(r1) ** 0.5), (A[m - 1, i // 2] // 2.0))
            r5 += (min(x, 0.5) ** 2)
        tmp6 = p
        p = q
        q = tmp6
    w0 = np.zeros(n, dtype=np.float32)
    #pragma parallel for
    for i in range(n):
        w0[i] = np.tanh(((A[i % m, -1] + i) // (-0.5)))
    w1 = np.ones(n, dtype=np.int64)
    #pragma parallel for
    for i in range(n):
        w1[i] = w1[i]
    if n > 0:
        w0[n - 1] = x
    #pragma simd
    for i in range(0, a.shape[0], 2):
        a[i] = (int(A[i % m, n - 1 - i]) % (-(abs((w1[0] << 10)) + 2)))
    #pragma simd
    for i in range(n - 1):
        a[i] = a[i]
    for i in appy.prange(0, n - 1, 2):
        t7 = (-np.log(a[i // 2]))
        p[i] = (p[i] // 2 + ((-2) ** 3)) % (-997)
    return w0, w1
