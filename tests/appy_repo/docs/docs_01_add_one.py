import numpy as np
from appy import jit, prange

@jit
def add_one(a):
     for i in prange(a.shape[0]):
          a[i] += 1

a = np.zeros(10)
add_one(a)

# a is now [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
