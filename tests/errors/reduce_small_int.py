import appy


@appy.jit
def total(a):
    s = a[0]
    #pragma parallel for shared(s)
    for i in range(1, a.shape[0]):
        s += a[i]
    return s
# SIGNATURE: i16[:]
