# wholeprog regression (found by fuzz.py --seed 7, program 21; new, seen after the
# fix of known bug 2).
# Checks: a local array from np.empty_like, swapped with an argument in a time loop
# (`a, w0 = w0, a`, twice, so w0 is the local array again) and returned: the process
# died of SIGABRT (`free(): double free detected in tcache 2`) at the call. With
# np.zeros_like instead of np.empty_like it passes.
import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"G"},{"name":"b","kind":"f","dims":["n"],"group":"F"},{"name":"p","kind":"i","dims":["n"],"group":"I"}],"sigs":[{"dtypes":{"F":"float64","G":"float64","I":"int64"},"n":257,"m":1,"k":3,"x":["f64",0.3]}],"data_seed":700042}


@appy.jit
def f(a, b, p, n, m, k, x):
    w0 = np.empty_like(a)
    #pragma parallel for
    for i in range(n):
        w0[i] = 2.0 * a[i]
    for t in range(2):
        a, w0 = w0, a
    return w0
