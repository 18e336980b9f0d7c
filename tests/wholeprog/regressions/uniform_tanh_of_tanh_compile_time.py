# wholeprog regression (found by fuzz.py --device cpu --seed 2 --count 10000, program
# 8237: the worker hung).
# Checks: np.tanh of np.tanh of an element at a fixed index, in a parallel loop over i,
# compiles (in well under a second) and computes NumPy's values. Both tanh were expanded
# inline (appy-cpu-exp) on a value that is the same in every iteration, and LLVM's loop
# vectoriser walked every path through the nested expansion: it did not finish in
# minutes. Such uniform calls are now left to the C library.
import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"c","kind":"f","dims":["n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float64"},"n":97,"m":5,"k":-4,"x":["f64",0.75]},{"dtypes":{"F":"float64"},"n":1,"m":3,"k":-3,"x":["float",1.5]},{"dtypes":{"F":"float32"},"n":7,"m":2,"k":-2,"x":["f64",2.0]}],"data_seed":208243}


@appy.jit
def f(a, c, n, m, k, x):
    acc1 = np.zeros(1)
    acc1[0] = x * 0.5
    #pragma parallel for
    for i in range(n):
        a[i] = np.tanh((max(c[0], 1e-3) - np.tanh(acc1[0]))) + np.exp(np.exp(c[n - 1] * 0.01))
    return a
