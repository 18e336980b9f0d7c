# wholeprog regression (found by fuzz.py --seed 4 --exclude rebind,intpow, program 66; new,
# same class as int32_right_shift_by_32_or_more.py).
# Checks: `q[i] >> 45` with q an int32 array, stored into another int32 array.
import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"b","kind":"f","dims":["n"],"group":"F"},{"name":"c","kind":"f","dims":["n"],"group":"F"},{"name":"p","kind":"i","dims":["n"],"group":"I"},{"name":"q","kind":"i","dims":["n"],"group":"I"}],"sigs":[{"dtypes":{"F":"float32","I":"int32"},"n":31,"m":5,"k":-3,"x":["float",-0.5]}],"data_seed":400078}


@appy.jit
def f(a, b, c, p, q, n, m, k, x):
    i = 0
    p[i] = q[i] >> 45
