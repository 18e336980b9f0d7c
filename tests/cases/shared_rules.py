"""APPy's rules for `shared(...)`: a shared scalar the loop only reads is passed by
value; a plain assignment to a shared scalar inside the loop is visible after it (if
several iterations assign, which value wins is unspecified, so these tests assign from
one iteration only)."""
import numpy as np
import appy


# test: a:f64[n] k:int=n-1 | n=1,5,300
@appy.jit
def read_only_shared(a, k):
    scale = 2.5
    #pragma parallel for shared(scale)
    for i in range(a.shape[0]):
        a[i] = a[i] * scale


# test: a:f64[n] k:int=n-1 | n=1,6,1000
@appy.jit
def flag_from_one_iteration(a, k):
    found = -1.0
    #pragma parallel for shared(found)
    for i in range(a.shape[0]):
        if i == k:
            found = a[i]
    return found


# test: a:f64[n] | n=1,9,257
@appy.jit
def reduction_and_plain(a):
    s = 0.0
    last = 0
    #pragma parallel for shared(s, last)
    for i in range(a.shape[0]):
        s += a[i]
        if i == a.shape[0] - 1:
            last = i
    return s, last
