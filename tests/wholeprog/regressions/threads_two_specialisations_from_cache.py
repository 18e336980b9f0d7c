# wholeprog regression (found by fuzz.py --seed 1, program 1, phase 3; related to known bug 0).
# Checks: the function is compiled for float64 and float32 arrays (phase 1, which
# fills the persistent cache), then imported again and called from two threads at
# once, one signature each, so that both specialisations are loaded from the
# persistent cache concurrently: the float64 call ran the float32 code (only half
# of row A[0] written; later heap corruption: SIGSEGV, `double free or
# corruption`, `malloc(): invalid size`).
import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"b","kind":"f","dims":["n"],"group":"F"},{"name":"c","kind":"f","dims":["n"],"group":"F"},{"name":"p","kind":"i","dims":["n"],"group":"I"},{"name":"q","kind":"i","dims":["n"],"group":"I"},{"name":"A","kind":"f","dims":["m","n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float64","I":"int64"},"n":97,"m":3,"k":2,"x":["int",-2]},{"dtypes":{"F":"float32","I":"int32"},"n":31,"m":13,"k":-2,"x":["float",-0.5]}]}


@appy.jit
def f(a, b, c, p, q, A, n, m, k, x):
    w0 = np.full(n, 3, dtype=np.int64)
    for i in range(0, m, 2):
        A[0] = 0
    acc4 = np.zeros(1)
    return w0, acc4
