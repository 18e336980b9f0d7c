# wholeprog regression (found by fuzz.py --seed 3, program 18; known bug 1).
# Checks: a Python int raised to a negative int exponent is a float, as in Python:
# `2 ** k` with k = -2 is 0.25 (appy gave 1, i.e. integer power). Stored into a
# float32 array through an alias (`al1 = a`).
import numpy as np
import appy

# wholeprog-meta: {"params":[{"name":"a","kind":"f","dims":["n"],"group":"F"},{"name":"b","kind":"f","dims":["n"],"group":"F"},{"name":"p","kind":"i","dims":["n"],"group":"I"},{"name":"q","kind":"i","dims":["n"],"group":"I"},{"name":"A","kind":"f","dims":["m","n"],"group":"F"}],"sigs":[{"dtypes":{"F":"float32","I":"int32"},"n":130,"m":5,"k":-2,"x":["f32",-1.25]}],"data_seed":300027}


@appy.jit
def f(a, b, p, q, A, n, m, k, x):
    al1 = a
    al1[1] = 2 ** k
