import appy


@appy.jit
def f(a, N):
    i = 0
    while i < N:
        i += 1

# ERROR: while_loop.py:7:5: error: `while` loops are not supported in APPy functions
