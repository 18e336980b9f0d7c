import appy


@appy.jit
def biggest(a):
    best = -1
    for i in range(a.shape[0]):
        if a[i] > best:
            best = a[i]
    return best
# SIGNATURE: u8[:]
