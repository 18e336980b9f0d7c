# wholeprog regression (found by fuzz.py --seed 3, program 23; known bug 2).
# Checks: rebinding array names in host code inside a time loop, `a, b = b, a`:
# the second iteration writes b[0] through the name `b`, which is then the
# argument `a`; appy wrote the wrong array.
import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"b","kind":"f","dims":["n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float64"},"n":97,"m":2,"k":-3,"x":["float",-1.25]}],"data_seed":300032}


@appy.jit
def f(a, b, n, m, k, x):
    for t in range(2):
        i = 0
        b[i] = 0
        a, b = b, a
