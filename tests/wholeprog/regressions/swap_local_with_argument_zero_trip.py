# wholeprog regression (found by fuzz.py --seed 7, program 139; new, same class as
# swap_empty_like_with_argument_and_return.py).
# Checks: a local array (np.ones_like) and an argument swapped inside a time loop that
# runs zero times (`range(0)`), then the local returned: the process died of SIGABRT
# (`free(): double free detected in tcache 2`).
import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"G"},{"name":"p","kind":"i","dims":["n"],"group":"I"},{"name":"q","kind":"i","dims":["n"],"group":"J"},{"name":"A","kind":"f","dims":["m","n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float32","G":"float32","I":"int32","J":"int32"},"n":1,"m":13,"k":-1,"x":["f64",0.3]}],"data_seed":700160}


@appy.jit
def f(a, p, q, A, n, m, k, x):
    w0 = np.ones_like(a)
    for t in range(0):
        a, w0 = w0, a
    return w0
