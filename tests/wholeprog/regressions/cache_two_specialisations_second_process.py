# wholeprog regression (found by fuzz.py --seed 5 --exclude rebind,intpow, program 9, phase 2;
# known bug 0).
# Checks: the function is compiled for float32 and float64 arrays in one process
# (phase 1, which fills the persistent cache); a second process with the same
# APPY_CACHE_DIR loads both specialisations from the cache and calls them (float64
# first): the float32 call computed garbage (-1.27e-33, 0.0), other programs of this
# class died of SIGSEGV or an OpenMP assertion (kmp_barrier.cpp(1024)).
import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"b","kind":"f","dims":["n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float32"},"n":97,"m":13,"k":-3,"x":["f64",-1.25]},{"dtypes":{"F":"float64"},"n":2,"m":5,"k":4,"x":["float",-0.5]}],"data_seed":500024}


@appy.jit
def f(a, b, n, m, k, x):
    al1 = a
    #pragma parallel for
    for i in range(n):
        al1[i] = b[i]
    for t in range(3):
        for i in appy.prange(2, n):
            a[i] = al1[i]
    w0 = np.ones(n, dtype=np.int64)
    w1 = np.full(n, 1.5)
    r3 = 0
    for i in appy.prange(n):
        t4 = al1[(i * 3 + 1) % n]
        r3 += (k % 2)
