@jit
def foo(a, b):
     for i in prange(a.shape[0]):
            for j in range(a.shape[1]):
                a[i] += b[i,j]
