import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"b","kind":"f","dims":["n"],"group":"F"},{"name":"c","kind":"f","dims":["n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float64"},"n":97,"m":5,"k":-4,"x":["f64",0.75]},{"dtypes":{"F":"float32"},"n":1,"m":3,"k":-3,"x":["float",1.5]},{"dtypes":{"F":"float64"},"n":7,"m":2,"k":-2,"x":["f64",2.0]},{"dtypes":{"F":"float64"},"n":2,"m":2,"k":-3,"x":["f64",0.75]}],"data_seed":208243}


@appy.jit
def f(a, b, c, n, m, k, x):
    acc1 = np.zeros(1)
    #pragma parallel for
    for i in range(1, n - 1):
        t2 = 0.0
        for j in range(0, m - 1, 2):
            t2 += ((k | i) * (k + b[i - 1]))
        a[i] = np.minimum(np.maximum(t2, -100.0), 100.0)
        #pragma atomic
        acc1[0] += np.ceil(a[i])
    for t in range(k % 3 + 1):
        r3 = 0.0
        #pragma parallel for shared(r3)
        for i in range(n - 1):
            a[i] = np.tanh((max(c[0], 1e-3) - np.tanh(acc1[0])))
            r3 += c[n - 1]
        tmp4 = b
        b = c
        c = tmp4
        for i in appy.prange(n - 1 - 3, -1, -1):
            t5 = (abs(i) / (1.0 + (a[i] - i) * (a[i] - i)))
            t6 = 0.0
            for j in range(1, m):
                t6 += 0.1
            a[i] = t6
            if (k ** 2) != c[i]:
                c[i] = (b[i] % 0.75)
            else:
                c[i] = (((-5) - t5) - (x // 0.75))
    #pragma sequential for
    for i in range(1, n):
        b[i] = np.tanh(b[i - 1] * 0.5 + (-acc1[0]))
    if k > 0:
        if x < 0.5:
            #pragma sequential for
            for i in range(1, n):
                b[i] = (b[i - 1] * 0.5 + (acc1[0] if not (x == k) else x)) / (1.0 + abs(b[i - 1] * 0.5 + (acc1[0] if not (x == k) else x)))
        else:
            if n > 0:
                b[-1] = np.minimum(np.maximum((a[0] - acc1[0]), -100.0), 100.0)
    elif k < -2:
        s0 = (x * (1.5 - acc1[0]))
    for t in range(3):
        r7 = 0
        r8 = 0.0
        #pragma parallel for shared(r7, r8)
        for i in range(n):
            t9 = 3.0
            if (i % 5) > 1e-3:
                c[i] = (c[i] % (-0.5))
            else:
                c[i] = (abs((acc1[0] / (1.0 + (-1) * (-1)))) ** 0.5)
            if t9 < b[(i * 3 + 1) % n]:
                r7 += (i | i)
            r8 += ((i / 64) / (-(abs((a[-1] * 0.5)) + 1.0)))
        for i in appy.prange(n):
            if 0 < (0.0 / 2.0) <= 3:
                a[i] = ((i + i) / (i * i + 1))
            else:
                a[i] = b[(i * 3 + 1) % n]
        r10 = 0.0
        for i in appy.prange(len(a) - 1 - 1, -1, -3):
            b[i] = np.minimum(np.maximum(b[i] * 0.5 + (r7 - i), -100.0), 100.0)
            r10 = min(r10, (r7 * ((-3) % 7)))
        b, a = a, b
    return a
