# wholeprog regression (found by fuzz.py --seed 3, program 33; known bug 2).
# Checks: the three-statement swap `tmp = p; p = q; q = tmp` of int64 arrays in a
# time loop, then a write through the swapped name.
import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"p","kind":"i","dims":["n"],"group":"I"},{"name":"q","kind":"i","dims":["n"],"group":"I"},{"name":"A","kind":"f","dims":["m","n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float64","I":"int64"},"n":31,"m":5,"k":0,"x":["f32",0.75]}],"data_seed":300042}


@appy.jit
def f(a, p, q, A, n, m, k, x):
    for t in range(2):
        tmp4 = p
        p = q
        q = tmp4
        i = 0
        q[i] = 2
