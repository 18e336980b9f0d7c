import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"b","kind":"f","dims":["n"],"group":"F"},{"name":"c","kind":"f","dims":["n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float64"},"n":97,"m":1,"k":0,"x":["f32",1.5]},{"dtypes":{"F":"float32"},"n":0,"m":2,"k":-1,"x":["float",0.75]},{"dtypes":{"F":"float64"},"n":97,"m":13,"k":2,"x":["f32",1.5]},{"dtypes":{"F":"float64"},"n":0,"m":1,"k":-1,"x":["f32",0.75]}],"data_seed":206486}


@appy.jit
def f(a, b, c, n, m, k, x):
    #pragma parallel for
    for i in range(0, n - 1, 2):
        t1 = np.sqrt(abs((c[i // 2] + (-5))))
        if i % 2 == 0:
            b[i] = (((-1.75) + k) % (-0.5))
        else:
            b[i] = ((abs((a[(i * 3 + 1) % n] * a[i // 2])) + 1.0) ** (-2))
    r2 = 0.0
    r3 = 0.0
    for i in appy.prange(a.shape[0] - 1, -1, -1):
        t4 = (i & i)
        b[i] = abs((x / (abs(a[i]) + 0.5)))
        a[i] += (b[i] * a[i])
        r2 += x
        r3 = max(r3, ((k * (-0.5)) * (t4 * t4)))
    for t in range(1):
        #pragma parallel for
        for i in range(0, len(a), 3):
            if -1.0 < abs(i) <= 1.0:
                b[i] = (-((-1) / (1.0 + c[-1] * c[-1])))
            elif (-1.75) == x:
                b[i] = ((i * k) % (-3))
            if max(i, k) <= 1.5:
                a[i] = (abs((k * x)) ** 0.5)
            else:
                a[i] = (-i)
        tmp5 = c
        c = b
        b = tmp5
        for i in appy.prange(1, n):
            t6 = max(x, (k / (abs(k) + 1)))
            t7 = 0.0
            #pragma simd
            for j in range(1, m, 2):
                t7 += r3
            a[i] = np.fmod(t7, 50.0)
            b[i] = np.minimum((k * (-100)), c[n - 1])
    for i in appy.prange(a.shape[0]):
        t8 = np.minimum(np.power(r2, 3), (c[i // 2] % 2.0))
        b[i] = np.minimum(np.maximum(((-100) * c[i // 2]), -100.0), 100.0)
        if np.cos(c[i]) > t8:
            a[i] = np.fmod(((b[i] / 2.0) if (i + k) != (i + 0.1) else np.power(b[i], 3)), 50.0)
        elif 0 < r2 <= 3:
            a[i] = np.abs((k / (abs(k) + 1)))
        else:
            a[i] = r2
    for i in range(1, n):
        a[i] = np.tanh(a[i - 1] * 0.5 + (i + x))
    r9 = 0.0
    r10 = 0.0
    acc11 = np.zeros(1)
    #pragma parallel for shared(r9, r10)
    for i in range(0, n, 2):
        t12 = 0.0
        for j in range(1, m - 3, 3):
            t12 += (min(i, k) if (k - b[i]) <= b[i // 2] else int(a[i // 2]))
        c[i] = np.fmod(t12, 50.0)
        r9 += abs((-(-2)))
        r10 = min(r10, c[i])
        #pragma atomic
        acc11[0] += a[-1]
    w0 = np.ones(n, dtype=np.int64)
    #pragma parallel for
    for i in range(n):
        w0[i] = max(min((int(c[i // 2]) & 7), 1000), -1000)
    return w0, r3, acc11
