# wholeprog regression (found by fuzz.py --seed 4 --exclude rebind,intpow, program 47; new).
# Checks: `>>` of an int32 value by 32..62 (NEP 50: the Python int shift amount is
# weak, so the shift is done in int32). NumPy defines it as the sign (-1 for a
# negative value, 0 otherwise); appy gave 0 for negative values (LLVM's ashr by
# >= the bit width is poison). Same in s4_66: `q[i] >> 45` of an int32 array.
import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"G"},{"name":"b","kind":"f","dims":["n"],"group":"F"},{"name":"c","kind":"f","dims":["n"],"group":"F"},{"name":"p","kind":"i","dims":["n"],"group":"I"},{"name":"A","kind":"f","dims":["m","n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float64","G":"float64","I":"int32"},"n":7,"m":13,"k":-1,"x":["float",1.5]}],"data_seed":400059}


@appy.jit
def f(a, b, c, p, A, n, m, k, x):
    i = 0
    c[i] = p[1] >> 40
