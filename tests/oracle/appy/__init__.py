"""A NumPy-meaning shim of `appy` for the test oracle: the annotated source is valid
Python whose meaning is the sequential program (pragmas are comments)."""
import numpy as np

MVL = 256


def jit(fn=None, **options):
    if fn is None:
        return lambda f: f
    return fn


shader = jit
cpu_shader = jit
prange = range


def vidx(start, length, bound):
    import builtins
    return np.arange(start, builtins.min(start + length, bound))


def buffer(size, dtype=np.float64):
    return np.empty(size, dtype=dtype)


def where(c, x, y):
    return np.where(c, x, y)


def atomic_add(a, index, value):
    a[index] += value


def atomic_max(a, index, value):
    a[index] = max(a[index], value)


def atomic_min(a, index, value):
    a[index] = min(a[index], value)


def mv(A, x):
    """Matrix-vector product (seed 001 Listing 7/8)."""
    return A @ x


def transpose(a):
    return np.transpose(a)


# The element-wise functions the APPy paper's listings import from appy
# (`from appy import exp, sqrt`): NumPy's.
for _name in ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "sin", "cos",
              "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
              "arctanh", "floor", "ceil", "trunc", "arctan2", "hypot", "copysign", "fmod", "power",
              "fabs", "sign", "square", "isnan", "isinf", "isfinite", "maximum", "minimum", "clip"]:
    globals()[_name] = getattr(np, _name)


def erf(x):
    import scipy.special
    return scipy.special.erf(x)


def erfc(x):
    import scipy.special
    return scipy.special.erfc(x)
