"""Python's rule for `int ** int`: an int when the exponent is >= 0, a float when it is
negative (`2 ** -3 == 0.125`). Constant exponents give Python's value and type; an
exponent whose sign appy cannot tell is computed as a float64 where the result is used
as a float (`docs/SUBSET.md`, "Integer powers")."""
import numpy as np
import appy


# test: a:f64[n] k:int=0-3 d:int=2 | n=1,7,100
# test: a:f64[n] k:int=n-4 d:int=n-5 | n=1,7,64,100
@appy.jit
def pow_negative_exponents(a, k, d):
    for i in range(a.shape[0]):
        a[i] = a[i] * 2 ** k + 10 ** -2 + 2 ** -(d + 1)


# test: a:f32[n] k:int=n-9 | n=1,5,17
@appy.jit
def pow_into_float32(a, k):
    for i in range(a.shape[0]):
        a[i] = a[i] * 3 ** k + 2 ** -1


# test: a:f64[n] | n=4,9
@appy.jit
def pow_constants(a):
    x = 10 ** -2
    y = 2 ** 3
    z = (-2) ** -3
    w = 2 ** -(1 + 1)
    v = 7
    v **= 2
    u = 4
    u **= -1
    a[0] = x
    a[1] = y + z + w
    a[2] = v
    a[3] = u
    return x, y, z, w, v, u


# test: c:i64[n] a:f64[n] | n=1,8,40
@appy.jit
def pow_of_loop_variables(c, a):
    for j in range(c.shape[0] // 2):
        c[j] = 2 ** j
    for j in range(1, a.shape[0]):
        a[j] = 2 ** (j % 3) + a[j]


# test: a:f64[n] k:int=1-n | n=1,6,30
@appy.jit
def pow_float_uses(a, k):
    s = 0.0
    for i in range(a.shape[0]):
        s += 2 ** (k + i)
        a[i] = float(3 ** (k + i)) + np.exp(2 ** k) + 1 / 2 ** k
    return s


# test: c:i64[n] k:int=3 | n=1,9
@appy.jit
def pow_numpy_ints(c, k):
    for i in range(c.shape[0]):
        c[i] = c[i] ** k + c[i] ** 2 + np.power(c[i], k)
