@jit
def foo(a):
     for i in prange(a.shape[0]):
            for j in range(a.shape[1]):
                a[j] += b[i,j]
