import numpy as np
import appy

@appy.jit
def increment_by_1(a):
    #pragma parallel for simd
    for i in range(a.shape[0]):
        a[i] += 1

# Create the input array
a = np.arange(10)

# Execute the function
increment_by_1(a)

# Inspect the result
print(a)  # [ 1  2  3  4  5  6  7  8  9 10]
