"""Host conveniences: `continue`, parameter annotations, calls to other functions of the
file (inlined), decorator options appy does not use, misplaced loop pragmas."""
import numpy as np
import appy
from appy import jit


def scale(x, s):
    return x * s + 1.0


def row_norm(A, i):
    """Not jitted: inlined where it is called."""
    s = 0.0
    for j in range(A.shape[1]):
        s += A[i, j] * A[i, j]
    return np.sqrt(s)


@appy.jit
def clip_rows(A, out):
    # A jitted function calling another one.
    #pragma parallel for
    for i in range(A.shape[0]):
        out[i] = min(row_norm(A, i), 2.0)


def fill(a, v):
    a[:] = v


# test: a:f64[n] b:f64[n] | n=1,7,256,1000
@appy.jit
def skip_negative(a, b):
    #pragma parallel for
    for i in range(a.shape[0]):
        if a[i] < 0:
            continue
        b[i] = np.sqrt(a[i])


# test: a:f64[n] b:f64[n] | n=1,13,300
@appy.jit
def continue_in_branches(a, b):
    for i in range(a.shape[0]):
        if a[i] > 0.5:
            b[i] = 1.0
            continue
        elif a[i] < -0.5:
            if i % 2 == 0:
                continue
            b[i] = -1.0
        b[i] += 10.0


# test: a:f64[n] b:f64[n] n:int=n | n=1,9,500
@appy.jit(auto_simd=True, backend="triton", dump_code=False)
def annotated(a: np.ndarray, b, n: int) -> None:
    x: float = 2.0
    y: float
    #pragma parallel for simd
    for i in range(n):
        b[i] = scale(a[i], x)


# test: A:f64[m,n] out:f64[m] | m=1,5,40 n=1,7,33
@appy.jit
def calls_with_statements(A, out):
    #pragma parallel for
    for i in range(A.shape[0]):
        out[i] = row_norm(A, i) + scale(1.0, 2.0)


# test: A:f64[m,n] out:f64[m] | m=1,4,17 n=1,9
@jit
def calls_jitted(A, out):
    clip_rows(A, out)


# test: a:f64[n] | n=1,10,100
@appy.jit
def call_statement(a):
    fill(a, 3.5)
    a[0] = scale(a[0], 2.0)


# test: a:f64[n] b:f64[n] | n=1,64
@appy.jit
def misplaced_pragma(a, b):
    #pragma parallel for
    k = 2.0
    for i in range(a.shape[0]):
        b[i] = a[i] * k
