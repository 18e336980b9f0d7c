"""The kernel of the call-overhead benchmark: three arrays and two scalars."""
import appy


@appy.jit
def axpby(a, b, c, s, t):
    #pragma parallel for simd
    for i in range(a.shape[0]):
        c[i] = s * a[i] + t * b[i]
