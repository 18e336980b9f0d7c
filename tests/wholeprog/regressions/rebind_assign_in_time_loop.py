# wholeprog regression (found by fuzz.py --seed 3, program 25; known bug 2).
# Checks: `a = b` (one-way rebinding, an alias from then on) at the end of a time
# loop body: the first iteration writes the argument `a`, the second writes `b`.
import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"b","kind":"f","dims":["n"],"group":"F"},{"name":"p","kind":"i","dims":["n"],"group":"I"},{"name":"q","kind":"i","dims":["n"],"group":"I"}],"sigs":[{"dtypes":{"F":"float64","I":"int64"},"n":257,"m":2,"k":4,"x":["float",-0.5]}],"data_seed":300034}


@appy.jit
def f(a, b, p, q, n, m, k, x):
    for t in range(2):
        i = 0
        a[i] = x
        a = b
