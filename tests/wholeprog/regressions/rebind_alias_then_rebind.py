# wholeprog regression (found by fuzz.py --seed 3, program 24; known bug 2).
# Checks: an alias `w0 = q` of an int64 argument rebound to another argument
# (`tmp5 = p; w0 = tmp5`) inside a time loop whose trip count is `k + 1`.
import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"G"},{"name":"b","kind":"f","dims":["n"],"group":"F"},{"name":"p","kind":"i","dims":["n"],"group":"I"},{"name":"q","kind":"i","dims":["n"],"group":"I"}],"sigs":[{"dtypes":{"F":"float64","G":"float64","I":"int64"},"n":257,"m":1,"k":1,"x":["float",1.5]}],"data_seed":300033}


@appy.jit
def f(a, b, p, q, n, m, k, x):
    w0 = q
    for t in range(k + 1):
        i = 0
        w0[i] = i
        tmp5 = p
        w0 = tmp5
