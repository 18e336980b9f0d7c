import appy


@appy.jit
def histogram(keys, counts):
    #pragma parallel for
    for i in range(keys.shape[0]):
        #pragma atomic
        counts[keys[i]] += 1
# SIGNATURE: i64[:];u16[:]
