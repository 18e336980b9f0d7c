import appy


@appy.jit
def f(a, N):
    #pragma parallel fr
    for i in range(N):
        a[i] = 0.0

# ERROR: bad_pragma.py:6:5: error: unknown pragma `parallel fr`; expected one of: parallel for, parallel for simd, simd, sequential for, atomic, or a tensor pragma like `:N=>parallel`
