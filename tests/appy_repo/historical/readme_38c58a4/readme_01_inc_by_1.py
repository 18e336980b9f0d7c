import numpy as np
import appy

@appy.jit
def inc_by_1(a):
    #pragma parallel for simd
    for i in range(a.shape[0]):
        a[i] += 1


a = np.arange(10)
inc_by_1(a)
print(a)  # Should print [ 1  2  3  4  5  6  7  8  9 10]
